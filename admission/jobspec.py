"""The Job rules that read only the Job: what Volcano's job webhook refuses and the CRD's schema
and CEL rules cannot express.

On CREATE: the tasks' `dependsOn` form a DAG over the job's own tasks (a name that is no task
of the job can never be met, so it is refused with the cycle's reason); every plugin is one
Caldera runs; the mpi plugin's master task exists; every volume has its own `mountPath` and
either a `volumeClaim` to create or the `volumeClaimName` of an existing claim (Volcano's
validateIO); a task with a partition policy that sets `minPartitions` has `minAvailable`
equal to `minPartitions * partitionSize` when it sets one (Volcano's validatePartitionPolicy;
its other checks, sizes above zero, replicas = totalPartitions * partitionSize and at most one
tier limit in the partition's networkTopology, are the CRD's schema and CEL rules). On UPDATE:
only what Volcano lets change may change: `minAvailable`, `priorityClassName`, and each task's
`replicas` and `minAvailable`, still consistent with each other and with the task's partitions;
and the controller's one write, a generated claim name filled in where a `volumeClaim` volume
had none. Metadata and status are not the spec: labels, annotations and finalizers
change freely.

Pure: every function takes the raw camelCase object as the apiserver sends it and returns
messages that start with the field they are about.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from models import goflags, plugins
from models.vcjob import UPDATABLE_JOB, UPDATABLE_TASK

# A PVC name: a DNS-1123 subdomain of at most 253 characters (ValidatePersistentVolumeName).
_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_RULE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[object]:
    return value if isinstance(value, list) else []


def _tasks(job: Mapping[str, object]) -> list[Mapping[str, object]]:
    return [_mapping(t) for t in _sequence(_mapping(job.get("spec")).get("tasks"))]


def _name(task: Mapping[str, object]) -> str:
    name = task.get("name")
    return name if isinstance(name, str) else ""


def _depends_on(task: Mapping[str, object]) -> list[str]:
    names = _sequence(_mapping(task.get("dependsOn")).get("name"))
    return [n for n in names if isinstance(n, str)]


def dependency_problems(job: Mapping[str, object]) -> list[str]:
    """Each dependsOn name is another task of the job, and the dependencies have no cycle."""
    tasks = _tasks(job)
    names = [_name(t) for t in tasks]
    known = set(names)
    problems = []
    for i, task in enumerate(tasks):
        for dep in _depends_on(task):
            if dep == names[i]:
                problems.append(f'spec.tasks[{i}].dependsOn.name: task "{dep}" depends on itself')
            elif dep not in known:
                problems.append(
                    f'spec.tasks[{i}].dependsOn.name: "{dep}" is not a task of this job, so '
                    f'task "{names[i]}" could never start'
                )
    if problems:
        return problems
    cycle = _cycle({names[i]: _depends_on(t) for i, t in enumerate(tasks)}, names)
    if cycle is None:
        return []
    first = names.index(cycle[0])
    path = " → ".join(f'"{n}"' for n in cycle)
    return [
        f"spec.tasks[{first}].dependsOn.name: the tasks' dependencies form a cycle ({path}), "
        "so none of them could start: dependsOn must form a directed acyclic graph"
    ]


def _cycle(edges: Mapping[str, Sequence[str]], order: Sequence[str]) -> list[str] | None:
    """A cycle of `task → the tasks it depends on`, from the first task in spec order on it."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in edges.get(node, ()):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found is not None:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in order:
        if start not in state:
            found = visit(start)
            if found is not None:
                return found
    return None


def plugin_problems(job: Mapping[str, object]) -> list[str]:
    """Every plugin is one Caldera runs; the mpi plugin's master task is a task of the job."""
    spec = _mapping(job.get("spec"))
    named = _mapping(spec.get("plugins"))
    runs = ", ".join(sorted(plugins.IMPLEMENTED))
    problems = []
    for name in sorted(named):
        if name in plugins.IMPLEMENTED:
            continue
        if name in plugins.VOLCANO_ONLY:
            problems.append(
                f'spec.plugins: plugin "{name}" is one of Volcano\'s that Caldera does not run '
                f"yet (it runs {runs})"
            )
        else:
            problems.append(f'spec.plugins: unable to find job plugin "{name}" (plugins: {runs})')
    if plugins.MPI in named and plugins.MPI in plugins.IMPLEMENTED:
        master = mpi_master(named[plugins.MPI])
        if master not in {_name(t) for t in _tasks(job)}:
            problems.append(
                f'spec.plugins.mpi: the mpi master task "{master}" is not a task of this job'
            )
    return problems


def mpi_master(arguments: object) -> str:
    """The mpi plugin's master task, read from its arguments as the plugin reads them."""
    args = [a for a in _sequence(arguments) if isinstance(a, str)]
    options, _ = goflags.parse(plugins.MpiOptions(), args)
    return options.master


def _volumes(spec: Mapping[str, object]) -> list[Mapping[str, object]]:
    return [_mapping(v) for v in _sequence(spec.get("volumes"))]


def _claim_name_problem(field: str, name: object) -> str | None:
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.match(name):
        return f'{field}: Invalid value: "{name}": {_SUBDOMAIN_RULE}'
    return None


def volume_problems(job: Mapping[str, object]) -> list[str]:
    """Volcano's validateIO: a mountPath each, none twice; a claim to create or one to use,
    not both; a claim name that can name a PVC."""
    problems = []
    seen: dict[object, int] = {}
    for i, volume in enumerate(_volumes(_mapping(job.get("spec")))):
        here = f"spec.volumes[{i}]"
        path = volume.get("mountPath")
        if not path:
            problems.append(f"{here}.mountPath: mountPath is required")
        elif path in seen:
            problems.append(
                f'{here}.mountPath: duplicated mountPath "{path}" (spec.volumes[{seen[path]}] '
                "mounts there too)"
            )
        else:
            seen[path] = i
        name, claim = volume.get("volumeClaimName"), volume.get("volumeClaim")
        if claim is None and not name:
            problems.append(f"{here}: either volumeClaim or volumeClaimName must be specified")
        elif claim is not None and name:
            problems.append(
                f"{here}.volumeClaimName: conflict: to use an existing PVC give only "
                "volumeClaimName; to create a new PVC give only volumeClaim"
            )
        elif name and (problem := _claim_name_problem(f"{here}.volumeClaimName", name)):
            problems.append(problem)
    return problems


def partition_problems(job: Mapping[str, object]) -> list[str]:
    """Volcano's validatePartitionPolicy, the part the CRD cannot say: with `minPartitions`
    set (above 0), a task's own `minAvailable`, if given, is `minPartitions * partitionSize`
    (without one it defaults to that number)."""
    problems = []
    for i, task in enumerate(_tasks(job)):
        partition = _mapping(task.get("partitionPolicy"))
        minimum, size = _int(partition.get("minPartitions")), _int(partition.get("partitionSize"))
        given = _int(task.get("minAvailable"))
        if not minimum or size is None or given is None or given == minimum * size:
            continue
        problems.append(
            f"spec.tasks[{i}].minAvailable: 'minAvailable' ({given}) is not equal to "
            f"minPartitions*partitionSize ({minimum * size}) in task {_name(task)!r}"
        )
    return problems


def create_problems(job: Mapping[str, object]) -> list[str]:
    return [
        *dependency_problems(job),
        *plugin_problems(job),
        *volume_problems(job),
        *partition_problems(job),
    ]


def update_problems(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    """Only minAvailable, priorityClassName and the tasks' replicas and minAvailable change,
    and the new numbers still fit together (Volcano's validateJobUpdate)."""
    before, after = _mapping(old.get("spec")), _mapping(new.get("spec"))
    old_tasks, new_tasks = _tasks(old), _tasks(new)
    if len(old_tasks) != len(new_tasks):
        return ["spec.tasks: job updates may not add or remove tasks"]
    problems = [*_numbers(after, new_tasks), *_claim_name_changes(before, after)]
    # Volcano checks the partitions on every update; a job stored before this check may break
    # it already, and is not held to it until the update breaks it anew.
    problems += [p for p in partition_problems(new) if p not in partition_problems(old)]
    before, after = _claims_blanked(before), _claims_blanked(after)
    fixed = {*before, *after} - {*UPDATABLE_JOB, "tasks"}
    changed = sorted(k for k in fixed if before.get(k) != after.get(k))
    for i, (was, now) in enumerate(zip(old_tasks, new_tasks, strict=True)):
        changed += sorted(
            f"tasks[{i}].{k}"
            for k in {*was, *now}
            if k not in UPDATABLE_TASK and was.get(k) != now.get(k)
        )
    if changed:
        fields = ", ".join(f"spec.{c}" for c in changed)
        problems.append(
            f"{fields}: job updates may not change fields other than minAvailable, "
            "priorityClassName, and tasks[*].replicas and tasks[*].minAvailable"
        )
    return problems


def _claim_name_changes(before: Mapping[str, object], after: Mapping[str, object]) -> list[str]:
    """The controller fills in the name of a `volumeClaim` volume once: a name that was there
    stays (pods mount it, and its PVC is made under it). A volume list that changes otherwise
    is refused as any other spec change."""
    old, new = _volumes(before), _volumes(after)
    if len(old) != len(new):
        return []
    problems = []
    for i, (was, now) in enumerate(zip(old, new, strict=True)):
        if was.get("volumeClaim") is None or now.get("volumeClaim") is None:
            continue
        field = f"spec.volumes[{i}].volumeClaimName"
        named, naming = was.get("volumeClaimName"), now.get("volumeClaimName")
        if named and naming != named:
            problems.append(
                f'{field}: the claim name "{named}" may not change: pods mount that claim'
            )
        elif not named and naming and (problem := _claim_name_problem(field, naming)):
            problems.append(problem)
    return problems


def _claims_blanked(spec: Mapping[str, object]) -> Mapping[str, object]:
    """The spec with the claim names the controller writes for `volumeClaim` volumes left out
    (`_claim_name_changes` says which of their changes are the controller's)."""
    volumes = _sequence(spec.get("volumes"))
    if not volumes:
        return spec
    blanked = [
        {k: v for k, v in _mapping(vol).items() if k != "volumeClaimName"}
        if _mapping(vol).get("volumeClaim") is not None
        else vol
        for vol in volumes
    ]
    return {**spec, "volumes": blanked}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _numbers(spec: Mapping[str, object], tasks: Sequence[Mapping[str, object]]) -> list[str]:
    problems = []
    total = 0
    for i, task in enumerate(tasks):
        replicas = _int(task.get("replicas")) or 0
        minimum = _int(task.get("minAvailable"))
        if minimum is not None and minimum > replicas:
            problems.append(
                f"spec.tasks[{i}].minAvailable: must be at most the task's replicas ({replicas})"
            )
        total += replicas
    job_min = _int(spec.get("minAvailable"))
    if job_min is not None and job_min > total:
        problems.append(
            f"spec.minAvailable: job 'minAvailable' must not be greater than total replicas "
            f"({total})"
        )
    return problems

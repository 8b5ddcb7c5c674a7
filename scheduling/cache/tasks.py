"""A pod as the scheduler's task: Volcano's NewTaskInfo over a pod's plain JSON.

Which job a pod belongs to (its group-name annotation), its status as Volcano's getTaskStatus
reads it, its priority (annotation, spec, PriorityClass, Volcano's default), whether it may be
preempted, its ResourceClaims and what its own claims ask for in devices. `ParseMemo` keeps
the tasks of the last session by (uid, resourceVersion), so a session parses only the pods
that changed. Apart from the snapshot's assembly (`scheduling/cache/objects.py`) because this
is the per-pod half, a rule per field, and the biggest part of a session's parsing.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Hashable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Final, Generic, TypeVar

from models import labels
from models.duration import parse_duration
from models.keys import JobKey, job_key
from models.meta import parse_time
from scheduling.api.constraints import NodeSelector, PreferredSchedulingTerm, Toleration
from scheduling.api.devices import DeviceWorld, device_dimension
from scheduling.api.podterms import PodOnNode, host_ports, pod_affinity, spread_constraints
from scheduling.api.requests import Obj, as_list, as_obj, pod_request
from scheduling.api.snapshot import (
    EPOCH,
    JobInfo,
    NodeName,
    PodKey,
    TaskInfo,
    TaskStatus,
    pod_on_node,
)
from scheduling.api.vectors import EMPTY, Resources

# Keys Volcano reads on pods that models/labels.py does not spell yet.
VOLCANO_GROUP_NAME: Final = "scheduling.volcano.sh/group-name"
TASK_PRIORITY: Final = "volcano.sh/task-priority"
PREEMPTABLE: Final = "volcano.sh/preemptable"
FIT_TYPE: Final = "volcano.sh/resource-strategy-scoring-type"
FIT_WEIGHTS: Final = "volcano.sh/resource-strategy-weight"
DEFAULT_TASK_PRIORITY: Final = 1
MILLI: Final = 1000  # scalar resources are kept in milli-units
_PHASES: Final = {
    "Running": TaskStatus.RUNNING,
    "Succeeded": TaskStatus.SUCCEEDED,
    "Failed": TaskStatus.FAILED,
}


def string_map(value: object) -> dict[str, str]:
    """A JSON map (labels, annotations, a nodeSelector) with string keys and values."""
    return {str(k): str(v) for k, v in as_obj(value).items()}


def _time(value: object) -> datetime:
    return parse_time(value) or EPOCH


def pod_key(pod: Obj) -> PodKey:
    meta = as_obj(pod.get("metadata"))
    return PodKey(f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}")


def task_status(pod: Obj) -> TaskStatus:
    """Volcano's getTaskStatus: phase, deletion and whether a node is set."""
    deleting = bool(as_obj(pod.get("metadata")).get("deletionTimestamp"))
    phase = as_obj(pod.get("status")).get("phase") or "Pending"
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if as_obj(pod.get("spec")).get("nodeName") else TaskStatus.PENDING
    if phase == "Running" and deleting:
        return TaskStatus.RELEASING
    return _PHASES.get(str(phase), TaskStatus.UNKNOWN)


def _preemptable(annotations: Mapping[str, str], pod_labels: Mapping[str, str]) -> bool:
    """GetPodPreemptable: the annotation, else the label, else true; unparsable is false."""
    value = annotations.get(PREEMPTABLE, pod_labels.get(PREEMPTABLE))
    if value is None:
        return True
    return value in ("1", "t", "T", "TRUE", "true", "True")  # Go's ParseBool


def _cooldown(annotations: Mapping[str, str], pod_labels: Mapping[str, str]) -> timedelta | None:
    """cdp's podCooldownTime: the label, else the annotation, as a Go duration; None: unset
    or unparsable (Volcano logs it and protects nothing)."""
    value = pod_labels.get(labels.COOLDOWN_TIME, annotations.get(labels.COOLDOWN_TIME))
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError:
        return None


def _running_since(pod: Obj) -> datetime | None:
    """When cdp counts a pod's cooldown from: its PodScheduled condition's lastTransitionTime,
    when that condition is True and the pod's phase is Running (cdp.go); None otherwise."""
    status = as_obj(pod.get("status"))
    if status.get("phase") != "Running":
        return None
    for condition in as_list(status.get("conditions")):
        if condition.get("type") == "PodScheduled":  # cdp stops at the first one
            if condition.get("status") != "True":
                return None
            return parse_time(condition.get("lastTransitionTime"))
    return None


def _seconds(value: object) -> timedelta | None:
    """A whole number of seconds of the pod's spec; None: absent or not a positive number."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return timedelta(seconds=value)


def _finished(pod: Obj) -> datetime | None:
    """When a completed pod's last container finished; None: not completed, or not said."""
    status = as_obj(pod.get("status"))
    if status.get("phase") not in ("Succeeded", "Failed"):
        return None
    ends = [
        when
        for s in as_list(status.get("containerStatuses"))
        if (when := parse_time(as_obj(as_obj(s.get("state")).get("terminated")).get("finishedAt")))
    ]
    return max(ends, default=None)


def _fit_weights(annotations: Mapping[str, str]) -> dict[str, int] | None:
    """resource-strategy-fit's per-pod weights, a JSON map of resource to whole number; None:
    absent, or not such a map (Volcano then scores the pod 0 on every node)."""
    text = annotations.get(FIT_WEIGHTS, "")
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in found.values()):
        return None
    return {str(k): int(v) for k, v in found.items()}


def _index(name: str) -> int | None:
    """The numeric last token of `<job>-<task>-<index>`; None for other names."""
    tokens = name.split("-")
    return int(tokens[-1]) if len(tokens) >= 3 and tokens[-1].isdigit() else None


def priority_values(classes: Iterable[Obj]) -> tuple[dict[str, int], int | None]:
    """PriorityClass values by name, and the globalDefault one's (None: no global default)."""
    values: dict[str, int] = {}
    default: int | None = None
    for pc in classes:
        value = pc.get("value")
        number = value if isinstance(value, int) else 0
        values[str(as_obj(pc.get("metadata")).get("name") or "")] = number
        if pc.get("globalDefault") is True:
            default = number
    return values, default


def _task_priority(pod: Obj, annotations: Mapping[str, str], classes: Mapping[str, int]) -> int:
    """Pod annotation, else spec.priority, else its PriorityClass, else Volcano's default 1."""
    spec = as_obj(pod.get("spec"))
    note = annotations.get(TASK_PRIORITY, "")
    if note.lstrip("-").isdigit():
        return int(note)
    priority = spec.get("priority")
    if isinstance(priority, int):
        return priority
    return classes.get(str(spec.get("priorityClassName") or ""), DEFAULT_TASK_PRIORITY)


def task_info(pod: Obj, job: JobKey, classes: Mapping[str, int] | None = None) -> TaskInfo:
    """One pod as a task of `job`; `classes` are PriorityClass values by name (None: none)."""
    meta, spec = as_obj(pod.get("metadata")), as_obj(pod.get("spec"))
    annotations, pod_labels = string_map(meta.get("annotations")), string_map(meta.get("labels"))
    node_affinity = as_obj(as_obj(spec.get("affinity")).get("nodeAffinity"))
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    node = spec.get("nodeName")
    return TaskInfo(
        key=pod_key(pod),
        uid=str(meta.get("uid") or ""),
        job=job,
        role=annotations.get(labels.TASK_SPEC) or pod_labels.get(labels.TASK_SPEC, ""),
        request=pod_request(spec),
        nonzero_request=pod_request(spec, nonzero=True),
        priority=_task_priority(pod, annotations, classes or {}),
        status=task_status(pod),
        node_name=NodeName(str(node)) if node else None,
        node_selector=string_map(spec.get("nodeSelector")),
        required_affinity=NodeSelector.model_validate(required) if required is not None else None,
        preferred_affinity=tuple(PreferredSchedulingTerm.model_validate(t) for t in preferred),
        tolerations=tuple(Toleration.model_validate(t) for t in as_list(spec.get("tolerations"))),
        gated=bool(as_list(spec.get("schedulingGates"))),
        creation=_time(meta.get("creationTimestamp")),
        index=_index(str(meta.get("name") or "")),
        preemptable=_preemptable(annotations, pod_labels),
        priority_class=str(spec.get("priorityClassName") or ""),
        preempts=spec.get("preemptionPolicy") != "Never",
        labels=pod_labels,
        pod_affinity=pod_affinity(spec),
        spread=spread_constraints(spec, pod_labels),
        host_ports=host_ports(spec),
        resource_claims=resource_claims(pod),
        cooldown=_cooldown(annotations, pod_labels),
        running_since=_running_since(pod),
        started=parse_time(as_obj(pod.get("status")).get("startTime")),
        finished=_finished(pod),
        active_deadline=_seconds(spec.get("activeDeadlineSeconds")),
        fit_type=annotations.get(FIT_TYPE, ""),
        fit_weights=_fit_weights(annotations),
    )


def resource_claims(pod: Obj) -> tuple[str, ...]:
    """The names of the pod's ResourceClaims, in spec order: the one it names, or the one
    kube-controller-manager made from its template ("" until the pod's status says)."""
    made = {
        str(s.get("name") or ""): str(s.get("resourceClaimName") or "")
        for s in as_list(as_obj(pod.get("status")).get("resourceClaimStatuses"))
    }
    out = []
    for entry in as_list(as_obj(pod.get("spec")).get("resourceClaims")):
        name = entry.get("resourceClaimName")
        out.append(str(name) if name else made.get(str(entry.get("name") or ""), ""))
    return tuple(out)


def device_request(devices: DeviceWorld, task: TaskInfo) -> Resources:
    """The devices a pod's own claims (made for it from a template) ask for, per class, as
    quota dimensions; a claim shared by several pods counts for none of them."""
    counts: dict[str, int] = {}
    for name in dict.fromkeys(task.resource_claims):
        claim = devices.claims.get((task.namespace, name))
        if claim is None or claim.owner_pod != task.uid:
            continue
        for request in claim.requests:
            option = request.options[0] if request.options else None
            if option is not None and not option.all:
                dimension = device_dimension(option.device_class)
                counts[dimension] = counts.get(dimension, 0) + option.count * MILLI
    return Resources.of(scalars=counts) if counts else EMPTY


def group_of(pod: Obj) -> str:
    """The PodGroup a pod belongs to: Caldera's group-name annotation, else Volcano's."""
    annotations = string_map(as_obj(pod.get("metadata")).get("annotations"))
    return annotations.get(labels.GROUP_NAME) or annotations.get(VOLCANO_GROUP_NAME, "")


T = TypeVar("T")
_Version = tuple[str, str]  # (uid, resourceVersion): one state of one object


def _version(obj: Obj) -> _Version | None:
    meta = as_obj(obj.get("metadata"))
    uid, rv = meta.get("uid"), meta.get("resourceVersion")
    return (str(uid), str(rv)) if uid and rv else None


class Versioned(Generic[T]):
    """Values made from objects the previous session saw, by (uid, resourceVersion) and what
    else the value depends on: a change to an object gives it a new resourceVersion, so a
    session makes values only for what changed since. What a session does not use is dropped
    by the next, so it holds one cluster's worth."""

    def __init__(self) -> None:
        self._last: dict[Hashable, T] = {}
        self._used: dict[Hashable, T] = {}

    def begin(self, keep: bool = True) -> None:
        """A session starts: what the last one used is kept (`keep`), else nothing is."""
        self._last, self._used = (self._used if keep else {}), {}

    def get(self, obj: Obj, depends: Hashable, make: Callable[[], T]) -> T:
        version = _version(obj)
        if version is None:
            return make()
        key = (version, depends)
        found = self._last.get(key)
        if found is None:
            found = make()
        self._used[key] = found
        return found


class ParseMemo:
    """Pods parsed as tasks (each with its place among the pods on nodes) and PodGroups as
    jobs in the previous session (`Versioned`); a change of the priority classes, which both
    read, drops them all."""

    def __init__(self) -> None:
        self._classes: tuple[tuple[str, int], ...] = ()
        self._tasks: Versioned[TaskInfo] = Versioned()
        self._placed: Versioned[PodOnNode] = Versioned()
        self._jobs: Versioned[JobInfo] = Versioned()

    def begin(self, classes: Mapping[str, int]) -> None:
        """A session starts: what the last one used is kept; priorities changed: nothing is."""
        current = tuple(sorted(classes.items()))
        keep = current == self._classes
        self._tasks.begin(keep)
        self._placed.begin(keep)
        self._jobs.begin(keep)
        self._classes = current

    def task(self, pod: Obj, classes: Mapping[str, int]) -> TaskInfo:
        """The pod as a task of the job its group-name annotation names in its namespace."""

        def parsed() -> TaskInfo:
            namespace = str(as_obj(pod.get("metadata")).get("namespace") or "default")
            return task_info(pod, job_key(namespace, group_of(pod)), classes)

        return self._tasks.get(pod, None, parsed)

    def placed(self, pod: Obj, task: TaskInfo, node: NodeName) -> PodOnNode:
        """`pod_on_node` of the pod's task: the rest of it is read from the pod itself, and the
        volumes the snapshot attaches can change while the pod does not."""
        depends = (node, task.volumes, task.status is TaskStatus.RELEASING)
        return self._placed.get(pod, depends, functools.partial(pod_on_node, task, node))

    def job(self, group: Obj, depends: Hashable, make: Callable[[], JobInfo]) -> JobInfo:
        return self._jobs.get(group, depends, make)

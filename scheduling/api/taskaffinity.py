"""A job's task-topology annotations: which of its roles share nodes, which keep apart, and
which are placed first (what Volcano's task-topology plugin reads off the PodGroup; the job
controller copies a Job's annotations onto its PodGroup, so they are written on the Job).

- `volcano.sh/task-topology-affinity: "ps,worker;ps,chief"`: groups separated by `;`, the
  roles (task names, `volcano.sh/task-spec`) of a group by `,`. The tasks of a group's roles
  go to the same nodes; a group of one role keeps that role's tasks together.
- `volcano.sh/task-topology-anti-affinity: "ps;worker,chief"`: the same shape, apart.
- `volcano.sh/task-topology-task-order: "ps,worker"`: among tasks sharing nodes, these roles
  first, in this order.

Read as Volcano's `readTopologyFromPgAnnotations` reads them: split and kept as written, empty
names included (a trailing `;` or `,,` is harmless: no task has the empty name). `problems`
is its `affinityCheck`: a name that is no role of the job, or a name twice in one group, makes
the whole topology invalid; the scheduler then ignores it, as Volcano does, and the admission
webhook refuses a Volcano Job that carries one, naming the annotation.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict

AFFINITY: Final = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY: Final = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER: Final = "volcano.sh/task-topology-task-order"
ANNOTATIONS: Final = (AFFINITY, ANTI_AFFINITY, TASK_ORDER)

Groups = tuple[tuple[str, ...], ...]


class TaskTopology(BaseModel):
    """The three annotations as groups of role names (an absent one is empty)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    affinity: Groups = ()
    anti_affinity: Groups = ()
    task_order: tuple[str, ...] = ()


def _groups(text: str | None) -> Groups:
    if text is None:
        return ()
    return tuple(tuple(group.split(",")) for group in text.split(";"))


def read(annotations: Mapping[str, str]) -> TaskTopology | None:
    """The PodGroup's (or Job's) task topology; None: none of the three annotations is set."""
    if not any(key in annotations for key in ANNOTATIONS):
        return None
    order = annotations.get(TASK_ORDER)
    return TaskTopology(
        affinity=_groups(annotations.get(AFFINITY)),
        anti_affinity=_groups(annotations.get(ANTI_AFFINITY)),
        task_order=tuple(order.split(",")) if order is not None else (),
    )


def _group_problem(group: tuple[str, ...], roles: Collection[str]) -> str | None:
    seen: set[str] = set()
    for name in group:
        if not name:
            continue
        if name not in roles:
            return f"task {name!r} is not a task of the job (its tasks: {', '.join(sorted(roles))})"
        if name in seen:
            return f"task {name!r} appears twice in the group {','.join(group)!r}"
        seen.add(name)
    return None


def problems(topology: TaskTopology, roles: Collection[str]) -> list[tuple[str, str]]:
    """(annotation, why) for each annotation naming a task the job lacks, or one task twice in a
    group (the task order is one group); empty: the topology is valid for these roles."""
    found = []
    for key, groups in (
        (AFFINITY, topology.affinity),
        (ANTI_AFFINITY, topology.anti_affinity),
        (TASK_ORDER, (topology.task_order,) if topology.task_order else ()),
    ):
        for group in groups:
            if (problem := _group_problem(group, roles)) is not None:
                found.append((key, problem))
                break
    return found

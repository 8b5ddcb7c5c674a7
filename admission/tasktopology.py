"""The Job rule on task-topology annotations: every task they name is a task of the job, once
per group.

Volcano's scheduler checks the same when a session opens (the task-topology plugin's
`affinityCheck`) and, on a bad name, logs it and places the job as if it carried no
topology: the job runs without the placement its author asked for, and nothing says why.
Caldera's scheduler does the same for a PodGroup made without a Job (`api.taskaffinity`);
a Volcano Job is refused here at CREATE instead, naming the annotation. Empty names (a
trailing `;`, a `,,`) are accepted, as Volcano accepts them: they match no task.

Pure: takes the raw camelCase Job as the apiserver sends it.
"""

from __future__ import annotations

from collections.abc import Mapping

from models import labels
from scheduling.api import taskaffinity


def _roles(job: Mapping[str, object]) -> set[str]:
    """The job's task names, as its pods carry them in `volcano.sh/task-spec`."""
    spec = job.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, Mapping) else None
    names = set()
    for task in tasks if isinstance(tasks, list) else []:
        name = task.get("name") if isinstance(task, Mapping) else None
        names.add(name if isinstance(name, str) and name else labels.DEFAULT_TASK_SPEC)
    return names


def problems(job: Mapping[str, object]) -> list[str]:
    meta = job.get("metadata")
    given = meta.get("annotations") if isinstance(meta, Mapping) else None
    annotations = (
        {k: v for k, v in given.items() if isinstance(v, str)} if isinstance(given, Mapping) else {}
    )
    topology = taskaffinity.read(annotations)
    if topology is None:
        return []
    return [
        f"metadata.annotations[{key}]: {why}"
        for key, why in taskaffinity.problems(topology, _roles(job))
    ]

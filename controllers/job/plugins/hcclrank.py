"""The `hcclrank` plugin: each pod's HCCL rank, as the annotation `hccl/rankIndex`.

Ascend NPU training (HCCL, Huawei's collective communication library) takes each pod's rank
from that annotation rather than from the pod's env. A pod whose template already sets it
keeps it; otherwise the first `RANK` env of its containers is used (the pytorch plugin writes
one, which is why `activities.controllers.plugins` runs this plugin after the others); otherwise a
master pod's rank is its index and a worker's is the master task's replicas + its index. Pods of
other tasks get none.

Unlike the other plugins its job add records no `controlledResources` marker, as in Volcano,
and it owns no object. Pure: no temporalio, no kubernetes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models import goflags
from models.vcjob import Job

NAME: Final = "hcclrank"
RANK_ANNOTATION: Final = "hccl/rankIndex"
RANK_ENV: Final = "RANK"


@dataclasses.dataclass(frozen=True)
class Options:
    master: str = "master"
    worker: str = "worker"


def options(args: Sequence[str]) -> tuple[Options, str | None]:
    """The plugin's flags; the error (None: none) is only for logging, as in Volcano."""
    return goflags.parse(Options(), args)


def env_rank(pod: dict[str, Any]) -> str:
    """The value of the first `RANK` env of the pod's containers ("" if none, or if that one
    comes from a reference: Volcano reads `value` only)."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == RANK_ENV:
                value: str = env.get("value") or ""
                return value
    return ""


def rank(job: Job, pod: dict[str, Any], task_name: str, index: int, opts: Options) -> str:
    """The rank to record ("": none, the pod is of neither task)."""
    from_env = env_rank(pod)
    if from_env:
        return from_env
    if task_name == opts.master:
        return str(index)
    if task_name == opts.worker:
        master = support.find_task(job, opts.master)
        replicas = (master.replicas or 0) if master is not None else 0
        return str(replicas + index)
    return ""


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's hcclrank OnPodCreate."""
    opts, _ = options(args)
    out = copy.deepcopy(pod)
    metadata = out.setdefault("metadata", {})
    if (metadata.get("annotations") or {}).get(RANK_ANNOTATION):
        return out
    value = rank(job, out, task_name, index, opts)
    if value:
        metadata["annotations"] = {**(metadata.get("annotations") or {}), RANK_ANNOTATION: value}
    return out

"""The `tensorflow` plugin: `TF_CONFIG`, the cluster spec TensorFlow's distribution reads.

Every container of the job gets one JSON value: `cluster` lists `<host>.<subdomain>:<port>` of
each replica of the ps, worker, chief and evaluator tasks (a role whose task is missing or has
no replicas is left out), and `task` says which role this pod plays (a task of no role plays
its own name) and its index. A job of one task with one replica is stand-alone TensorFlow and
is left alone. The port (2222 by default) only goes into the addresses: no container port is
opened. The job's defaults add svc, whose names the addresses use. The plugin owns no
Kubernetes object: only the `plugin-tensorflow` marker.

Pure: no temporalio, no kubernetes.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models import goflags
from models.vcjob import Job

NAME: Final = "tensorflow"
CONFIG_ENV: Final = "TF_CONFIG"


@dataclasses.dataclass(frozen=True)
class Options:
    ps: str = "ps"
    worker: str = "worker"
    chief: str = "chief"
    evaluator: str = "evaluator"
    port: int = 2222


def options(args: Sequence[str]) -> tuple[Options, str | None]:
    """The plugin's flags; the error (None: none) is only for logging, as in Volcano."""
    return goflags.parse(Options(), args)


def _cluster(job: Job, opts: Options) -> dict[str, list[str]]:
    # The JSON keys in Volcano's order; a task matches the first role of that name.
    roles = {
        "ps": opts.ps,
        "worker": opts.worker,
        "chief": opts.chief,
        "evaluator": opts.evaluator,
    }
    hosts: dict[str, list[str]] = {}
    for task in job.spec.tasks:
        role = next((r for r, name in roles.items() if name == task.name), None)
        if role is not None:
            replicas = range(task.replicas or 0)
            hosts[role] = [f"{support.domain_name(job, task, i)}:{opts.port}" for i in replicas]
    return {r: hosts[r] for r in roles if hosts.get(r)}


def task_type(task_name: str, opts: Options) -> str:
    """The pod's role; Volcano looks chief up first, then worker, ps, evaluator."""
    for role, name in (
        ("chief", opts.chief),
        ("worker", opts.worker),
        ("ps", opts.ps),
        ("evaluator", opts.evaluator),
    ):
        if task_name == name:
            return role
    return task_name


def tf_config(job: Job, task_name: str, index: int, opts: Options) -> str:
    """The TF_CONFIG value, compact JSON as Go's encoding/json writes it."""
    spec = {
        "cluster": _cluster(job, opts),
        "task": {"type": task_type(task_name, opts), "index": index},
    }
    return json.dumps(spec, separators=(",", ":"))


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's tensorflow OnPodCreate: TF_CONFIG on every container (init ones excepted)."""
    opts, _ = options(args)
    out = copy.deepcopy(pod)
    tasks = job.spec.tasks
    if len(tasks) == 1 and (tasks[0].replicas or 0) == 1:
        return out
    env = {"name": CONFIG_ENV, "value": tf_config(job, task_name, index, opts)}
    for container in (out.get("spec") or {}).get("containers") or []:
        support.append(container, "env", dict(env))
    return out

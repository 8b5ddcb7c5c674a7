"""The `pytorch` plugin: what `torch.distributed` reads to find its peers, in every container.

Each container of the job gets `MASTER_ADDR` (pod 0 of the master task, by its svc DNS name),
`MASTER_PORT`, `WORLD_SIZE` (the master and worker tasks' replicas together) and, in those two
tasks, `RANK`: 0 on the master, the pod's index + 1 on a worker. The port (23456 by default,
named `pytorchjob-port`) is opened on every container. With `--wait-master-enabled` each
worker pod also gets an init container that waits until the master's port answers, so workers
never start before their rendezvous exists. A job without the master task is left alone. The
job's defaults add svc, whose names MASTER_ADDR uses. The env and the port go on containers
only, not init containers, and the plugin owns no Kubernetes object: only the
`plugin-pytorch` marker.

Pure: no temporalio, no kubernetes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models import goflags
from models.vcjob import Job

NAME: Final = "pytorch"
PORT_NAME: Final = "pytorchjob-port"
WAIT_CONTAINER: Final = "wait-for-master"
MASTER_ADDR: Final = "MASTER_ADDR"
MASTER_PORT: Final = "MASTER_PORT"
WORLD_SIZE: Final = "WORLD_SIZE"
RANK: Final = "RANK"


@dataclasses.dataclass(frozen=True)
class Options:
    master: str = "master"
    worker: str = "worker"
    port: int = 23456
    wait_master_enabled: bool = False
    wait_master_timeout: int = 300  # seconds
    wait_master_image: str = "busybox:1.36.1"


def options(args: Sequence[str]) -> tuple[Options, str | None]:
    """The plugin's flags; the error (None: none) is only for logging, as in Volcano."""
    return goflags.parse(Options(), args)


def world_size(job: Job, opts: Options) -> int:
    return sum(t.replicas or 0 for t in job.spec.tasks if t.name in (opts.master, opts.worker))


def wait_script(master_addr: str, opts: Options) -> str:
    """The init container's shell loop: `nc -z`, else bash's /dev/tcp, every 2 s until the
    timeout (then exit 1, so the pod fails instead of training alone)."""
    target = f"{master_addr} {opts.port}"
    return "\n".join(
        [
            f'echo "Waiting for master node {master_addr}:{opts.port} to be ready..."',
            f"TIMEOUT={opts.wait_master_timeout}",
            "ELAPSED=0",
            f"until {{ nc -z {target} || echo > /dev/tcp/{master_addr}/{opts.port}; }} "
            "2>/dev/null; do",
            "  if [ $ELAPSED -ge $TIMEOUT ]; then",
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"',
            "    exit 1",
            "  fi",
            '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"',
            "  sleep 2",
            "  ELAPSED=$((ELAPSED + 2))",
            "done",
            'echo "Master node is ready!"',
        ]
    )


def _add_wait_container(spec: dict[str, Any], master_addr: str, opts: Options) -> None:
    # One is enough: a template that brings its own keeps it.
    if any(c.get("name") == WAIT_CONTAINER for c in spec.get("initContainers") or []):
        return
    container = {
        "name": WAIT_CONTAINER,
        "image": opts.wait_master_image,
        "command": ["sh", "-c", wait_script(master_addr, opts)],
    }
    support.append(spec, "initContainers", container)


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's pytorch OnPodCreate."""
    opts, _ = options(args)
    out = copy.deepcopy(pod)
    master = support.find_task(job, opts.master)
    if master is None:
        return out
    master_addr = support.domain_name(job, master, 0)
    env = [
        {"name": MASTER_ADDR, "value": master_addr},
        {"name": MASTER_PORT, "value": str(opts.port)},
        {"name": WORLD_SIZE, "value": str(world_size(job, opts))},
    ]
    if task_name == opts.worker:
        env.append({"name": RANK, "value": str(index + 1)})
        if opts.wait_master_enabled:
            _add_wait_container(out.setdefault("spec", {}), master_addr, opts)
    elif task_name == opts.master:
        env.append({"name": RANK, "value": "0"})  # every master replica: rank 0
    for container in (out.get("spec") or {}).get("containers") or []:
        support.open_ports(container, (PORT_NAME, opts.port))
        support.append(container, "env", *copy.deepcopy(env))
    return out

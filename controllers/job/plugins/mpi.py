"""The `mpi` plugin: the ssh port open on every container, and the master told its workers.

`mpiexec --host` needs the workers' DNS names and an sshd to reach on each. Volcano's plugin
opens the port (22 by default, named `mpijob-port`) on every container and init container of
the job, and gives the master task's containers `MPI_HOST`: the worker task's hosts, comma
separated, as the svc plugin names them. The job's defaults add svc (for the names) and ssh
(for the keys), as Volcano's webhook does. A master pod in a job without the worker task is
left as it is, ports included. The plugin owns no Kubernetes object: only the `plugin-mpi`
marker.

Pure: no temporalio, no kubernetes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models import goflags, plugins
from models.plugins import MpiOptions
from models.vcjob import Job

NAME: Final = plugins.MPI
HOSTS_ENV: Final = "MPI_HOST"
PORT_NAME: Final = "mpijob-port"


def options(args: Sequence[str]) -> tuple[MpiOptions, str | None]:
    """The plugin's flags; the error (None: none) is only for logging, as in Volcano."""
    return goflags.parse(MpiOptions(), args)


def worker_hosts(job: Job, worker_task: str) -> str:
    """Volcano's generateTaskHosts: `<host>.<subdomain>` of each worker, joined by commas."""
    task = support.find_task(job, worker_task)
    hosts = support.task_hosts(job, task) if task is not None else []
    return ",".join(f"{host}.{subdomain}" for host, subdomain in hosts)


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's mpi OnPodCreate: the port everywhere, MPI_HOST on the master's containers."""
    opts, _ = options(args)
    out = copy.deepcopy(pod)
    env: list[dict[str, Any]] = []
    if task_name == opts.master:
        if support.find_task(job, opts.worker) is None:
            return out
        env = [{"name": HOSTS_ENV, "value": worker_hosts(job, opts.worker)}]
    for container in support.containers(out):
        support.open_ports(container, (PORT_NAME, opts.port))
        if env:
            support.append(container, "env", *copy.deepcopy(env))
    return out

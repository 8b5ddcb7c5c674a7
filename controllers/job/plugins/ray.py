"""The `ray` plugin: a Ray cluster from a head task and a worker task, and a Service to reach it.

Volcano's plugin writes the entrypoints itself. The head task's head container (named `head`
by default) runs `ray start --head` on the GCS, dashboard and client-server ports and exposes
them (`gcs`, `dashboard`, `client-server`); the worker task's worker container runs
`ray start --address=<head pod 0>:<gcs port>`. Both replace the container's `command` (its
`args` are kept). Other containers and other tasks are left alone. A job without the head
task gets no pod at all: Volcano's OnPodCreate fails for every pod of it.

On job add it creates the Service `<job>-head-svc` (ClusterIP) selecting the head task's pods
by the job and task labels, with the three ports targeted by name, so a client or a browser
can reach the head without knowing its pod. The job's defaults add svc, whose names the
workers use to find the head.

Pure builders only; creating and deleting the Service is the activities' job.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models import goflags, labels
from models.vcjob import Job

NAME: Final = "ray"
GCS_PORT: Final = "gcs"
DASHBOARD_PORT: Final = "dashboard"
CLIENT_PORT: Final = "client-server"


@dataclasses.dataclass(frozen=True)
class Options:
    head: str = "head"
    head_container: str = dataclasses.field(default="head", metadata={"flag": "headContainer"})
    worker: str = "worker"
    worker_container: str = dataclasses.field(
        default="worker", metadata={"flag": "workerContainer"}
    )
    port: int = 6379  # the GCS
    dashboard_port: int = dataclasses.field(default=8265, metadata={"flag": "dashboardPort"})
    client_port: int = dataclasses.field(default=10001, metadata={"flag": "clientPort"})

    def ports(self) -> tuple[tuple[str, int], ...]:
        return (
            (GCS_PORT, self.port),
            (DASHBOARD_PORT, self.dashboard_port),
            (CLIENT_PORT, self.client_port),
        )


def options(args: Sequence[str]) -> tuple[Options, str | None]:
    """The plugin's flags; the error (None: none) is only for logging, as in Volcano.

    Volcano's user guide spells the client port `--clientServerPort`; its code reads
    `--clientPort`, and so does this (the other spelling is an undefined flag).
    """
    return goflags.parse(Options(), args)


def head_service_name(job: Job) -> str:
    return f"{support.job_name(job)}-head-svc"


def head_service(job: Job, opts: Options) -> dict[str, Any]:
    """The head's Service, as Volcano's createServiceIfNotExist writes it."""
    selector = {
        labels.JOB_NAME: support.job_name(job),
        labels.JOB_NAMESPACE: support.job_namespace(job),
        labels.TASK_SPEC: opts.head,
    }
    ports = [
        {"name": n, "port": support.go_int32(p), "targetPort": n, "protocol": "TCP"}
        for n, p in opts.ports()
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": support.object_meta(job, head_service_name(job)),
        "spec": {"selector": selector, "ports": ports},
    }


def head_command(opts: Options) -> list[str]:
    return [
        "sh",
        "-c",
        f"ray start --head --block --dashboard-host=0.0.0.0 --port={opts.port} "
        f"--dashboard-port={opts.dashboard_port} --ray-client-server-port={opts.client_port}",
    ]


def worker_command(head_addr: str, opts: Options) -> list[str]:
    return ["sh", "-c", f"ray start --block --address={head_addr}:{opts.port}"]


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's ray OnPodCreate; raises `support.PodRefused` when the job has no head task."""
    opts, _ = options(args)
    head = support.find_task(job, opts.head)
    if head is None:
        raise support.PodRefused(
            f"job {support.job_namespace(job)}/{support.job_name(job)}: spec.plugins.ray: the job "
            f'has no head task "{opts.head}" (spec.tasks[*].name), so no pod can be made'
        )
    out = copy.deepcopy(pod)
    for container in (out.get("spec") or {}).get("containers") or []:
        name = container.get("name")
        if task_name == opts.head and name == opts.head_container:
            support.open_ports(container, *opts.ports())
            container["command"] = head_command(opts)
        if task_name == opts.worker and name == opts.worker_container:
            container["command"] = worker_command(support.domain_name(job, head, 0), opts)
    return out

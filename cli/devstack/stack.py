"""`caldera dev up | down | status`: the whole embedded stack, recorded in one state file.

`up` starts the Temporal dev server (or, with `--temporal server`, the Temporal server on
PostgreSQL), the local control plane, Caldera's worker, forwarder and admission webhook, and
submits Volcano's sample job. With `--clusters N` it starts N worker clusters beside it
(`cli/devstack/clusters.py`), registers them on this one, the manager, and sends the sample job
to their queue `multi`.

`up` is idempotent: a healthy recorded stack is reused as is; a half-dead one is stopped
(by its recorded PIDs) and started again. `down` stops exactly the recorded PIDs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import yaml
from kubernetes import client
from pydantic import BaseModel

from cli import links
from cli.devstack import (
    caldera_processes,
    clusters,
    controlplane,
    devices,
    install,
    processes,
    temporal_dev,
    temporal_server,
)
from cli.devstack.clusters import WorkerCluster
from cli.devstack.controlplane import ControlPlane
from cli.devstack.nodes import NodeTemplate
from cli.devstack.processes import Process
from cli.devstack.temporal_dev import TemporalServer
from models import keys, vcjob

CACHE: Final = Path(os.environ.get("CALDERA_CACHE", Path.home() / ".cache" / "caldera"))
# Where `up` keeps its state, etcd data and Temporal's SQLite file (binaries stay in CACHE).
DEV_DIR: Final = Path(os.environ.get("CALDERA_DEV_DIR", CACHE / "dev"))
STATE_FILE: Final = DEV_DIR / "state.json"


SAMPLE_JOB: Final = controlplane.REPO / "deploy" / "examples" / "sample-job.yaml"


class DevStack(BaseModel):
    control_plane: ControlPlane
    temporal: TemporalServer
    controllers: list[Process] = []  # Caldera's worker, forwarder and admission webhook
    clusters: list[WorkerCluster] = []  # worker clusters (`up --clusters N`), in start order

    @property
    def processes(self) -> list[Process]:
        own = [*self.control_plane.processes, *self.temporal.processes, *self.controllers]
        return own + [p for c in self.clusters for p in c.processes]

    def name_width(self) -> int:
        """The process column's width: 24, or the longest label (`worker-0/kube-...`)."""
        return max([24, *(len(name) for name, _ in self.labelled())])

    def labelled(self) -> list[tuple[str, Process]]:
        """Every process with the name to show: a worker cluster's as `<cluster>/<name>`."""
        own = [*self.control_plane.processes, *self.temporal.processes, *self.controllers]
        shown = [(p.name, p) for p in own]
        return shown + [(f"{c.name}/{p.name}", p) for c in self.clusters for p in c.processes]

    def healthy(self) -> bool:
        return all(processes.alive(p.pid) for p in self.processes)

    def metrics_lines(self) -> list[str]:
        """Where Prometheus can scrape the worker and the forwarder."""
        return [
            f"metrics:      {p.metrics_url}  ({p.name})" for p in self.controllers if p.metrics_url
        ]

    def summary(self) -> str:
        lines = [
            f"Temporal UI:  {self.temporal.ui}",
            f"Temporal:     {self.temporal.address}",
            f"apiserver:    {self.control_plane.server}",
        ]
        width = self.name_width()
        lines += [f"  {name:<{width}} pid {p.pid:<8} log {p.log}" for name, p in self.labelled()]
        lines += self.metrics_lines()
        lines += [
            f"cluster {c.name}:  apiserver {c.server}  Temporal namespace {c.temporal_namespace}"
            f"  KUBECONFIG={c.kubeconfig}"
            for c in self.clusters
        ]
        lines.append(f"export KUBECONFIG={self.control_plane.kubeconfig}")
        lines.append(f"export PATH={self.control_plane.bin_dir}:$PATH  # kubectl")
        lines.append(f"export TEMPORAL_ADDRESS={self.temporal.address}")
        return "\n".join(lines)


def load() -> DevStack | None:
    """The recorded stack; None when `up` never ran or `down` cleared it."""
    if not STATE_FILE.exists():
        return None
    return DevStack.model_validate_json(STATE_FILE.read_text())


def start_temporal(profile: str, workdir: Path, port: int, ui_port: int) -> TemporalServer:
    """`dev`: the dev server on SQLite; `server`: the Temporal server on PostgreSQL."""
    if profile == "server":
        return temporal_server.start(workdir, port, ui_port)
    if profile != "dev":
        raise processes.StartupError(f"--temporal must be dev or server, not {profile!r}")
    return temporal_dev.start(workdir, port, ui_port)


def up(
    template: NodeTemplate | None = None,
    temporal_port: int = temporal_dev.DEFAULT_PORT,
    ui_port: int = temporal_dev.DEFAULT_UI_PORT,
    sample: bool = True,
    profile: str = "dev",
    worker_clusters: int = 0,
) -> tuple[DevStack, bool]:
    """Start the stack (or reuse a healthy one with as many worker clusters); returns it and
    whether it was started now. `profile` is the Temporal server's (`start_temporal`)."""
    current = load()
    if current is not None and current.healthy() and len(current.clusters) == worker_clusters:
        return current, False
    if current is not None:
        down()
    DEV_DIR.mkdir(parents=True, exist_ok=True)
    where = DEV_DIR / ("temporal" if profile == "dev" else f"temporal-{profile}")
    server = start_temporal(profile, where, temporal_port, ui_port)
    try:
        cluster_dir = DEV_DIR / "cluster"
        nodes = template or NodeTemplate()
        plane = controlplane.start(cluster_dir, nodes)
    except BaseException:
        temporal_dev.stop(server)
        raise
    stack = DevStack(control_plane=plane, temporal=server)
    STATE_FILE.write_text(stack.model_dump_json(indent=2))
    try:
        api = controlplane.api_client(plane.kubeconfig)
        if not nodes.gpus.count:
            devices.remove(api)  # published by an earlier `up` of this work dir's cluster
        install.install(api)
        started = caldera_processes.start(
            plane.kubeconfig,
            server.address,
            DEV_DIR / "logs",
            scheduler_override=None,
            metrics_ports=caldera_processes.DEFAULT_METRICS_PORTS,
        )
        stack = stack.model_copy(update={"controllers": started})
        STATE_FILE.write_text(stack.model_dump_json(indent=2))
        if worker_clusters:
            stack = _with_clusters(stack, api, worker_clusters, nodes)
        if sample:
            submit_sample(api, clusters.QUEUE if worker_clusters else None)
    except BaseException:
        down()
        raise
    return stack, True


def _with_clusters(
    stack: DevStack, api: client.ApiClient, count: int, template: NodeTemplate
) -> DevStack:
    """`count` worker clusters started, recorded as each comes up (so `down` finds them),
    and registered on the manager with the queue that dispatches to them."""

    def record(started: list[WorkerCluster]) -> None:
        STATE_FILE.write_text(stack.model_copy(update={"clusters": started}).model_dump_json())

    workers = clusters.start_all(
        count, DEV_DIR / "clusters", stack.temporal.address, template, record
    )
    stack = stack.model_copy(update={"clusters": workers})
    STATE_FILE.write_text(stack.model_dump_json(indent=2))
    clusters.register_all(api, workers)
    return stack


def submit_sample(api: client.ApiClient, queue: str | None = None) -> None:
    """Volcano's sample job, so the first `up` has a story to show in the UI; `queue`
    replaces its own (`default`)."""
    doc = yaml.safe_load(SAMPLE_JOB.read_text())
    if queue:
        doc["spec"]["queue"] = queue
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, doc["metadata"]["namespace"], "jobs", doc
        )
    except client.ApiException as e:
        if e.status != 409:  # already submitted by an earlier `up`
            raise


def sample_url(stack: DevStack) -> str:
    doc = yaml.safe_load(SAMPLE_JOB.read_text())
    wid = keys.job_workflow_id(doc["metadata"]["namespace"], doc["metadata"]["name"])
    return links.workflow_url(stack.temporal.ui, "default", wid)


def down() -> DevStack | None:
    """Stop every recorded process, newest first; returns what was stopped."""
    current = load()
    if current is None:
        return None
    for p in reversed(current.processes):
        processes.stop(p)
    STATE_FILE.unlink(missing_ok=True)
    return current

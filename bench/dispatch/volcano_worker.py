"""A worker cluster that runs real Volcano instead of Caldera (`--volcano-worker`): issue 29's
proof of openness, a worker only needs to serve Volcano's API.

Its control plane is started as any worker cluster's (`controlplane.start`); then Volcano's
CRDs from the source tree, its admission (vc-webhook-manager with the chart's webhook
configurations, so the copies Caldera writes go through Volcano's own validation), its
vc-controller-manager and vc-scheduler from prebuilt binaries, as `bench.sidebyside` runs the
Volcano side. No Caldera process and no Temporal namespace: the manager reaches it only through
its kubeconfig Secret. The binaries are passed on the command line; nothing here builds Volcano.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

from kubernetes import client

from bench.sidebyside import volcano as sbs_volcano
from bench.sidebyside import volcano_install as vi
from cli.devstack import clusters, controlplane, install, processes, webhook
from cli.devstack.clusters import WorkerCluster
from cli.devstack.nodes import NodeTemplate
from cli.devstack.processes import Process

OPEN_TIMEOUT: Final = 180.0  # Volcano's controller opens the `default` queue once it runs
NO_TEMPORAL: Final = ""  # a Volcano worker has no Temporal namespace


def start(
    index: int, base: Path, template: NodeTemplate, bin_dir: Path, src: Path
) -> WorkerCluster:
    """Worker cluster `worker-<index>` with Volcano's API, admission, controllers and scheduler,
    and the queue the manager dispatches from (`multi`); ready once both queues are Open.
    Everything started is stopped if a step fails."""
    name = clusters.cluster_name(index)
    workdir = base / name
    plane = controlplane.start(workdir, template)
    cluster = WorkerCluster(name=name, temporal_namespace=NO_TEMPORAL, control_plane=plane)
    try:
        api = controlplane.api_client(plane.kubeconfig)
        layout = vi.find(src)
        created: list[str] = []
        vi.create_crds(api, vi.crd_documents(layout), created)
        install._wait_established(api, created)
        logs = workdir / "logs"
        cluster.controllers.append(_start_webhook(api, plane.kubeconfig, workdir, bin_dir, layout))
        cluster.controllers.extend(
            sbs_volcano.start_controllers(plane.kubeconfig, logs, bin_dir, layout)
        )
        _wait_open(api, cluster, "default")
        clusters.ensure_queue(api, clusters.QUEUE)
        _wait_open(api, cluster, clusters.QUEUE)
    except BaseException:
        clusters.stop(cluster)
        raise
    return cluster


def _start_webhook(
    api: client.ApiClient, kubeconfig: str, workdir: Path, bin_dir: Path, layout: vi.Layout
) -> Process:
    """vc-webhook-manager on a loopback port, the chart's webhook configurations pointed at it;
    returns once a Job only Volcano's validation refuses is refused (a dry run)."""
    certs = webhook.ensure_certs(workdir / "volcano-webhook")
    port = processes.free_port()
    url = f"https://127.0.0.1:{port}"
    vi.create_webhooks(api, vi.render_webhooks(layout, url, (certs / webhook.CA_FILE).read_bytes()))
    argv = [
        str(bin_dir / "vc-webhook-manager"),
        f"--kubeconfig={kubeconfig}",
        "--listen-address=127.0.0.1",
        f"--port={port}",
        f"--webhook-url={url}",
        f"--tls-cert-file={certs / webhook.CERT_FILE}",
        f"--tls-private-key-file={certs / webhook.KEY_FILE}",
        f"--ca-cert-file={certs / webhook.CA_FILE}",
        f"--enabled-admission={layout.admissions}",
        f"--healthz-address=127.0.0.1:{processes.free_port()}",
        "--v=2",
    ]
    hook = processes.start("vc-webhook-manager", argv, workdir / "logs")
    try:
        processes.wait_until(hook, lambda: sbs_volcano.listening(port), 330, "listening")
        sbs_volcano.wait_enforced(api, hook)
    except BaseException:
        processes.stop(hook)
        raise
    return hook


def _wait_open(api: client.ApiClient, cluster: WorkerCluster, queue: str) -> None:
    deadline = time.monotonic() + OPEN_TIMEOUT
    while not _open(api, queue):
        for p in cluster.controllers:
            if not processes.alive(p.pid):
                raise processes.StartupError(
                    f"{cluster.name}: {p.name} exited; log {p.log}:\n{processes.log_tail(p)}"
                )
        if time.monotonic() > deadline:
            raise processes.StartupError(
                f"{cluster.name}: Volcano queue {queue} not Open after {OPEN_TIMEOUT:.0f}s"
            )
        time.sleep(0.5)


def wait_open(api: client.ApiClient, queue: str, timeout: float) -> None:
    """Until the Queue's status says Open (its controller, Volcano's or Caldera's, saw it)."""
    deadline = time.monotonic() + timeout
    while not _open(api, queue):
        if time.monotonic() > deadline:
            raise TimeoutError(f"queue {queue} not Open after {timeout:.0f}s")
        time.sleep(0.5)


def _open(api: client.ApiClient, queue: str) -> bool:
    try:
        found: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", queue
        )
    except client.ApiException:
        return False
    return bool((found.get("status") or {}).get("state") == "Open")

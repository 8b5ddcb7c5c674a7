"""The real Volcano side: Caldera's processes and CRDs out, Volcano's in, and back.

`enter` stops Caldera's worker, forwarder and webhook, replaces Caldera's CRDs with Volcano's
(delete, then create), registers the chart's webhook configurations against a loopback URL,
starts vc-webhook-manager (`--kubeconfig`, `--webhook-url`), then vc-controller-manager and
vc-scheduler (`--kubeconfig --leader-elect=false`, the chart's default scheduler conf), and
returns once the `default` queue is Open. `leave` stops them, removes their webhook
configurations and CRDs and, when another side follows, restores Caldera's CRDs, queues and
processes. Every listener is on 127.0.0.1.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.sidebyside import stack as stacks
from bench.sidebyside import volcano_install as vi
from bench.sidebyside.stack import Stack
from cli.devstack import install, processes, webhook
from cli.devstack.processes import Process


@dataclass
class Installed:
    crds: list[str] = field(default_factory=list)
    webhooks: list[str] = field(default_factory=list)


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _swap_crds(api: client.ApiClient, layout: vi.Layout, done: Installed) -> None:
    caldera = [d["metadata"]["name"] for d in install._documents(install.CRD_DIR)]
    vi.delete_crds(api, caldera)
    docs = vi.crd_documents(layout)
    vi.delete_crds(api, [d["metadata"]["name"] for d in docs])  # leftovers of an earlier run
    vi.create_crds(api, docs, done.crds)
    install._wait_established(api, done.crds)


def _start_webhook(stack: Stack, bin_dir: Path, layout: vi.Layout, done: Installed) -> Process:
    api = stack.api()
    certs = webhook.ensure_certs(stack.workdir / "volcano-webhook")
    port = processes.free_port()
    url = f"https://127.0.0.1:{port}"
    docs = vi.render_webhooks(layout, url, (certs / webhook.CA_FILE).read_bytes())
    vi.create_webhooks(api, docs)
    done.webhooks = [d["metadata"]["name"] for d in docs]
    argv = [
        str(bin_dir / "vc-webhook-manager"),
        f"--kubeconfig={stack.kubeconfig}",
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
    hook = processes.start("vc-webhook-manager", argv, stack.logs())
    stack.extra.append(hook)
    processes.wait_until(hook, lambda: listening(port), 330, "listening")
    wait_enforced(api, hook)
    return hook


def _refused(api: client.ApiClient) -> bool:
    """A dry-run Job whose minAvailable exceeds its replicas: only Volcano's webhook refuses."""
    probe: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "sidebyside-webhook-probe", "namespace": "default"},
        "spec": {
            "minAvailable": 5,
            "tasks": [
                {
                    "name": "t",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    }
    try:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", "default", "jobs", probe, dry_run="All"
        )
    except client.ApiException as e:
        return "minAvailable" in str(e.body) or "denied the request" in str(e.body)
    return False


def wait_enforced(api: client.ApiClient, hook: Process) -> None:
    processes.wait_until(hook, lambda: _refused(api), 60, "enforcing (dry-run probe refused)")


def start_controllers(
    kubeconfig: str, logs: Path, bin_dir: Path, layout: vi.Layout
) -> list[Process]:
    """Volcano's controller-manager and scheduler on a control plane, each on free ports."""
    common = [f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--v=2"]
    started: list[Process] = []
    for name, extra in (
        ("vc-controller-manager", []),
        ("vc-scheduler", [f"--scheduler-conf={layout.scheduler_conf}"]),
    ):
        argv = [
            str(bin_dir / name),
            *common,
            *extra,
            f"--listen-address=127.0.0.1:{processes.free_port()}",
            f"--healthz-address=127.0.0.1:{processes.free_port()}",
        ]
        started.append(processes.start(name, argv, logs))
    return started


def _controllers(stack: Stack, bin_dir: Path, layout: vi.Layout) -> list[Process]:
    started = start_controllers(stack.kubeconfig, stack.logs(), bin_dir, layout)
    stack.extra.extend(started)
    return started


def _queue_open(api: client.ApiClient) -> bool:
    try:
        queue: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", "default"
        )
    except client.ApiException:
        return False
    return bool((queue.get("status") or {}).get("state") == "Open")


def enter(stack: Stack, bin_dir: Path, src: Path, done: Installed) -> None:
    """Caldera out, Volcano in; ready when this returns. `done` records what is installed as
    it goes, so the caller's `leave` removes it again even after a failure."""
    layout = vi.find(src)
    stacks.stop_caldera(stack)
    api = stack.api()
    _swap_crds(api, layout, done)
    _start_webhook(stack, bin_dir, layout, done)
    started = _controllers(stack, bin_dir, layout)
    deadline = time.monotonic() + 180
    while not _queue_open(api):
        for p in started:
            if not processes.alive(p.pid):
                raise processes.StartupError(
                    f"{p.name} exited; log {p.log}:\n{processes.log_tail(p)}"
                )
        if time.monotonic() > deadline:
            raise processes.StartupError("Volcano's default queue not Open after 180s")
        time.sleep(1)


def leave(stack: Stack, done: Installed, restore: bool) -> None:
    """Stop Volcano's processes, remove its webhooks and CRDs; then Caldera back if asked."""
    for p in reversed(stack.extra):
        processes.stop(p)
    stack.extra = []
    api = stack.api()
    vi.delete_webhooks(api, done.webhooks)
    vi.delete_webhooks(api)  # any a manager of another version registered itself
    if done.crds:
        vi.delete_crds(api, done.crds)
    if restore:
        install.install(api)
        stacks.start_caldera(stack)

"""Caldera's own processes on a stack: the worker, the watch-forwarder and the admission webhook.

By default pods are handed to kube-scheduler (`CALDERA_SCHEDULER_OVERRIDE=default-scheduler`)
and the PodGroup gate is skipped; set `scheduler_override=None` for Volcano's gate and Caldera's
gang scheduler: pods wait for an Inqueue PodGroup, a SchedulerWorkflow session places the gang,
and the next session's activity binds it (`bind_session` when it has volumes to bind).

The worker and the forwarder serve Prometheus metrics on loopback
(`service/metrics_endpoint.py`): on the ports asked for when they are free (the dev stack asks
for the defaults, 9464 and 9465), else on free ones; each `Process` records its URL.

The worker reads the gang scheduler's configuration from `<log_dir>/../volcano-scheduler.conf`
(`scheduler_conf_path`), so a stack's scheduler is reconfigured by editing that file.

The webhook (`caldera webhook`) serves on a free loopback port with certificates kept beside
the logs (`<log_dir>/../webhook`); once it listens, its ValidatingWebhookConfiguration is
registered (replacing the one of an earlier start) and `start` returns only when the apiserver
enforces it, so the first Job submitted afterwards is already checked. Stopping the webhook
withdraws the registration (`--withdraw-on-exit`): under `failurePolicy: Fail` a registration
without its process would refuse every Job, PodGroup, Queue, JobFlow and CronJob write.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

from activities.scheduler import scheduler_conf
from admission import server as admission_server
from cli.devstack import controlplane, processes, webhook
from cli.devstack.processes import Process
from scheduling.framework import conf
from service import metrics_endpoint

DEFAULT_SCHEDULER_OVERRIDE: Final = "default-scheduler"
WORKER_ARGV: Final = (sys.executable, "-m", "worker")
FORWARDER_ARGV: Final = (sys.executable, "-m", "cli.main", "forwarder")
# The processes' own defaults, which the dev stack asks for (a busy one moves to a free port).
DEFAULT_METRICS_PORTS: Final = (metrics_endpoint.WORKER_PORT, metrics_endpoint.FORWARDER_PORT)


def start(
    kubeconfig: str,
    temporal_address: str,
    log_dir: Path,
    scheduler_override: str | None = DEFAULT_SCHEDULER_OVERRIDE,
    webhook_port: int | None = None,  # None: a free port
    metrics_ports: tuple[int, int] | None = None,  # worker's, forwarder's; None: free ports
) -> list[Process]:
    """Start the worker, the forwarder and the webhook; returns them in that order."""
    env = environment(kubeconfig, temporal_address, scheduler_override, log_dir)
    cert_dir = webhook.ensure_certs(log_dir.parent / "webhook")
    port = webhook_port or processes.free_port()
    wanted = metrics_ports or (None, None)
    worker = _with_metrics("worker", WORKER_ARGV, log_dir, env, wanted[0])
    started = [worker]
    try:
        forwarder = _with_metrics("forwarder", FORWARDER_ARGV, log_dir, env, wanted[1])
        started.append(forwarder)
        hook = processes.start("webhook", _webhook_argv(kubeconfig, port, cert_dir), log_dir, env)
        started.append(hook)
        ready = (
            (worker, "worker started"),
            (forwarder, "leader elected"),
            (hook, admission_server.READY_LINE),
        )
        for p, line in ready:
            processes.wait_until(p, _logged(p, line), 60, "ready")
        api = controlplane.api_client(kubeconfig)
        webhook.register(api, webhook.local_configuration(port, cert_dir))
        webhook.wait_enforced(api)
    except BaseException:
        for p in reversed(started):
            processes.stop(p)
        raise
    return started


def scheduler_conf_path(log_dir: Path) -> Path:
    """The stack's volcano-scheduler.conf, beside the logs; written with Caldera's defaults
    the first time, then left to the user: the worker picks up an edit at its next session."""
    path = log_dir.parent / "volcano-scheduler.conf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(conf.CALDERA_DEFAULT)
    return path


def environment(
    kubeconfig: str,
    temporal_address: str,
    scheduler_override: str | None,
    log_dir: Path,
    temporal_namespace: str | None = None,  # None: as this process has it (`default`)
) -> dict[str, str]:
    env = {
        "KUBECONFIG": kubeconfig,
        "TEMPORAL_ADDRESS": temporal_address,
        "CALDERA_SCHEDULER_OVERRIDE": scheduler_override or "",
        scheduler_conf.ENV_CONF: str(scheduler_conf_path(log_dir)),
    }
    if temporal_namespace is not None:  # a worker cluster's own (cli/devstack/clusters.py)
        env["TEMPORAL_NAMESPACE"] = temporal_namespace
    return env


def start_worker(
    kubeconfig: str,
    temporal_address: str,
    log_dir: Path,
    scheduler_override: str | None,
    temporal_namespace: str | None = None,
) -> Process:
    """Another worker (e.g. after one was killed), ready when this returns."""
    env = environment(kubeconfig, temporal_address, scheduler_override, log_dir, temporal_namespace)
    return _start_ready("worker", WORKER_ARGV, log_dir, env, "worker started")


def start_forwarder(
    kubeconfig: str,
    temporal_address: str,
    log_dir: Path,
    scheduler_override: str | None,
    leading: bool = True,
    temporal_namespace: str | None = None,
) -> Process:
    """Another forwarder (e.g. after one was killed): leading when this returns, or (not
    `leading`) leading or standing by."""
    env = environment(kubeconfig, temporal_address, scheduler_override, log_dir, temporal_namespace)
    lines = ("leader elected",) if leading else ("leader elected", "standing by")
    return _start_ready("forwarder", FORWARDER_ARGV, log_dir, env, *lines)


def _start_ready(
    name: str, argv: tuple[str, ...], log_dir: Path, env: dict[str, str], *lines: str
) -> Process:
    """Started, and ready once its log shows any of `lines`."""
    started = _with_metrics(name, argv, log_dir, env, None)

    def ready() -> bool:
        text = processes.log_text(started)
        return any(line in text for line in lines)

    processes.wait_until(started, ready, 60, "ready")
    return started


def _with_metrics(
    name: str, argv: tuple[str, ...], log_dir: Path, env: dict[str, str], port: int | None
) -> Process:
    """Start `argv` serving metrics on loopback: `port` if free (None: any free port)."""
    if port is None or not processes.port_free(port):
        port = processes.free_port()
    address = f"127.0.0.1:{port}"
    started = processes.start(name, [*argv, f"--metrics-address={address}"], log_dir, env)
    return started.model_copy(update={"metrics_url": metrics_endpoint.url(address)})


def _webhook_argv(kubeconfig: str, port: int, cert_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cli.main",
        "webhook",
        "--bind=127.0.0.1",
        f"--port={port}",
        f"--cert={cert_dir / webhook.CERT_FILE}",
        f"--key={cert_dir / webhook.KEY_FILE}",
        f"--kubeconfig={kubeconfig}",
        "--withdraw-on-exit",
    ]


def _logged(p: Process, line: str) -> Callable[[], bool]:
    return lambda: line in processes.log_text(p)

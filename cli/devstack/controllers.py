"""Caldera's own processes on a stack: the worker and the watch-forwarder.

Until Caldera's gang scheduler exists, pods are handed to kube-scheduler
(`CALDERA_SCHEDULER_OVERRIDE=default-scheduler`) and the PodGroup gate is skipped; set
`scheduler_override=None` to get Volcano's gate (pods wait for an Inqueue PodGroup).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

from cli.devstack import processes
from cli.devstack.processes import Process

DEFAULT_SCHEDULER_OVERRIDE: Final = "default-scheduler"


def start(
    kubeconfig: str,
    temporal_address: str,
    log_dir: Path,
    scheduler_override: str | None = DEFAULT_SCHEDULER_OVERRIDE,
) -> list[Process]:
    env = {
        "KUBECONFIG": kubeconfig,
        "TEMPORAL_ADDRESS": temporal_address,
        "CALDERA_SCHEDULER_OVERRIDE": scheduler_override or "",
    }
    worker = processes.start("worker", [sys.executable, "-m", "worker"], log_dir, env)
    forwarder = processes.start(
        "forwarder", [sys.executable, "-m", "cli.main", "forwarder"], log_dir, env
    )
    started = [worker, forwarder]
    try:
        for p, line in ((worker, "worker started"), (forwarder, "leader elected")):
            processes.wait_until(p, _logged(p, line), 60, "ready")
    except BaseException:
        for p in reversed(started):
            processes.stop(p)
        raise
    return started


def _logged(p: Process, line: str) -> Callable[[], bool]:
    return lambda: line in _log(p)


def _log(p: Process) -> str:
    try:
        return Path(p.log).read_text(errors="replace")
    except OSError:
        return ""

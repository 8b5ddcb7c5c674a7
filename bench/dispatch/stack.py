"""A dispatch run's stack as the phases share it: the manager and its worker clusters (`Run`),
reads of their Volcano Jobs and pods that a dead apiserver cannot hold up, the processes' CPU,
and an apiserver restarted. The phases (`run.py`, `soak.py`, `volcano_checks.py`,
`leftovers.py`) build on it, not on each other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from kubernetes import client

from bench.dispatch import report
from bench.sidebyside import stack as stacks
from bench.sidebyside.stack import Stack
from cli.devstack import clusters, controlplane, processes
from cli.devstack.clusters import WorkerCluster

DISPATCH_QUEUE: Final = clusters.QUEUE


REQUEST_TIMEOUT: Final = 5.0  # a read of a dead apiserver must not hold the poll loop


class Run:
    """The manager stack and the worker clusters, as they are now (a restarted apiserver is a
    new process: `workers` always holds the PIDs to stop)."""

    def __init__(self, stack: Stack, workers: list[WorkerCluster]) -> None:
        self.stack = stack
        self.workers = workers
        self.manager = stack.api()

    def worker_api(self, index: int) -> client.ApiClient:
        """A fresh client: one that talked to a killed apiserver may hold dead connections."""
        return controlplane.api_client(self.workers[index].kubeconfig)


def cpu_snapshot(run: Run) -> dict[str, float]:
    """CPU seconds so far by role: `manager/<process>`, `workers/<process>` (all worker
    clusters summed) and the shared Temporal server's processes by name."""
    snap: dict[str, float] = {}
    shared = {p.pid for p in run.stack.temporal.processes}
    for p in run.stack.processes():
        key = p.name if p.pid in shared else f"manager/{p.name}"
        report.add(snap, key, stacks.cpu_seconds(p.pid))
    for w in run.workers:
        for p in w.processes:
            report.add(snap, f"workers/{p.name}", stacks.cpu_seconds(p.pid))
    return snap


def volcano_jobs(api: client.ApiClient, namespace: str) -> list[dict[str, Any]] | None:
    """The namespace's Volcano Jobs as plain mappings; None when the apiserver does not answer."""
    custom = client.CustomObjectsApi(api)
    try:
        response: Any = custom.list_namespaced_custom_object(
            "batch.volcano.sh",
            "v1alpha1",
            namespace,
            "jobs",
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
    except Exception:
        return None
    items: list[dict[str, Any]] = json.loads(response.data)["items"] or []
    return items


def pod_count(api: client.ApiClient, namespace: str) -> int | None:
    try:
        listed = client.CoreV1Api(api).list_namespaced_pod(
            namespace, _request_timeout=REQUEST_TIMEOUT
        )
    except Exception:
        return None
    return len(listed.items)


def poll_until(
    read: Callable[[], Iterable[str]],
    wanted: set[str],
    deadline: float,
    poll: float,
    seen: dict[str, float] | None = None,
) -> dict[str, float]:
    """name -> time.time() a poll first found it among `read()`'s, until every one of `wanted`
    is seen or `deadline` (monotonic) passes."""
    seen = {} if seen is None else seen
    while True:
        now = time.time()
        report.first_seen(seen, now, (n for n in read() if n in wanted))
        if wanted <= seen.keys() or time.monotonic() > deadline:
            return seen
        time.sleep(poll)


def in_phase(job: dict[str, Any], phase: str = "Running") -> bool:
    return bool(((job.get("status") or {}).get("state") or {}).get("phase") == phase)


def status_of(job: dict[str, Any]) -> str:
    return json.dumps(job.get("status") or {}, sort_keys=True)


def annotations_of(job: dict[str, Any]) -> dict[str, str]:
    return dict(job["metadata"].get("annotations") or {})


def restart_apiserver(cluster: WorkerCluster) -> WorkerCluster:
    """`clusters.start_apiserver`'s restart, but a process that never gets ready is stopped
    by its PID here (`start_apiserver` would leave it running and unrecorded)."""
    old = cluster.apiserver()
    again = processes.start(old.name, old.argv, Path(old.log).parent, old.env)
    try:
        processes.wait_until(
            again,
            lambda: processes.http_ok(f"{cluster.server}/readyz", insecure=True),
            clusters.READY_TIMEOUT,
            "ready",
        )
    except BaseException:
        processes.stop(again)
        raise
    renewed = [again if p.pid == old.pid else p for p in cluster.control_plane.processes]
    plane = cluster.control_plane.model_copy(update={"processes": renewed})
    return cluster.model_copy(update={"control_plane": plane})

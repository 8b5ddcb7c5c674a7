"""A pod watch on the side's namespace: when each pod was first seen Running, by this
machine's clock (sub-second, unlike the objects' one-second timestamps), and how the
namespace's pods stand now (the run's timeline and its end, read without listing them).

Raw watch lines (plain JSON, no typed objects); reconnects every few seconds from the last
resourceVersion, and relists after 410 Gone (pods first seen then get the relist's time).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Final

from kubernetes import client
from kubernetes.watch.watch import iter_resp_lines

from bench.sidebyside import observe
from cli.devstack import controlplane

RECONNECT: Final = 5  # seconds per watch request


class PodWatch:
    def __init__(self, kubeconfig: str, namespace: str) -> None:
        self._api = controlplane.api_client(kubeconfig)
        self._core = client.CoreV1Api(self._api)
        self._namespace = namespace
        self._stop = threading.Event()
        self.running: dict[str, tuple[str, float]] = {}  # pod uid -> (job, first seen Running)
        self._now: dict[str, observe.Standing] = {}  # pod uid -> how it stands, while it exists
        self._lock = threading.Lock()
        self.errors = 0
        self._rv = self._relist()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _relist(self) -> str:
        response: Any = self._core.list_namespaced_pod(self._namespace, _preload_content=False)
        doc = json.loads(response.data)
        now = time.time()
        with self._lock:
            self._now.clear()
        for pod in doc["items"] or []:
            self._see(pod, now)
        return str(doc["metadata"]["resourceVersion"])

    def _see(self, pod: dict[str, Any], now: float) -> None:
        uid = pod["metadata"]["uid"]
        running = (pod.get("status") or {}).get("phase") == "Running"
        job = observe.owner(pod)
        if uid not in self.running and running:
            self.running[uid] = (job, now)
        with self._lock:
            self._now[uid] = observe.Standing(
                job, bool((pod.get("spec") or {}).get("nodeName")), running
            )

    def _gone(self, pod: dict[str, Any]) -> None:
        with self._lock:
            self._now.pop(pod["metadata"]["uid"], None)

    def standing(self) -> list[observe.Standing]:
        """The namespace's pods as last seen."""
        with self._lock:
            return list(self._now.values())

    def _once(self) -> None:
        response: Any = self._core.list_namespaced_pod(
            self._namespace,
            watch=True,
            resource_version=self._rv,
            allow_watch_bookmarks=True,
            timeout_seconds=RECONNECT,
            _preload_content=False,
        )
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if not line:
                    continue
                event = json.loads(line)
                obj = event["object"]
                if event["type"] == "ERROR":
                    self._rv = self._relist()  # 410 Gone: our resourceVersion is too old
                    return
                self._rv = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    self._see(obj, time.time())
                elif event["type"] == "DELETED":
                    self._gone(obj)
                if self._stop.is_set():
                    return
        finally:
            response.release_conn()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._once()
            except Exception:  # a broken connection: count it, reconnect
                self.errors += 1
                time.sleep(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=RECONNECT + 5)
        self._api.close()  # type: ignore[no-untyped-call]

    def figures(self, created: dict[str, float], expected: dict[str, int], start: float) -> Any:
        """Job create (when the client's create returned) → its last pod seen Running, and the
        makespan: the first create → the last target pod seen Running."""
        seen: dict[str, list[float]] = {}
        for job, at in self.running.values():
            seen.setdefault(job, []).append(at)
        values = [
            max(seen[name]) - created[name]
            for name, replicas in expected.items()
            if name in created and len(seen.get(name, [])) >= replicas
        ]
        done = len(values) == len(expected)
        last = max((max(seen[n]) for n in expected if n in seen), default=None)
        return {
            "makespan_watch_s": round(last - start, 2) if done and last else None,
            "latency_watch_p50_s": observe.percentile(values, 0.50),
            "latency_watch_p99_s": observe.percentile(values, 0.99),
            "watch_reconnect_errors": self.errors,
        }

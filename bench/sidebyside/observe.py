"""Watching a side's run: its pods every second (as a watch has them) until the target is
reached, then the figures read from the objects (pod Running times against the job's
creationTimestamp)."""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from kubernetes import client

from bench.sidebyside import workload


class Standing(NamedTuple):
    """How one pod stands, as a watch last saw it."""

    job: str  # the owning Job's name
    bound: bool  # spec.nodeName set
    running: bool  # status.phase Running


@dataclass
class Watch:
    """What a run must reach: `pods` Running at once and `failing` jobs in Failed."""

    label: str  # the side, for progress lines
    namespace: str
    volcano_api: bool  # Volcano Jobs (else batch/v1 Jobs)
    pods: int
    failing: int
    timeline: list[dict[str, float]] = field(default_factory=list)


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _items(response: Any) -> list[dict[str, Any]]:
    """Plain mappings (thousands of typed objects would cost more than the reading)."""
    items: list[dict[str, Any]] = json.loads(response.data)["items"] or []
    return items


def count(response: Any) -> int:
    """How many objects a list of `limit=1` stands for: its page and what the apiserver says
    remains. A poll that counts this way costs the apiserver one object, not the namespace's
    thousands (whose serialising every second would be charged to the side measured)."""
    doc = json.loads(response.data)
    return len(doc["items"] or []) + int(doc["metadata"].get("remainingItemCount") or 0)


def pod_list(api: client.ApiClient, namespace: str, **query: Any) -> Any:
    return client.CoreV1Api(api).list_namespaced_pod(namespace, _preload_content=False, **query)


def pods(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    return _items(pod_list(api, namespace))


def resource_claim_list(api: client.ApiClient, namespace: str, **query: Any) -> Any:
    resource = client.ResourceV1Api(api)
    return resource.list_namespaced_resource_claim(namespace, _preload_content=False, **query)


def resource_claims(api: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    return _items(resource_claim_list(api, namespace))


def claim_template_list(api: client.ApiClient, namespace: str, **query: Any) -> Any:
    resource = client.ResourceV1Api(api)
    return resource.list_namespaced_resource_claim_template(
        namespace, _preload_content=False, **query
    )


def claim_figures(claims: list[dict[str, Any]]) -> dict[str, int]:
    """How the claims stand: a pod Running on an unallocated claim, or two claims on one
    device, would mean a scheduler ignored DRA (kwok runs a pod whatever its claims say)."""
    allocated = reserved = results = 0
    taken: set[tuple[str, str, str]] = set()
    for claim in claims:
        status = claim.get("status") or {}
        found = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        allocated += bool(found)
        reserved += bool(status.get("reservedFor"))
        results += len(found)
        taken |= {(r["driver"], r["pool"], r["device"]) for r in found}
    return {
        "claims": len(claims),
        "allocated": allocated,
        "reserved": reserved,
        "devices": results,
        "distinct_devices": len(taken),
    }


def job_list(api: client.ApiClient, namespace: str, volcano_api: bool, **query: Any) -> Any:
    if volcano_api:
        return client.CustomObjectsApi(api).list_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", namespace, "jobs", _preload_content=False, **query
        )
    return client.BatchV1Api(api).list_namespaced_job(namespace, _preload_content=False, **query)


def jobs(api: client.ApiClient, namespace: str, volcano_api: bool) -> list[dict[str, Any]]:
    return _items(job_list(api, namespace, volcano_api))


def pod_group_list(api: client.ApiClient, namespace: str, **query: Any) -> Any:
    return client.CustomObjectsApi(api).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups", _preload_content=False, **query
    )


def owner(pod: dict[str, Any]) -> str:
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "Job":
            return str(ref["name"])
    return ""


def running_at(pod: dict[str, Any]) -> datetime | None:
    """When the pod became Running: its container's startedAt, else Ready's transition."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return None
    started = [
        parse_time((c.get("state") or {}).get("running", {}).get("startedAt"))
        for c in status.get("containerStatuses") or []
    ]
    if started and all(started):
        return max(s for s in started if s is not None)
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") == "True":
            return parse_time(c.get("lastTransitionTime"))
    return None


def job_failed(job: dict[str, Any], volcano_api: bool) -> bool:
    status = job.get("status") or {}
    if volcano_api:
        return bool((status.get("state") or {}).get("phase") == "Failed")
    return any(
        c.get("type") == "Failed" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _sample(api: client.ApiClient, w: Watch, t0: float, pods: list[Standing]) -> tuple[int, int]:
    running = sum(1 for p in pods if p.running and not p.job.startswith(workload.FAILING_PREFIX))
    failed = 0
    if w.failing:
        failed = sum(
            1 for j in jobs(api, w.namespace, w.volcano_api) if job_failed(j, w.volcano_api)
        )
    w.timeline.append(
        {
            "t": round(time.monotonic() - t0, 2),
            "created": len(pods),
            "bound": sum(1 for p in pods if p.bound),
            "running": running,
            "failed_jobs": failed,
        }
    )
    return running, failed


def wait(
    api: client.ApiClient, w: Watch, t0: float, budget: float, seen: Callable[[], list[Standing]]
) -> dict[str, Any]:
    """Sample every second from t0 (monotonic, the first create) until the target or the
    budget: the pods as a watch has them (`seen`) (a list of every pod each second would load
    the apiserver measured), then the pods listed once at the end."""
    makespan: float | None = None
    failed_at: float | None = None
    while True:
        tick = time.monotonic()
        standing = seen()
        running, failed = _sample(api, w, t0, standing)
        now = time.monotonic() - t0
        if makespan is None and running >= w.pods:
            makespan = now
        if failed_at is None and failed >= w.failing:
            failed_at = now
        if (makespan is not None and failed_at is not None) or now > budget:
            break
        if len(w.timeline) % 15 == 0:
            print(
                f"[{w.label}] {now:6.0f}s: {len(standing)} pods, {running}/{w.pods} Running"
                + (f", {failed}/{w.failing} failing jobs Failed" if w.failing else ""),
                flush=True,
            )
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    return {
        "reached": makespan is not None and failed_at is not None,
        "makespan_poll_s": round(makespan, 2) if makespan is not None else None,
        "failing_jobs_failed_s": round(failed_at, 2) if w.failing and failed_at else None,
        "running_at_end": running,
        "failed_jobs_at_end": failed,
        "pods": pods(api, w.namespace),
    }


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)  # nearest rank
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return round(ordered[index], 2)


def latencies(
    pod_items: list[dict[str, Any]], job_items: list[dict[str, Any]], expected: dict[str, int]
) -> dict[str, Any]:
    """Job creation → all its pods Running, for the jobs that do not fail; plus the makespan
    read from the pods' Running times (both at the timestamps' one-second resolution)."""
    created = {
        j["metadata"]["name"]: parse_time(j["metadata"]["creationTimestamp"]) for j in job_items
    }
    ran: dict[str, list[datetime]] = {}
    for p in pod_items:
        at = running_at(p)
        if at is not None:
            ran.setdefault(owner(p), []).append(at)
    values: list[float] = []
    for name, replicas in expected.items():
        times, start = ran.get(name, []), created.get(name)
        if start is not None and len(times) >= replicas:
            values.append((max(times) - start).total_seconds())
    last = max((t for n in expected for t in ran.get(n, [])), default=None)
    first = min((t for t in created.values() if t is not None), default=None)
    return {
        "jobs_all_running": len(values),
        "latency_p50_s": percentile(values, 0.50),
        "latency_p99_s": percentile(values, 0.99),
        "latency_max_s": round(max(values), 2) if values else None,
        "latency_mean_s": round(statistics.fmean(values), 2) if values else None,
        "last_running_at": last.timestamp() if last else None,
        "first_created_at": first.timestamp() if first else None,
    }

"""A side's clean-up: delete its namespace, then time until its objects are gone and, on the
Caldera sides, until every job workflow of the namespace is closed (capped). A run with
devices also waits for the ResourceClaims (they go with their pods) and the namespace's
ResourceClaimTemplate: the next side finds every GPU free."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from bench.sidebyside import observe, workload
from bench.sidebyside.temporal_stats import Probe, id_prefix


def _namespace_exists(core: client.CoreV1Api, namespace: str) -> bool:
    try:
        core.read_namespace(namespace)
    except client.ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def _counters(
    api: client.ApiClient, side: str, namespace: str, probe: Probe | None, claims: bool = False
) -> dict[str, Callable[[], int | None]]:
    """What must reach zero, each a probe; None: could not be read this time."""
    volcano_api = workload.is_volcano(side)
    one = {"limit": 1}  # counted, not listed: see observe.count
    found: dict[str, Callable[[], int | None]] = {
        "jobs": lambda: observe.count(observe.job_list(api, namespace, volcano_api, **one)),
        "pods": lambda: observe.count(observe.pod_list(api, namespace, **one)),
    }
    if side != "builtin":
        found["podgroups"] = lambda: observe.count(observe.pod_group_list(api, namespace, **one))
    if claims:
        found["resourceclaims"] = lambda: observe.count(
            observe.resource_claim_list(api, namespace, **one)
        )
        found["claimtemplates"] = lambda: observe.count(
            observe.claim_template_list(api, namespace, **one)
        )
    if probe is not None:
        prefix = id_prefix(side, namespace)
        found["open_workflows"] = lambda: _max(
            probe.open_jobs(namespace), probe.open_by_prefix(prefix)
        )
    return found


def _max(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _read(probe: Callable[[], int | None]) -> int | None:
    try:
        return probe()
    except client.ApiException as e:
        return 0 if e.status == 404 else None


def delete_and_wait(
    api: client.ApiClient,
    side: str,
    namespace: str,
    probe: Probe | None,
    timeout: float,
    claims: bool = False,
) -> dict[str, Any]:
    """Delete the namespace; poll every second until everything is gone or `timeout`;
    `claims`: the ResourceClaims and ResourceClaimTemplates too."""
    core = client.CoreV1Api(api)
    counters = _counters(api, side, namespace, probe, claims)
    gone_at: dict[str, float] = {}
    remaining: dict[str, int | None] = {}
    t0 = time.monotonic()
    core.delete_namespace(namespace)
    namespace_gone: float | None = None
    while True:
        now = time.monotonic() - t0
        for name, read in counters.items():
            if name not in gone_at:
                remaining[name] = _read(read)
                if remaining[name] == 0:
                    gone_at[name] = round(now, 2)
        if namespace_gone is None and not _namespace_exists(core, namespace):
            namespace_gone = round(now, 2)
        done = len(gone_at) == len(counters)
        if (done and namespace_gone is not None) or now > timeout:
            break
        time.sleep(1.0)
    capped = len(gone_at) < len(counters)
    return {
        "deletion_s": max(gone_at.values()) if not capped else None,
        "gone_s": gone_at,
        "namespace_gone_s": namespace_gone,
        "capped": capped,
        "timeout_s": timeout,
        "remaining_at_cap": {k: v for k, v in remaining.items() if k not in gone_at},
    }

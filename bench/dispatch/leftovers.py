"""What a soak's Jobs leave behind and what their workflows say: the manager's Jobs deleted
and the time until no copy, pod or DispatchWorkflow of them is left (invariant 3); the
dispatch workflows' histories read back (task failures by `bench.chaos.histories`, and the
`CalderaJobPhase` values each job's workflow upserted, for invariant 1); the Events by reason.

Its own module so the soak's driver (`soak.py`) stays the timeline and the sampler.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any, Final

from kubernetes import client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.converter import PayloadConverter

from bench.chaos import histories
from bench.chaos.invariants import Violation
from bench.dispatch import invariants, stack
from models.dispatch import DISPATCH_WORKFLOW, dispatch_workflow_id
from service import search_attributes

CLEANUP_BUDGET: Final = 300.0  # seconds for copies, pods and workflows to go after deletion
PHASE: Final = search_attributes.JOB_PHASE.name


def _left(run: stack.Run, namespace: str) -> tuple[dict[str, int], dict[str, int]]:
    """Copies and pods of the namespace on each worker cluster (-1: no answer)."""
    copies: dict[str, int] = {}
    pods: dict[str, int] = {}
    for i, w in enumerate(run.workers):
        api = run.worker_api(i)
        found = stack.volcano_jobs(api, namespace)
        copies[w.name] = -1 if found is None else len(found)
        counted = stack.pod_count(api, namespace)
        pods[w.name] = -1 if counted is None else counted
        api.close()  # type: ignore[no-untyped-call]
    return copies, pods


async def _open_dispatches(address: str, prefix: str) -> int:
    temporal = await Client.connect(address)
    query = f"WorkflowType = '{DISPATCH_WORKFLOW}' AND ExecutionStatus = 'Running'"
    return len([w async for w in temporal.list_workflows(query) if w.id.startswith(prefix)])


def cleanup(run: stack.Run, namespace: str, poll: float) -> tuple[dict[str, Any], list[Violation]]:
    """Delete every manager Job of `namespace`; seconds until no copy, no pod and no running
    DispatchWorkflow of them is left (what remains at CLEANUP_BUDGET is a violation)."""
    prefix = dispatch_workflow_id(namespace, "")
    custom = client.CustomObjectsApi(run.stack.api())
    t0 = time.time()
    custom.delete_collection_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", namespace, "jobs"
    )
    gone: dict[str, float] = {}
    deadline = time.monotonic() + CLEANUP_BUDGET
    copies: dict[str, int] = {}
    pods: dict[str, int] = {}
    running = -1
    while time.monotonic() < deadline:
        copies, pods = _left(run, namespace)
        if "copies" not in gone and not any(copies.values()):
            gone["copies"] = time.time() - t0
        if "pods" not in gone and not any(pods.values()):
            gone["pods"] = time.time() - t0
        running = asyncio.run(_open_dispatches(run.stack.temporal.address, prefix))
        if running == 0:
            gone.setdefault("workflows", time.time() - t0)
        if len(gone) == 3:
            break
        time.sleep(max(1.0, poll))
    found = invariants.left_behind("copies", copies) + invariants.left_behind("pods", pods)
    if running:
        found.append(Violation("left behind", f"{running} DispatchWorkflows"))
    figures = {f"{k}_gone_s": round(v, 1) for k, v in gone.items()}
    return {**figures, "copies_left": copies, "pods_left": pods, "workflows_left": running}, found


async def read(address: str, namespace: str) -> tuple[list[histories.Run], dict[str, list[str]]]:
    """The dispatch workflows' runs (`bench.chaos.histories`), and the phases each job's
    workflow upserted (`CalderaJobPhase`), every run in start order."""
    prefix = dispatch_workflow_id(namespace, "")
    temporal = await Client.connect(address)
    runs_read = await histories.read(temporal, (prefix,))
    converter = PayloadConverter.default
    by_run: list[tuple[Any, str, list[str]]] = []
    query = f"WorkflowType = '{DISPATCH_WORKFLOW}'"
    async for w in temporal.list_workflows(query):
        if not w.id.startswith(prefix):
            continue
        upserted: list[str] = []
        handle = temporal.get_workflow_handle(w.id, run_id=w.run_id)
        async for e in handle.fetch_history_events():
            if e.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
                continue
            fields = e.upsert_workflow_search_attributes_event_attributes.search_attributes
            if PHASE in fields.indexed_fields:
                upserted.append(str(converter.from_payload(fields.indexed_fields[PHASE])))
        by_run.append((w.start_time, w.id.removeprefix(prefix), upserted))
    phases: dict[str, list[str]] = {}
    for _, job, upserted in sorted(by_run, key=lambda r: r[0]):
        phases.setdefault(job, []).extend(upserted)
    return runs_read, phases


def event_reasons(api: client.ApiClient, namespace: str) -> dict[str, int]:
    """The manager Jobs' Events by reason (an aggregated Event counts its `count`)."""
    events = client.CoreV1Api(api).list_namespaced_event(namespace)
    counts: Counter[str] = Counter()
    for e in events.items:
        counts[e.reason or ""] += e.count or 1
    return dict(sorted(counts.items()))

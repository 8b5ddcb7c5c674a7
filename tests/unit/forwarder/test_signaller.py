"""Delivery against a recording fake client: signal-with-start arguments, order per workflow,
drops for closed workflows, retries for transient errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.service import RPCError, RPCStatusCode

from forwarder import signaller
from forwarder.routing import envelopes
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from models.signals.dispatch import DispatchObserved, DispatchStart
from service import search_attributes

A = envelopes.JobRef("ns", "a")
B = envelopes.JobRef("ns", "b")


class FakeHandle:
    def __init__(self, client: FakeClient, wid: str) -> None:
        self._client, self._wid = client, wid

    async def signal(self, name: str, payload: Any) -> None:
        await self._client.record(("signal", self._wid, name, payload))


class FakeClient:
    def __init__(self, failures: dict[str, list[RPCStatusCode]] | None = None) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self.starts: list[dict[str, Any]] = []
        self.failures = failures or {}  # workflow id → statuses to raise, one per call

    async def record(self, entry: tuple[Any, ...]) -> None:
        await asyncio.sleep(0)  # let other lanes interleave
        pending = self.failures.get(entry[1])
        if pending:
            status = pending.pop(0)
            raise RPCError("injected", status, b"")
        self.sent.append(entry)

    def get_workflow_handle(self, wid: str) -> FakeHandle:
        return FakeHandle(self, wid)

    async def start_workflow(self, workflow: str, arg: Any, **kwargs: Any) -> None:
        self.starts.append({"workflow": workflow, "arg": arg, **kwargs})
        await self.record(
            ("start", kwargs["id"], kwargs["start_signal"], kwargs["start_signal_args"][0])
        )


def deleted(job: envelopes.JobRef, uid: str) -> envelopes.Signal:
    return envelopes.Signal(job, job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid=uid))


async def deliver(client: FakeClient, *outgoing: envelopes.Signal) -> signaller.Signaller:
    start = job_signals.JobStart(settings=job_signals.ControllerSettings(scheduler_override="kube"))
    s = signaller.Signaller(client, start)  # type: ignore[arg-type]
    for sig in outgoing:
        s.submit(sig)
    await s.join()
    return s


async def test_job_observed_is_signal_with_start() -> None:
    client = FakeClient()
    observed = job_signals.JobObserved(job={"metadata": {"name": "a"}})
    await deliver(
        client, envelopes.Signal(A, job_signals.SIGNAL_JOB_OBSERVED, observed, start=True)
    )
    assert client.starts == [
        {
            "workflow": "JobWorkflow",
            "arg": job_signals.JobStart(
                settings=job_signals.ControllerSettings(scheduler_override="kube")
            ),
            "id": "vcjob/ns/a",
            "task_queue": "caldera-controllers",
            "start_signal": "job_observed",
            "start_signal_args": [observed],
            "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
            "id_reuse_policy": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            "static_summary": "Volcano Job ns/a · queue default · 0 pods",
            # Set at the start, as the workflow would set them: it upserts only what differs.
            "search_attributes": TypedSearchAttributes(
                [
                    SearchAttributePair(search_attributes.NAMESPACE, "ns"),
                    SearchAttributePair(search_attributes.JOB_NAME, "a"),
                    SearchAttributePair(search_attributes.QUEUE, ""),
                    SearchAttributePair(search_attributes.JOB_PHASE, "Pending"),
                ]
            ),
        }
    ]


async def test_queue_signals_start_queue_workflow() -> None:
    client = FakeClient()
    observed = queue_signals.QueueObserved(queue={"metadata": {"name": "q1"}})
    child = queue_signals.ChildQueueObserved(name="q1")
    await deliver(
        client,
        envelopes.Signal(
            envelopes.QueueRef("q1"), queue_signals.SIGNAL_QUEUE_OBSERVED, observed, start=True
        ),
        envelopes.Signal(
            envelopes.QueueRef("root"), queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, child, True
        ),
    )
    assert client.starts == [
        {
            "workflow": "QueueWorkflow",
            "arg": queue_signals.QueueStart(),
            "id": f"queue/{name}",
            "task_queue": "caldera-queues",
            "start_signal": signal,
            "start_signal_args": [payload],
            "id_conflict_policy": WorkflowIDConflictPolicy.USE_EXISTING,
            "id_reuse_policy": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            "static_summary": f"Volcano Queue {name}",
            "search_attributes": TypedSearchAttributes.empty,
        }
        for name, signal, payload in (
            ("q1", "queue_observed", observed),
            ("root", "child_queue_observed", child),
        )
    ]


async def test_plain_queue_signal_goes_to_queue_workflow() -> None:
    client = FakeClient()
    gone = queue_signals.QueueDeleted(uid="u")
    await deliver(
        client, envelopes.Signal(envelopes.QueueRef("q1"), queue_signals.SIGNAL_QUEUE_DELETED, gone)
    )
    assert client.sent == [("signal", "queue/q1", "queue_deleted", gone)]
    assert client.starts == []


async def test_signals_keep_order_per_workflow() -> None:
    client = FakeClient()
    outgoing = [deleted(A, "1"), deleted(B, "1"), deleted(A, "2"), deleted(B, "2"), deleted(A, "3")]
    s = await deliver(client, *outgoing)
    for wid in ("vcjob/ns/a", "vcjob/ns/b"):
        uids = [e[3].uid for e in client.sent if e[1] == wid]
        assert uids == sorted(uids)
    assert s.sent == 5


@pytest.mark.parametrize(
    ("status", "delivered"),
    [
        pytest.param(RPCStatusCode.NOT_FOUND, ["2"], id="closed-dropped"),
        pytest.param(RPCStatusCode.UNAVAILABLE, ["1", "2"], id="transient-retried"),
        pytest.param(RPCStatusCode.INVALID_ARGUMENT, ["2"], id="permanent-dropped"),
    ],
)
async def test_failed_signal_then_next_in_lane(
    status: RPCStatusCode, delivered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signaller, "BACKOFF", (0.0, 0.0))
    client = FakeClient({"vcjob/ns/a": [status]})
    await deliver(client, deleted(A, "1"), deleted(A, "2"))
    assert [e[3].uid for e in client.sent] == delivered


@pytest.mark.parametrize(
    ("target", "spec", "expected"),
    [
        (
            envelopes.JobRef("ns", "a"),
            {"queue": "q1", "minAvailable": 3, "tasks": [{"replicas": 1}, {"replicas": 3}]},
            "Volcano Job ns/a · queue q1 · 4 pods, minAvailable 3",
        ),
        (
            envelopes.JobRef("ns", "a"),
            {"tasks": "bad"},
            "Volcano Job ns/a · queue default · 0 pods",
        ),
        (
            envelopes.BatchJobRef("ns", "b"),
            {"parallelism": 2, "completions": 10},
            "Kubernetes Job ns/b · parallelism 2, completions 10",
        ),
        (envelopes.BatchJobRef("ns", "b"), {}, "Kubernetes Job ns/b · parallelism 1"),
    ],
)
def test_summary_says_queue_and_size(
    target: envelopes.Target, spec: dict[str, object], expected: str
) -> None:
    observed = job_signals.JobObserved(job={"metadata": {"name": "x"}, "spec": spec})
    assert signaller.summary(target, observed) == expected


def _attributes(target: envelopes.Target, job: dict[str, object]) -> dict[str, str]:
    found = signaller.start_attributes(target, job_signals.JobObserved(job=job))
    return {pair.key.name: pair.value for pair in found}


@pytest.mark.parametrize(
    ("target", "status", "phase"),
    [
        pytest.param(envelopes.JobRef("ns", "a"), None, "Pending", id="vcjob-new"),
        pytest.param(envelopes.JobRef("ns", "a"), {"state": {}}, "Pending", id="vcjob-no-phase"),
        pytest.param(
            envelopes.JobRef("ns", "a"),
            {"state": {"phase": "Running"}},
            "Running",
            id="vcjob-running",
        ),
        pytest.param(
            envelopes.JobRef("ns", "a"), {"state": "bad"}, "Pending", id="vcjob-malformed"
        ),
        pytest.param(envelopes.BatchJobRef("ns", "b"), None, "Pending", id="batch-new"),
        pytest.param(
            envelopes.BatchJobRef("ns", "b"),
            {"startTime": "2025-01-01T00:00:00Z"},
            "Running",
            id="batch-started",
        ),
        pytest.param(
            envelopes.BatchJobRef("ns", "b"),
            {"conditions": [{"type": "Complete", "status": "True"}]},
            "Complete",
            id="batch-complete",
        ),
        pytest.param(
            envelopes.BatchJobRef("ns", "b"), {"conditions": "bad"}, None, id="batch-malformed"
        ),
    ],
)
def test_start_attributes_carry_the_first_phase(
    target: envelopes.Target, status: dict[str, object] | None, phase: str | None
) -> None:
    """The phase the workflow shows first is set in the start request, so the workflow's
    upsert of it finds nothing to change and records no event."""
    job: dict[str, object] = {"metadata": {"name": "x"}, "spec": {"queue": "q1"}}
    if status is not None:
        job["status"] = status
    assert _attributes(target, job).get(search_attributes.JOB_PHASE.name) == phase


def test_start_attributes_of_a_cron_job_or_another_payload_have_no_phase() -> None:
    cron = signaller.start_attributes(
        envelopes.CronJobRef("ns", "c"), job_signals.JobObserved(job={})
    )
    assert search_attributes.JOB_PHASE.name not in {p.key.name for p in cron}
    gone = signaller.start_attributes(
        envelopes.JobRef("ns", "a"), common_signals.JobDeleted(uid="u")
    )
    assert search_attributes.JOB_PHASE.name not in {p.key.name for p in gone}


def test_summary_fits_temporal_limit() -> None:
    assert len(signaller.summary(envelopes.JobRef("n" * 63, "j" * 253)).encode()) <= 200
    assert len(signaller.summary(envelopes.QueueRef("q" * 253)).encode()) <= 200


@pytest.mark.parametrize(
    ("status", "delivered"),
    [
        pytest.param(RPCStatusCode.UNAVAILABLE, ["1", "2"], id="server-down-waited-for"),
        pytest.param(RPCStatusCode.DEADLINE_EXCEEDED, ["2"], id="busy-server-given-up"),
    ],
)
async def test_a_server_down_longer_than_the_retries_loses_nothing(
    status: RPCStatusCode, delivered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (chaos soak): a Temporal server down for longer than the retries lost the
    signals of that time, a pod's deletion among them."""
    monkeypatch.setattr(signaller, "BACKOFF", (0.0, 0.0))
    client = FakeClient({"vcjob/ns/a": [status] * (signaller.MAX_ATTEMPTS + 3)})
    await deliver(client, deleted(A, "1"), deleted(A, "2"))
    assert [e[3].uid for e in client.sent] == delivered


async def test_dispatched_job_starts_its_dispatch_workflow() -> None:
    client = FakeClient()
    ref = envelopes.DispatchRef("ns", "a")
    observed = DispatchObserved(job={"metadata": {"name": "a"}, "spec": {"queue": "multi"}})
    await deliver(client, envelopes.Signal(ref, job_signals.SIGNAL_JOB_OBSERVED, observed, True))
    (start,) = client.starts
    assert start["workflow"] == "DispatchWorkflow" and start["id"] == "dispatch/ns/a"
    assert start["arg"] == DispatchStart() and start["task_queue"] == "caldera-controllers"
    assert start["id_reuse_policy"] == WorkflowIDReusePolicy.ALLOW_DUPLICATE
    assert start["static_summary"] == "Volcano Job ns/a dispatched to a worker cluster"
    assert start["search_attributes"] == TypedSearchAttributes(
        [
            SearchAttributePair(search_attributes.NAMESPACE, "ns"),
            SearchAttributePair(search_attributes.JOB_NAME, "a"),
            SearchAttributePair(search_attributes.QUEUE, "multi"),
        ]
    )

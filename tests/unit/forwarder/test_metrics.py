"""What the forwarder counts: watch events per kind, relists by reason, signals sent or dropped,
and the lag from a watch event's receipt to its signal's acceptance (through the coalescer)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
from temporalio.runtime import BufferedMetricUpdate, MetricBuffer, Runtime, TelemetryConfig
from temporalio.service import RPCStatusCode

from forwarder import pipeline, signaller
from forwarder.meters import Meters
from forwarder.routing import coalesce, envelopes
from models.signals import common as common_signals
from models.signals import job as job_signals
from service import metrics
from tests.unit.forwarder import job, pod
from tests.unit.forwarder.test_pipeline import Sender
from tests.unit.forwarder.test_signaller import FakeClient, deleted

K = envelopes.Kind
A = envelopes.JobRef("ns", "a")


class Recorder:
    """The forwarder's instruments on a runtime that buffers updates instead of exporting."""

    def __init__(self) -> None:
        self.buffer = MetricBuffer(100_000)
        self.runtime = Runtime(telemetry=TelemetryConfig(metrics=self.buffer))
        self.meters = Meters(self.runtime.metric_meter)

    def take(self, metric: metrics.Metric, *labels: str) -> list[tuple[Any, ...]]:
        """(value, label values...) of each update of `metric` since the last take."""
        updates: Sequence[BufferedMetricUpdate] = self.buffer.retrieve_updates()
        return [
            (u.value, *(u.attributes.get(label) for label in labels))
            for u in updates
            if u.metric.name == metric.name
        ]


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def rec(recorder: Recorder) -> Recorder:
    recorder.buffer.retrieve_updates()  # start empty
    return recorder


def _term(rec: Recorder) -> tuple[pipeline.Pipeline, Sender]:
    sender = Sender()
    delete = lambda ns, name, uid: True  # noqa: E731
    term = pipeline.Pipeline({}, delete, sender, 60, rec.meters)  # type: ignore[arg-type]
    return term, sender


async def test_events_counted_per_kind_and_type(rec: Recorder) -> None:
    term, _ = _term(rec)
    await term._handle(envelopes.Relisted(K.JOB, [job("a", "u1"), job("b", "u2")]))
    await term._handle(envelopes.Observed(K.JOB, "MODIFIED", job("a", "u1", phase="Running")))
    await term._handle(envelopes.Observed(K.POD, "ADDED", pod()))
    assert rec.take(metrics.FORWARDER_EVENTS, "kind", "type") == [
        (2, "jobs", "LISTED"),
        (1, "jobs", "MODIFIED"),
        (1, "pods", "ADDED"),
    ]


async def test_first_list_is_initial_and_a_later_one_expired(rec: Recorder) -> None:
    term, _ = _term(rec)
    await term._handle(envelopes.Relisted(K.JOB, [job("a", "u1")]))
    await term._handle(envelopes.Relisted(K.POD, []))
    await term._handle(envelopes.Relisted(K.JOB, [job("a", "u1")]))  # the watch hit 410 Gone
    assert rec.take(metrics.FORWARDER_RELISTS, "kind", "reason") == [
        (1, "jobs", "initial"),
        (1, "pods", "initial"),
        (1, "jobs", "expired"),
    ]
    again, _ = _term(rec)  # a new leadership term lists afresh
    await again._handle(envelopes.Relisted(K.JOB, []))
    assert rec.take(metrics.FORWARDER_RELISTS, "kind", "reason") == [(1, "jobs", "initial")]


async def test_signals_carry_the_receipt_time_of_their_watch_event(rec: Recorder) -> None:
    term, sender = _term(rec)
    item = envelopes.Observed(K.JOB, "ADDED", job("a", "u1"), received=100.0)
    await term._handle(item)
    (observed,) = sender.signals
    assert observed.name == job_signals.SIGNAL_JOB_OBSERVED
    assert observed.received == 100.0


def test_a_batch_keeps_the_oldest_receipt_time() -> None:
    c = coalesce.Coalescer(delay=0.2)
    snap = job_signals.PodSnapshot(name="p0", uid="u0", task="w")
    later = job_signals.PodSnapshot(name="p1", uid="u1", task="w")
    c.add(envelopes.PodUpdate(A, snap), now=10.0, received=9.5)
    c.add(envelopes.PodUpdate(A, later), now=10.1, received=10.05)
    (batch,) = c.due(11.0)
    assert batch.name == job_signals.SIGNAL_PODS_CHANGED
    assert batch.received == 9.5


def test_watch_events_are_stamped_when_received() -> None:
    before = time.monotonic()
    item = envelopes.Observed(K.POD, "ADDED", pod())
    assert before <= item.received <= time.monotonic()
    # The stamp is bookkeeping, not content: equal events stay equal.
    assert item == envelopes.Observed(K.POD, "ADDED", pod(), received=0.0)


async def test_sent_signal_counted_with_its_lag(rec: Recorder) -> None:
    s = signaller.Signaller(FakeClient(), job_signals.JobStart(), meters=rec.meters)  # type: ignore[arg-type]
    old = envelopes.Signal(A, job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="1"))
    s.submit(envelopes.Signal(old.target, old.name, old.payload, received=time.monotonic() - 0.5))
    s.submit(deleted(A, "2"))  # no receipt time: counted, no lag sample
    await s.join()
    assert rec.take(metrics.FORWARDER_SIGNALS_SENT, "signal") == [
        (1, "job_deleted"),
        (1, "job_deleted"),
    ]
    s.submit(envelopes.Signal(A, old.name, old.payload, received=time.monotonic() - 0.5))
    await s.join()
    lag = [v for (v, name) in rec.take(metrics.FORWARDER_SIGNAL_LAG, "signal")]
    assert len(lag) == 1 and 0.5 <= lag[0] < 5


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        pytest.param(RPCStatusCode.NOT_FOUND, "closed", id="closed"),
        pytest.param(RPCStatusCode.INVALID_ARGUMENT, "lost", id="lost"),
    ],
)
async def test_undelivered_signal_counted_by_reason(
    rec: Recorder, status: RPCStatusCode, reason: str
) -> None:
    client = FakeClient({"vcjob/ns/a": [status]})
    s = signaller.Signaller(client, job_signals.JobStart(), meters=rec.meters)  # type: ignore[arg-type]
    s.submit(deleted(A, "1"))
    await s.join()
    assert rec.take(metrics.FORWARDER_SIGNALS_DROPPED, "signal", "reason") == [
        (1, "job_deleted", reason)
    ]

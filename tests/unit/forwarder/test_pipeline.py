"""One leadership term with scripted list endpoints and a recording sender: Jobs first, pod
batches flushed on a graceful stop, dropped when the Lease is lost, Commands at most once."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from forwarder import pipeline
from forwarder.routing import envelopes
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.unit.forwarder import command, job, pod, pod_group, queue, queue_owner

K = envelopes.Kind


class IdleStream:
    """A watch that delivers nothing until it is shut down."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        self._closed.wait(10)
        yield from ()

    def shutdown(self) -> None:
        self._closed.set()

    def close(self) -> None:
        self._closed.set()

    def release_conn(self) -> None:
        pass


class Endpoint:
    def __init__(self, items: list[dict[str, Any]], log: list[K], kind: K) -> None:
        self.items, self.log, self.kind = items, log, kind

    def __call__(self, **kwargs: Any) -> Any:
        if kwargs.get("watch"):
            return IdleStream()
        self.log.append(self.kind)
        page = {"items": self.items, "metadata": {"resourceVersion": "1"}}
        return type("Page", (), {"data": json.dumps(page).encode()})()


class Sender:
    def __init__(self) -> None:
        self.signals: list[envelopes.Signal] = []
        self.abandoned = False
        self.sent = 0

    def submit(self, signal: envelopes.Signal) -> None:
        self.signals.append(signal)

    async def join(self) -> None:
        pass

    async def abandon(self) -> None:
        self.abandoned = True

    def names(self) -> list[str]:
        return [s.name for s in self.signals]


async def run_term(
    graceful: bool, deletes: list[bool], objects: dict[K, list[dict[str, Any]]]
) -> tuple[Sender, list[K], list[tuple[str, str, str]]]:
    listed: list[K] = []
    deleted: list[tuple[str, str, str]] = []

    def delete(ns: str, name: str, uid: str) -> bool:
        deleted.append((ns, name, uid))
        return deletes.pop(0)

    sender = Sender()
    calls = {k: Endpoint(objects.get(k, []), listed, k) for k in K}
    term = pipeline.Pipeline(calls, delete, sender, delay=60)  # type: ignore[arg-type]
    halt = asyncio.Event()
    running = asyncio.create_task(term.run(halt))
    for _ in range(500):
        if len(listed) == len(K):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # the last lists reach the router
    halt.set()
    await running
    await term.finish(graceful)
    return sender, listed, deleted


async def test_jobs_listed_first_and_pods_flushed_on_graceful_stop() -> None:
    sender, listed, _ = await run_term(True, [], {K.JOB: [job()], K.POD: [pod()]})
    assert (
        set(listed[: len(pipeline.FIRST)])
        == pipeline.FIRST
        == {K.JOB, K.QUEUE, K.BATCH_JOB, K.CRON_JOB}
    )
    # The full list of pods ends with each Job hearing which of its pods exist: its pending
    # batch goes first.
    assert sender.names() == [
        job_signals.SIGNAL_JOB_OBSERVED,
        job_signals.SIGNAL_PODS_CHANGED,
        job_signals.SIGNAL_PODS_LISTED,
    ]
    assert not sender.abandoned


async def test_lease_lost_drops_pending_batches() -> None:
    sender = Sender()
    calls = {k: Endpoint([], [], k) for k in K}
    term = pipeline.Pipeline(calls, lambda *_: True, sender, delay=60)  # type: ignore[arg-type]
    # A Job's pod snapshot waiting in a batch that nothing else flushes.
    ref = envelopes.JobRef("ns", "train")
    snapshot = job_signals.PodSnapshot(name="train-w-0", uid="u0", task="w", phase="Running")
    term._coalescer.add(envelopes.PodUpdate(ref, snapshot), now=0.0)
    await term.finish(graceful=False)
    assert sender.names() == [] and sender.abandoned


@pytest.mark.parametrize(
    ("deletes", "delivered"),
    [pytest.param([True], 1, id="deleted-delivered"), pytest.param([False], 0, id="gone-skipped")],
)
async def test_command_delivered_only_if_this_replica_deleted_it(
    deletes: list[bool], delivered: int
) -> None:
    sender, _, deleted = await run_term(True, deletes, {K.COMMAND: [command()]})
    assert deleted == [("ns", "train-abortjob-x", "cmd-uid")]
    assert sender.names().count(common_signals.SIGNAL_COMMAND_ISSUED) == delivered


async def test_queues_started_before_their_pod_groups_and_commands() -> None:
    root, q1 = queue("root", parent=None), queue()
    objects = {
        K.QUEUE: [root, q1],
        K.POD_GROUP: [pod_group(owners=[], queue="q1")],
        K.COMMAND: [command(name="q1-close", action="CloseQueue", target=queue_owner())],
    }
    sender, listed, deleted = await run_term(True, [True], objects)
    assert (
        set(listed[: len(pipeline.FIRST)])
        == pipeline.FIRST
        == {K.JOB, K.QUEUE, K.BATCH_JOB, K.CRON_JOB}
    )
    assert deleted == [("ns", "q1-close", "cmd-uid")]
    to_q1 = [s.name for s in sender.signals if s.target == envelopes.QueueRef("q1")]
    # PodGroups and Commands are separate watches: either may come first, after the start.
    assert to_q1[0] == queue_signals.SIGNAL_QUEUE_OBSERVED
    assert sorted(to_q1[1:]) == [
        common_signals.SIGNAL_COMMAND_ISSUED,
        queue_signals.SIGNAL_POD_GROUPS_CHANGED,
        queue_signals.SIGNAL_POD_GROUPS_LISTED,
    ]
    to_root = [s.name for s in sender.signals if s.target == envelopes.QueueRef("root")]
    assert to_root == [
        queue_signals.SIGNAL_QUEUE_OBSERVED,
        queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED,
        queue_signals.SIGNAL_POD_GROUPS_LISTED,
    ]


async def test_queues_listed_before_jobs_so_a_dispatched_job_is_routed_as_such() -> None:
    multi = queue("multi")
    multi["spec"]["extendClusters"] = [{"name": "east"}]
    train = job()
    train["spec"]["queue"] = "multi"
    sender, listed, _ = await run_term(True, [], {K.QUEUE: [multi], K.JOB: [train]})
    assert listed[0] == K.QUEUE
    observed = [s.target for s in sender.signals if s.name == job_signals.SIGNAL_JOB_OBSERVED]
    assert observed == [envelopes.DispatchRef("ns", "train")]

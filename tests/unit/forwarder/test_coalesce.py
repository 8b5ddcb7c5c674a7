"""Pod batching: latest per pod, bounded delay, order with other signals, chunks of 100."""

from __future__ import annotations

from forwarder.routing import coalesce, envelopes
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals

A = envelopes.JobRef("ns", "a")
B = envelopes.JobRef("ns", "b")


def snap(name: str, phase: str = "Pending", uid: str | None = None) -> job_signals.PodSnapshot:
    return job_signals.PodSnapshot(name=name, uid=uid or f"uid-{name}", task="worker", phase=phase)


def update(job: envelopes.JobRef, pod: job_signals.PodSnapshot) -> envelopes.PodUpdate:
    return envelopes.PodUpdate(job, pod)


def batch(job: envelopes.JobRef, *pods: job_signals.PodSnapshot) -> envelopes.Signal:
    return envelopes.Signal(
        job, job_signals.SIGNAL_PODS_CHANGED, job_signals.PodsChanged(pods=list(pods))
    )


def deleted(job: envelopes.JobRef) -> envelopes.Signal:
    return envelopes.Signal(job, job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="u"))


def test_latest_snapshot_per_pod_in_order_of_last_change() -> None:
    c = coalesce.Coalescer(delay=0.2)
    c.add(update(A, snap("p0")), now=0.0)
    c.add(update(A, snap("p1")), now=0.01)
    c.add(update(A, snap("p0", "Running")), now=0.02)
    assert len(c) == 2
    assert c.due(now=0.19) == []
    assert c.due(now=0.2) == [batch(A, snap("p1"), snap("p0", "Running"))]
    assert c.next_deadline() is None


def test_delay_is_bounded_not_reset_by_new_changes() -> None:
    c = coalesce.Coalescer(delay=0.2)
    c.add(update(A, snap("p0")), now=0.0)
    c.add(update(A, snap("p0", "Running")), now=0.15)
    assert c.next_deadline() == 0.2
    assert c.due(now=0.2) == [batch(A, snap("p0", "Running"))]


def test_each_workflow_batched_separately_earliest_first() -> None:
    c = coalesce.Coalescer(delay=0.2)
    c.add(update(B, snap("b0")), now=0.0)
    c.add(update(A, snap("a0")), now=0.1)
    assert c.due(now=0.25) == [batch(B, snap("b0"))]
    assert c.drain() == [batch(A, snap("a0"))]


def test_other_signal_flushes_that_workflows_pods_first() -> None:
    c = coalesce.Coalescer(delay=0.2)
    c.add(update(A, snap("a0")), now=0.0)
    c.add(update(B, snap("b0")), now=0.0)
    assert c.add_signal(deleted(A)) == [batch(A, snap("a0")), deleted(A)]
    assert c.add_signal(deleted(A)) == [deleted(A)]
    assert c.drain() == [batch(B, snap("b0"))]


def test_recreated_pod_keeps_old_deletion_and_new_pod() -> None:
    c = coalesce.Coalescer()
    old = snap("p0", uid="old").model_copy(update={"deleted": True})
    new = snap("p0", uid="new")
    c.add(update(A, old), now=0.0)
    c.add(update(A, new), now=0.0)
    assert c.drain() == [batch(A, old, new)]


def test_large_batch_chunked_at_100_pods() -> None:
    c = coalesce.Coalescer()
    pods = [snap(f"p{i}") for i in range(250)]
    for p in pods:
        c.add(update(A, p), now=0.0)
    assert c.drain() == [batch(A, *pods[:100]), batch(A, *pods[100:200]), batch(A, *pods[200:])]


Q1 = envelopes.QueueRef("q1")


def group_ref(
    key: str, phase: str | None = "Pending", gone: bool = False
) -> queue_signals.PodGroupRef:
    return queue_signals.PodGroupRef(key=key, phase=phase, deleted=gone)


def groups(queue: envelopes.QueueRef, *refs: queue_signals.PodGroupRef) -> envelopes.Signal:
    payload = queue_signals.PodGroupsChanged(groups=list(refs))
    return envelopes.Signal(queue, queue_signals.SIGNAL_POD_GROUPS_CHANGED, payload)


def test_group_refs_latest_per_key_in_order_of_last_change() -> None:
    c = coalesce.Coalescer(delay=0.2)
    c.add(envelopes.GroupRefUpdate(Q1, group_ref("ns/a")), now=0.0)
    c.add(envelopes.GroupRefUpdate(Q1, group_ref("ns/b")), now=0.05)
    c.add(envelopes.GroupRefUpdate(Q1, group_ref("ns/a", gone=True)), now=0.1)
    c.add(update(A, snap("p0")), now=0.1)
    assert len(c) == 3
    # The pods leave after the pod delay; the queue's refs wait for the queue's.
    assert c.due(now=0.35) == [batch(A, snap("p0"))]
    assert c.due(now=1.9) == []
    assert c.due(now=2.0) == [groups(Q1, group_ref("ns/b"), group_ref("ns/a", gone=True))]
    assert c.drain() == []


def test_queue_signal_flushes_pending_refs_first() -> None:
    c = coalesce.Coalescer()
    c.add(envelopes.GroupRefUpdate(Q1, group_ref("ns/a")), now=0.0)
    gone = envelopes.Signal(
        Q1, queue_signals.SIGNAL_QUEUE_DELETED, queue_signals.QueueDeleted(uid="u")
    )
    assert c.add_signal(gone) == [groups(Q1, group_ref("ns/a")), gone]
    assert c.drain() == []


def test_large_ref_batch_chunked_at_500() -> None:
    c = coalesce.Coalescer()
    refs = [group_ref(f"ns/g{i}") for i in range(750)]
    for r in refs:
        c.add(envelopes.GroupRefUpdate(Q1, r), now=0.0)
    assert c.drain() == [groups(Q1, *refs[:500]), groups(Q1, *refs[500:])]

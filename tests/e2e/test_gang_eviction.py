"""Whole-gang eviction end to end: a gang without spare tasks is evicted whole or not at all.

Caldera's gang scheduler runs (`SCHEDULER_OVERRIDE = None`) on the session's 3 kwok nodes of 8
CPUs. Queue `a-*` fills them with six gangs of two 2-CPU pods (minAvailable 2, nothing to
spare); then a gang of the same shape arrives in queue `b-*`, of equal weight. Its queue
deserves 4 CPUs, so one of `a`'s gangs must go: under gangreclaim (Volcano master's
gang-level reclaim) and under the default actions' reclaim alike, exactly one gang loses both
its pods and every other keeps both; none is left running one pod short. Pods carry no
run-seconds annotation, so they run until deleted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from scheduling.framework.conf import CALDERA_DEFAULT
from tests.e2e import sharing
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
GANGS = 6  # 6 gangs x 2 pods x 2 CPUs fill 24 CPUs
DEFAULT_ACTIONS = '"enqueue, allocate, backfill, reclaim"'
CONFS = {
    "gangreclaim": CALDERA_DEFAULT.replace(
        DEFAULT_ACTIONS, '"enqueue, allocate, backfill, gangreclaim"'
    ),
    "reclaim": CALDERA_DEFAULT,
}


@pytest.fixture
def queues(api: client.ApiClient) -> Iterator[tuple[str, ...]]:
    """Queues `a-*` and `b-*` of equal weight, removed afterwards."""
    with sharing.queues(api, {"a": 1, "b": 1}) as names:
        yield names


@pytest.mark.parametrize("action", ["gangreclaim", "reclaim"])
def test_a_gang_without_spare_tasks_is_evicted_whole_or_not_at_all(
    api: client.ApiClient,
    namespace: str,
    queues: tuple[str, str],
    scheduler_conf: Path,
    action: str,
) -> None:
    scheduler_conf.write_text(CONFS[action])
    early, late = queues
    eventually(lambda: not sharing.reserving(api, namespace), 120, "the cluster to this test alone")
    for i in range(GANGS):
        sharing.submit(api, namespace, f"a{i}", early, replicas=2)
    eventually(
        lambda: sharing.running(api, namespace)[early] == 2 * GANGS, 180, f"{early} fills it"
    )
    deleted = sharing.Deleted(api, namespace)
    sharing.submit(api, namespace, "b0", late, replicas=2)

    try:
        eventually(lambda: sharing.running(api, namespace)[late] == 2, 240, "the late gang running")
    except AssertionError as e:
        raise AssertionError(f"{e}; podgroups {sharing.groups(api, namespace)}") from None

    # The Evict events a user sees: both pods of one gang, none of any other.
    core = client.CoreV1Api(api)
    evicted = [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    ]
    by_job: defaultdict[str, set[str]] = defaultdict(set)
    for event in evicted:
        by_job[event.involved_object.name.rsplit("-", 2)[0]].add(event.involved_object.name)
        assert (event.message or "").startswith(
            f"Pod is evicted, because of {action} by {namespace}/b0-"
        ), event.message
    assert len(by_job) == 1 and [len(p) for p in by_job.values()] == [2], dict(by_job)
    deleted.stop()
    gone = Counter(name.rsplit("-", 2)[0] for name in deleted.pods)
    assert set(gone.values()) <= {2}, gone  # whole gangs or nothing
    # The victim gang went back to pending to wait for room; the others run whole.
    (victim,) = by_job
    phases = {f"a{i}": sharing.phase(api, namespace, f"a{i}") for i in range(GANGS)}
    assert Counter(p for j, p in phases.items() if j != victim) == {"Running": GANGS - 1}
    running_pods = Counter(
        p.metadata.name.rsplit("-", 2)[0]
        for p in core.list_namespaced_pod(namespace).items
        if p.spec.node_name and p.status.phase == "Running" and not p.metadata.deletion_timestamp
    )
    assert all(running_pods[f"a{i}"] in (0, 2) for i in range(GANGS)), running_pods
    eventually(lambda: sharing.phase(api, namespace, "b0") == "Running", 60, "job b0 Running")

"""Reclaim end to end: queues weighted 1:3 end up with 1:3 of a full cluster whichever filled
it first, and an evicted job goes back to pending instead of failing.

Caldera's gang scheduler runs (`SCHEDULER_OVERRIDE = None`) on the session's 3 kwok nodes of 8
CPUs: 12 pods of 2 CPUs fill it. Pods carry no run-seconds annotation, so they run until
deleted.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import pytest
from kubernetes import client

from models import labels
from tests.e2e import sharing
from tests.e2e.conftest import eventually
from tests.e2e.sharing import SLOTS

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on


@pytest.fixture
def weighted(api: client.ApiClient) -> Iterator[tuple[str, ...]]:
    """Queues `light-*` (weight 1) and `heavy-*` (weight 3), removed afterwards."""
    with sharing.queues(api, {"light": 1, "heavy": 3}) as names:
        yield names


@pytest.mark.parametrize("first", ["light", "heavy"])
def test_queues_weighted_one_to_three_end_one_to_three_whoever_filled_the_cluster_first(
    api: client.ApiClient, namespace: str, weighted: tuple[str, str], first: str
) -> None:
    light, heavy = weighted
    order = [(light, "l"), (heavy, "h")]
    if first == "heavy":
        order.reverse()
    (early, early_prefix), (late, late_prefix) = order
    sharing.fill(api, namespace, early, early_prefix)
    deleted = sharing.Deleted(api, namespace)
    start = time.monotonic()
    for i in range(SLOTS):  # the late queue asks for the whole cluster too
        sharing.submit(api, namespace, f"{late_prefix}{i}", late)

    timeline: list[tuple[int, int]] = []

    def settled() -> bool:
        split = sharing.split(api, namespace, weighted)
        if not timeline or timeline[-1] != split:
            timeline.append(split)
        return split == (3, 9)

    try:
        eventually(settled, 240, "light:heavy 3:9")
    except AssertionError as e:  # the splits seen, and each PodGroup, say where it stopped
        raise AssertionError(
            f"{e}; splits seen {timeline}; podgroups {sharing.groups(api, namespace)}"
        ) from None
    took = time.monotonic() - start
    seen = []
    for _ in range(15):  # and it stays so: no eviction back and forth
        time.sleep(1)
        seen.append(sharing.split(api, namespace, weighted))
    print(f"{first} first: splits {timeline} in {took:.0f} s, then {sorted(set(seen))} for 15 s")
    assert set(seen) == {(3, 9)}, seen

    # Exactly the late queue's share was taken back: one eviction per pod it gained, and the
    # jobs that lost their pod went back to pending, none failed.
    taken = 9 if first == "light" else 3
    core = client.CoreV1Api(api)
    evicted = [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    ]
    assert len(evicted) == taken, [e.involved_object.name for e in evicted]
    assert all(
        (e.message or "").startswith(f"Pod is evicted, because of reclaim by {namespace}/")
        for e in evicted
    )
    deleted.stop()
    assert sorted(deleted.pods) == sorted(e.involved_object.name for e in evicted)
    for name in deleted.pods:  # what a user watching the pod saw before it went
        conditions = deleted.conditions(name)
        disruption = conditions["DisruptionTarget"]
        assert (disruption.status, disruption.reason) == ("True", "PreemptionByScheduler")
        assert disruption.message.endswith(f"(queue {late})"), disruption.message
        assert (conditions["Ready"].status, conditions["Ready"].reason) == ("False", "Evict")
    phases = Counter(sharing.phase(api, namespace, f"{early_prefix}{i}") for i in range(SLOTS))
    assert phases == {"Running": SLOTS - taken, "Pending": taken}, phases
    waiting = [
        p
        for p in core.list_namespaced_pod(namespace).items
        if p.metadata.labels.get(labels.QUEUE_NAME) == early and not p.spec.node_name
    ]
    assert waiting, "the evicted jobs' pods are recreated and wait for room"


def test_evicted_job_with_a_restart_policy_restarts_and_waits_pending(
    api: client.ApiClient, namespace: str, weighted: tuple[str, str]
) -> None:
    light, heavy = weighted
    restart = [{"event": "PodEvicted", "action": "RestartJob"}]
    sharing.fill(api, namespace, light, "l", policies=restart, maxRetry=5)
    for i in range(3):
        sharing.submit(api, namespace, f"h{i}", heavy)
    eventually(
        lambda: sharing.running(api, namespace)[heavy] == 3,
        180,
        "heavy's 3 pods run on reclaimed room",
    )
    custom = client.CustomObjectsApi(api)

    def restarted() -> list[str]:
        names = []
        for i in range(SLOTS):
            job = custom.get_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", namespace, "jobs", f"l{i}"
            )
            status = job.get("status") or {}
            if (status.get("retryCount") or 0) >= 1:
                names.append(f"l{i}")
        return names

    # Each victim's job writes its restart on its own: wait for all three, not the first.
    def all_restarted() -> list[str] | None:
        found = restarted()
        return found if len(found) >= 3 else None

    victims = eventually(all_restarted, 60, "the victims' jobs counted a restart")
    assert len(victims) == 3, victims
    for name in victims:
        eventually(
            lambda n=name: sharing.phase(api, namespace, n) == "Pending",
            60,
            f"{name} back to Pending",
        )
    assert {sharing.phase(api, namespace, f"l{i}") for i in range(SLOTS)} <= {"Running", "Pending"}
    assert sharing.split(api, namespace, weighted) == (SLOTS - 3, 3)

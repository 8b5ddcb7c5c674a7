"""The capacity plugin on the real stack: queues' own `deserved`, not their weights, split a
full cluster, and a queue that borrowed an idle neighbour's room gives it back.

The stack's volcano-scheduler.conf is switched from proportion to capacity for the test and
back afterwards. Caldera's gang scheduler runs on the session's 3 kwok nodes of 8 CPUs: 12
pods of 2 CPUs fill it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from scheduling.framework.conf import CALDERA_DEFAULT
from tests.e2e import sharing
from tests.e2e.conftest import eventually
from tests.e2e.sharing import SLOTS

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
CAPACITY = CALDERA_DEFAULT.replace("name: proportion", "name: capacity")
_G, _V = "scheduling.volcano.sh", "v1beta1"


@pytest.fixture
def capacity_conf(scheduler_conf: Path) -> Path:
    scheduler_conf.write_text(CAPACITY)
    return scheduler_conf


@pytest.fixture
def deserving(api: client.ApiClient) -> Iterator[tuple[str, str]]:
    """Queues `small-*` (deserved 6 CPUs) and `large-*` (18), equal weights, removed after."""
    custom = client.CustomObjectsApi(api)
    suffix = uuid.uuid4().hex[:5]
    names = (f"small-{suffix}", f"large-{suffix}")
    for name, deserved in zip(names, ("6", "18"), strict=True):
        spec = {"weight": 1, "parent": "root", "reclaimable": True, "deserved": {"cpu": deserved}}
        custom.create_cluster_custom_object(
            _G,
            _V,
            "queues",
            {"apiVersion": f"{_G}/{_V}", "kind": "Queue", "metadata": {"name": name}, "spec": spec},
        )
    yield names
    for name in names:
        custom.delete_cluster_custom_object(_G, _V, "queues", name)


def test_a_queue_borrows_the_idle_cluster_and_is_reclaimed_down_to_its_deserved_share(
    api: client.ApiClient, namespace: str, deserving: tuple[str, str], capacity_conf: Path
) -> None:
    small, large = deserving
    sharing.fill(api, namespace, small, "s")  # 24 CPUs while it deserves 6: large is idle
    for i in range(SLOTS):
        sharing.submit(api, namespace, f"l{i}", large)
    # Proportion would split equal weights 6:6; capacity takes small back to its 6 CPUs.
    eventually(lambda: sharing.split(api, namespace, deserving) == (3, 9), 240, "small:large 3:9")
    evicted = [
        e
        for e in client.CoreV1Api(api).list_namespaced_event(namespace).items
        if e.reason == "Evict" and e.involved_object.kind == "Pod"
    ]
    assert len(evicted) == 9, [e.involved_object.name for e in evicted]

"""Where is my job: `caldera queue pending` and `caldera job why` on the real stack answer from
the SchedulerWorkflow's queries (the digest its sessions report), not from the apiserver.

Caldera's gang scheduler runs (`SCHEDULER_OVERRIDE = None`); a queue with room for one job of
2 CPUs (capability cpu=2) gets three: the first runs, enqueue refuses the other two for the
queue's quota, and they wait in submission order.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e import sharing
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.test_cli import _caldera, _ok, _table

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
_G, _V = "scheduling.volcano.sh", "v1beta1"


@pytest.fixture
def narrow(api: client.ApiClient) -> Iterator[str]:
    """Queue `narrow-*`: room for one 2-CPU job (capability cpu=2), removed afterwards."""
    custom = client.CustomObjectsApi(api)
    name = f"narrow-{uuid.uuid4().hex[:5]}"
    spec = {"weight": 1, "parent": "root", "capability": {"cpu": "2"}}
    body = {"apiVersion": f"{_G}/{_V}", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    custom.create_cluster_custom_object(_G, _V, "queues", body)
    yield name
    custom.delete_cluster_custom_object(_G, _V, "queues", name)


def test_the_jobs_a_full_queue_holds_back_are_listed_in_order_with_why(
    api: client.ApiClient, namespace: str, narrow: str, e2e_stack: E2EStack
) -> None:
    ns = namespace
    sharing.submit(api, ns, "first", narrow)
    eventually(lambda: sharing.phase(api, ns, "first") == "Running", 120, "the first job runs")
    sharing.submit(api, ns, "second", narrow)
    sharing.submit(api, ns, "third", narrow)

    def listed() -> list[list[str]] | None:
        done = _caldera(e2e_stack, "queue", "pending", narrow)
        rows = _table(done.stdout) if done.returncode == 0 else []
        return rows if len(rows) == 3 else None

    header, second, third = eventually(listed, 120, f"two jobs listed as waiting in {narrow}")
    assert header == ["POSITION", "NAMESPACE", "JOB", "PHASE", "REASON"]
    assert second[:4] == ["1", ns, "second", "Pending"]
    assert third[:4] == ["2", ns, "third", "Pending"]
    quota = f"queue resource quota insufficient: queue {narrow}"
    assert " ".join(second[4:]) == quota and " ".join(third[4:]) == quota

    answer = json.loads(_ok(_caldera(e2e_stack, "queue", "pending", narrow, "-o", "json")))
    assert answer["total"] == 2
    assert [(j["position"], j["name"]) for j in answer["jobs"]] == [(1, "second"), (2, "third")]

    why = _ok(_caldera(e2e_stack, "job", "why", "third", "-n", ns)).splitlines()
    assert why == [
        f"Job:       {ns}/third",
        f"Queue:     {narrow}",
        "Position:  2 of 2",
        "Phase:     Pending",
        f"Reason:    {quota}",
    ]
    running = _ok(_caldera(e2e_stack, "job", "why", "first", "-n", ns)).splitlines()
    assert running[-1] == "the job is Running: it does not wait in a queue"

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
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes import client

from tests.e2e import sharing
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.manifests import RUN
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
    assert header == ["POSITION", "NAMESPACE", "JOB", "PHASE", "STARTS", "REASON"]
    # No job of the queue has finished: nothing to expect a start from.
    assert second[:5] == ["1", ns, "second", "Pending", "-"]
    assert third[:5] == ["2", ns, "third", "Pending", "-"]
    quota = f"queue resource quota insufficient: queue {narrow}"
    assert " ".join(second[5:]) == quota and " ".join(third[5:]) == quota

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
        "Starts:    no estimate: no job of the queue has finished yet to expect one from",
    ]
    running = _ok(_caldera(e2e_stack, "job", "why", "first", "-n", ns)).splitlines()
    assert running[-1] == "the job is Running: it does not wait in a queue"


def _started(api: client.ApiClient, ns: str, job: str) -> datetime | None:
    """When the job's pod started (its status.startTime); None: not yet."""
    pods = client.CoreV1Api(api).list_namespaced_pod(
        ns, label_selector=f"volcano.sh/job-name={job}"
    )
    times = [p.status.start_time for p in pods.items if p.status and p.status.start_time]
    return min(times, default=None)


def test_a_waiting_job_is_told_when_it_will_start_and_starts_about_then(
    api: client.ApiClient, namespace: str, narrow: str, e2e_stack: E2EStack
) -> None:
    """The queue's first job runs 20 s and finishes: its record. The next runs 20 s too, and
    the one behind it is expected when that one ends (its start + the record's median); it
    starts within the estimate's grain of that."""
    ns, runs = namespace, {RUN: "20"}
    sharing.submit(api, ns, "warm", narrow, pod_annotations=runs)
    eventually(lambda: sharing.phase(api, ns, "warm") == "Completed", 120, "the first job done")
    sharing.submit(api, ns, "long", narrow, pod_annotations=runs)
    long_started = eventually(lambda: _started(api, ns, "long"), 120, "the second job started")
    sharing.submit(api, ns, "next", narrow, pod_annotations=runs)

    def estimate() -> dict[str, Any] | None:
        done = _caldera(e2e_stack, "job", "why", "next", "-n", ns, "-o", "json")
        found = json.loads(done.stdout) if done.returncode == 0 else {}
        return found if found.get("estimated_start") else None

    told = eventually(estimate, 90, "an estimated start for the waiting job")
    expected = datetime.fromisoformat(told["estimated_start"])
    assert (told["runs"], told["position"]) == (1, 1), told
    assert 15 <= told["median_s"] <= 25, told  # the first job's run, as its pod's times say
    # The running job's start plus the median, rounded up to the next 10 s (twice at most).
    assert (
        timedelta(0)
        <= expected - (long_started + timedelta(seconds=told["median_s"]))
        <= timedelta(seconds=20)
    ), (expected, long_started, told)
    started = eventually(lambda: _started(api, ns, "next"), 120, "the waiting job started")
    assert abs((started - expected).total_seconds()) <= 30, (started, expected)
    shown = _ok(_caldera(e2e_stack, "queue", "pending", narrow))
    assert "next" not in shown  # started: no longer waiting

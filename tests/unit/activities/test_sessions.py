"""The session activity's wiring: the cache read, the planned writes issued, the report returned.

What to write and where placements go are decided in `scheduling/` and tested there (the
writes, placements, volumes and observed tables); here the cluster cache and the apiserver are
recording fakes, so what matters is that a session issues the planned writes, sends the Events
from threads that keep the activity context, and returns the report.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import kube, kube_events, options
from activities.messages import (
    Arrivals,
    JobPlacements,
    RecordEventInput,
    SessionInput,
    SessionReport,
)
from activities.scheduler import backlogs, binding, informer, sessions
from models import vcjob
from models.keys import QueueName
from models.signals import scheduler as scheduler_signals
from tests.unit.scheduling.builders import gang, make_node, make_queue

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


class FakeCache:
    def __init__(self, world: dict[str, list[Obj]], missing: list[str] | None = None) -> None:
        self.world = world
        self.missing = missing or []
        self.waits: list[tuple[str, Arrivals | None, float]] = []

    def wait_synced(self, timeout: float) -> list[str]:
        return self.missing

    def read(self) -> dict[str, list[Obj]]:
        return copy.deepcopy(self.world)

    def arrivals(self, scheduler: str) -> Arrivals:
        return Arrivals(token="fake", count=7)

    def wait_for_work(
        self, scheduler: str, since: Arrivals | None, seconds: float, alive: Any
    ) -> bool:
        self.waits.append((scheduler, since, seconds))
        return False


class FakeApi:
    """Records status patches; stands in for both the core and the custom-objects clients."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str, Any]] = []

    def patch_namespaced_custom_object_status(self, *args: Any, **_: Any) -> None:
        _, _, namespace, plural, name, body = args
        self.writes.append((plural, f"{namespace}/{name}", body["status"]))

    def patch_cluster_custom_object_status(self, *args: Any, **_: Any) -> None:
        _, _, plural, name, body = args
        self.writes.append((plural, name, body["status"]))

    def patch_namespaced_pod_status(self, name: str, namespace: str, body: Obj, **_: Any) -> None:
        self.writes.append(("pods", f"{namespace}/{name}", body["status"]))

    def of(self, plural: str) -> list[tuple[str, Any]]:
        return [(key, status) for p, key, status in self.writes if p == plural]


def _owned(group: Obj, job: str) -> Obj:
    ref = {"apiVersion": vcjob.API_VERSION, "kind": "Job", "name": job, "uid": f"uid-{job}"}
    group["metadata"]["ownerReferences"] = [ref]
    return group


def _world(*gangs: tuple[Obj, list[Obj]], nodes: int = 1) -> dict[str, list[Obj]]:
    pods = [p for _, members in gangs for p in members]
    for p in pods:
        p["metadata"]["uid"] = f"uid-{p['metadata']['name']}"
    return {
        "nodes": [make_node(f"n{i}").obj() for i in range(nodes)],
        "pods": pods,
        "pvcs": [],
        "pvs": [],
        "classes": [],
        "priority": [],
        "podgroups": [_owned(g, g["metadata"]["name"]) for g, _ in gangs],
        "queues": [make_queue()],
        "hypernodes": [],
        "csinodes": [],
    }


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(kube, "custom", lambda: fake)
    monkeypatch.setattr(kube, "core", lambda: fake)
    return fake


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[RecordEventInput, bool]]:
    seen: list[tuple[RecordEventInput, bool]] = []

    def write_event(event: RecordEventInput) -> None:
        from temporalio import activity  # the Event path reads the activity's info

        seen.append((event, activity.in_activity()))

    monkeypatch.setattr(kube_events, "write_event", write_event)
    return seen


def _session(
    monkeypatch: pytest.MonkeyPatch, world: dict[str, list[Obj]], number: int = 1, **assumed: str
) -> SessionReport:
    monkeypatch.setattr(informer, "cluster", lambda: FakeCache(world))
    request = SessionInput(scheduler_name="volcano", session=number, assumed=assumed)
    report: SessionReport = ActivityEnvironment().run(sessions.schedule_session, request)
    return report


def test_a_gang_that_fits_is_placed_and_addressed_to_its_job_workflow(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    report = _session(monkeypatch, _world(gang("train", 2, phase="Pending")))

    [job] = report.jobs
    assert job.job_workflow_id == "vcjob/default/train"
    assert sorted((p.pod, p.uid, p.node) for p in job.placements) == [
        ("train-worker-0", "uid-train-worker-0", "n0"),
        ("train-worker-1", "uid-train-worker-1", "n0"),
    ]
    [(key, status)] = api.of("podgroups")
    assert key == "default/train" and status["phase"] == "Inqueue"
    [(queue, queue_status)] = api.of("queues")
    assert queue == "default" and queue_status["allocated"]["cpu"] == "2"
    assert not recorded and not api.of("pods")


def test_a_gang_too_large_waits_says_why_and_tells_its_job(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    world = _world(gang("big", 6, cpu="1"))  # 6 cpu on one 4-cpu node: never fits
    report = _session(monkeypatch, world, number=3)

    assert report.jobs == [] and report.pending == 6
    [(key, status)] = api.of("podgroups")
    [condition] = [c for c in status["conditions"] if c["type"] == "Unschedulable"]
    assert key == "default/big" and "Insufficient cpu" in condition["message"]
    assert condition["transitionID"] == "3"
    [(event, in_activity)] = recorded
    assert (event.name, event.uid, event.reason) == ("big", "uid-big", "Unschedulable")
    assert event.message == condition["message"]
    assert in_activity  # written from a worker thread that kept the activity's context
    pods = api.of("pods")
    assert len(pods) == 6
    # Volcano's split: the 4 tasks that fit wait for their gang, the other 2 do not fit.
    reasons = sorted(s["conditions"][0]["reason"] for _, s in pods)
    assert reasons == ["Schedulable"] * 4 + ["Unschedulable"] * 2
    assert {s["conditions"][0]["status"] for _, s in pods} == {"False"}


def test_a_session_that_sees_its_own_writes_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    """The statuses as written, read back from the cache, plan no write and no Event."""
    world = _world(gang("big", 6, cpu="1"))
    _session(monkeypatch, world)
    [(_, status)] = api.of("podgroups")
    world["podgroups"][0]["status"] = status
    for pod, (_, written) in zip(world["pods"], sorted(api.of("pods")), strict=True):
        pod["status"]["conditions"] = written["conditions"]
    api.writes.clear()
    recorded.clear()
    _session(monkeypatch, world, number=2)
    assert api.writes == [] and recorded == []


def test_a_placed_pod_carries_its_volume_plan(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    world = _world(gang("data", 1))
    world["pods"][0]["spec"]["volumes"] = [
        {"name": "d", "persistentVolumeClaim": {"claimName": "d"}}
    ]
    world["pvcs"] = [{"metadata": {"namespace": "default", "name": "d"}, "spec": {}}]
    world["pvs"] = [{"metadata": {"name": "pv1"}, "spec": {}, "status": {"phase": "Available"}}]
    [job] = _session(monkeypatch, world).jobs
    [placed] = job.placements
    assert (placed.volumes.static, placed.volumes.provision) == ([("d", "pv1")], [])


def test_an_assumed_pod_seen_bound_is_confirmed(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    world = _world(gang("run", 1))
    world["pods"][0]["spec"]["nodeName"] = "n0"
    report = _session(monkeypatch, world, **{"default/run-worker-0": "n0"})
    assert report.bound == ["default/run-worker-0"] and report.jobs == []


def test_a_session_before_the_cache_synced_fails_and_is_retried(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi
) -> None:
    monkeypatch.setattr(informer, "cluster", lambda: FakeCache({}, missing=["nodes", "pods"]))
    request = SessionInput(scheduler_name="volcano", session=1, assumed={})
    with pytest.raises(ApplicationError, match="not synced yet: nodes, pods") as failure:
        ActivityEnvironment().run(sessions.schedule_session, request)
    assert not failure.value.non_retryable


def test_a_session_heartbeats_so_one_on_a_dead_worker_is_retried_soon(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    """Regression (chaos soak): a session running on a killed worker was retried only when its
    60 s ran out, twice, so with the worker killed every 20 s scheduling stopped for minutes."""
    monkeypatch.setattr(informer, "cluster", lambda: FakeCache(_world(gang("beat", 2))))
    env = ActivityEnvironment()
    beats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *details: beats.append(details)
    env.run(
        sessions.schedule_session, SessionInput(scheduler_name="volcano", session=1, assumed={})
    )
    assert len(beats) >= 5  # read, snapshot, decide, each write, placements
    assert options.SESSION.heartbeat is not None
    assert options.SESSION.heartbeat <= timedelta(seconds=15) < options.SESSION.start_to_close


def test_a_session_binds_what_the_last_one_placed_and_reports_what_it_could_not_bind(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    world = _world(gang("run", 1, phase="Inqueue"), nodes=2)
    cache = FakeCache(world)
    monkeypatch.setattr(informer, "cluster", lambda: cache)
    handed: list[list[JobPlacements]] = []

    def bind_gangs(jobs: list[JobPlacements], timeout: float) -> tuple[int, dict[str, str]]:
        handed.append(jobs)
        return 0, {"default/run-worker-0": "failed to bind to node n0: node not found"}

    monkeypatch.setattr(binding, "bind_gangs", bind_gangs)
    last = JobPlacements(
        job_workflow_id="vcjob/default/run",
        namespace="default",
        placements=[scheduler_signals.PlacedPod(pod="run-worker-0", node="n0")],
    )
    request = SessionInput(
        scheduler_name="volcano",
        session=2,
        assumed={"default/run-worker-0": "n0"},
        bind=[last],
        wait_seconds=4.0,
    )
    report: SessionReport = ActivityEnvironment().run(sessions.schedule_session, request)
    assert handed == [[last]] and cache.waits == []  # bound at once, no waiting
    assert report.bind_failed == {
        "default/run-worker-0": "failed to bind to node n0: node not found"
    }
    # Counted on its node while it was being bound: placed again by the next session.
    assert report.jobs == []
    assert report.arrivals == Arrivals(token="fake", count=7)


def test_a_session_with_nothing_to_bind_waits_for_work_from_the_last_mark(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    cache = FakeCache(_world())
    monkeypatch.setattr(informer, "cluster", lambda: cache)
    mark = Arrivals(token="fake", count=3)
    request = SessionInput(
        scheduler_name="volcano", session=5, assumed={}, wait_seconds=2.0, since=mark
    )
    report: SessionReport = ActivityEnvironment().run(sessions.schedule_session, request)
    assert cache.waits == [("volcano", mark, 2.0)]
    assert report.jobs == [] and report.bind_failed == {}


def test_a_gang_gets_one_status_write_once_its_pods_are_seen_bound(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    """Volcano writes Scheduled when it allocates and Running once the pods are bound; here the
    status waits while the gang is placed and bound, and is written once, Running."""
    world = _world(gang("run", 1, phase="Inqueue"))
    monkeypatch.setattr(informer, "cluster", lambda: FakeCache(world))
    monkeypatch.setattr(binding, "bind_gangs", lambda jobs, timeout: (1, {}))
    placing = SessionInput(scheduler_name="volcano", session=1, assumed={}, bind_next=True)
    report: SessionReport = ActivityEnvironment().run(sessions.schedule_session, placing)
    [job] = report.jobs
    assert api.of("podgroups") == []  # held while the next session binds it
    node = job.placements[0].node
    assumed = {"default/run-worker-0": node}
    binding_session = SessionInput(
        scheduler_name="volcano", session=2, assumed=assumed, bind=report.jobs, bind_next=True
    )
    ActivityEnvironment().run(sessions.schedule_session, binding_session)
    assert api.of("podgroups") == []  # held while it is being bound

    world["pods"][0]["spec"]["nodeName"] = node  # the cache shows it bound
    settling = SessionInput(scheduler_name="volcano", session=3, assumed=assumed, bind_next=True)
    ActivityEnvironment().run(sessions.schedule_session, settling)
    [(key, status)] = api.of("podgroups")
    assert key == "default/run" and status["phase"] == "Running"
    assert [c["type"] for c in status["conditions"]] == ["Scheduled"]


def test_the_report_says_who_waits_by_job_name_and_then_only_when_it_changes(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    world = _world(gang("big", 6, cpu="1"))  # never fits: waits in queue `default`
    monkeypatch.setattr(informer, "cluster", lambda: FakeCache(world))
    mark = Arrivals(token="fake", count=7)  # where the fake cache's arrivals stand
    backlogs.forget()  # what other tests' sessions reported

    def run(number: int) -> SessionReport:
        request = SessionInput(scheduler_name="volcano", session=number, assumed={}, since=mark)
        report: SessionReport = ActivityEnvironment().run(sessions.schedule_session, request)
        return report

    first = run(1)
    assert first.backlog is not None
    [row] = first.backlog.queues[QueueName("default")].jobs
    assert (row.namespace, row.name, row.phase) == ("default", "big", "Inqueue")
    assert run(2).backlog is None  # the workflow holds it: this process reported it last


def test_a_namespace_queue_gets_only_allocated_through_its_namespaced_status(
    monkeypatch: pytest.MonkeyPatch, api: FakeApi, recorded: list[Any]
) -> None:
    group, pods = gang("tenant", 1, queue="namespace/training")
    for obj in (group, *pods):
        obj["metadata"]["namespace"] = "team-a"
    world = _world((group, pods))
    ready = [{"type": "Ready", "status": "True", "reason": "Ready"}]
    world["namespacequeues"] = [
        {
            "metadata": {"name": "training", "namespace": "team-a"},
            "spec": {"parent": "cluster/default"},
            "status": {"state": "Open", "conditions": ready, "allocated": {"cpu": "1"}},
        }
    ]
    report = _session(monkeypatch, world)

    # The default configuration runs proportion: the job waits, and says why.
    assert report.jobs == []
    [(key, status)] = api.of("podgroups")
    assert key == "team-a/tenant"
    assert "NamespaceQueues need the capacity plugin" in status["conditions"][0]["message"]
    # What it held before is cleared, through the status subresource and nothing else.
    [(key, status)] = api.of("namespacequeues")
    assert key == "team-a/training" and status == {"allocated": {"cpu": "0", "memory": "0"}}

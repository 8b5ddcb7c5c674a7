"""Carrying out evictions: conditions, then a UID-conditioned delete, then Events; idempotent.

The apiserver is a recording fake that answers like one (404 for a pod that is gone, 409 for a
UID precondition that no longer holds); the real thing is exercised in tests/e2e/test_reclaim.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import ApiException
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import kube, kube_events
from activities.messages import RecordEventInput, SessionInput
from activities.scheduler import evictions, informer, scheduler_conf, sessions
from models import vcjob
from models.keys import JobKey
from scheduling.api.result import Eviction, EvictReason
from scheduling.api.snapshot import NodeName, PodKey
from scheduling.framework.session_config import Action
from tests.unit.activities.test_sessions import FakeCache
from tests.unit.scheduling.builders import gang, make_node, make_queue, running

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


class FakeCore:
    """Pods by key with their UIDs; records every call in order."""

    def __init__(self, pods: dict[str, str]) -> None:
        self.pods = dict(pods)  # "<ns>/<name>" -> uid
        self.calls: list[tuple[str, str, Any]] = []

    def _check(self, key: str, uid: str | None) -> None:
        if key not in self.pods:
            raise ApiException(status=404, reason="Not Found")
        if uid and self.pods[key] != uid:
            raise ApiException(status=409, reason="Conflict")

    def patch_namespaced_pod_status(self, name: str, namespace: str, body: Obj, **_: Any) -> None:
        key = f"{namespace}/{name}"
        self._check(key, body.get("metadata", {}).get("uid"))
        self.calls.append(("patch", key, body["status"]))

    def delete_namespaced_pod(self, name: str, namespace: str, body: Any = None) -> None:
        key = f"{namespace}/{name}"
        uid = body.preconditions.uid if body is not None and body.preconditions else None
        self._check(key, uid)
        del self.pods[key]
        self.calls.append(("delete", key, uid))

    def patch_namespaced_custom_object_status(self, *args: Any, **_: Any) -> None:
        self.calls.append(("status", str(args[4]), None))

    def patch_cluster_custom_object_status(self, *args: Any, **_: Any) -> None:
        self.calls.append(("status", str(args[3]), None))


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[RecordEventInput]:
    seen: list[RecordEventInput] = []
    monkeypatch.setattr(kube_events, "write_event", seen.append)
    return seen


def _install(monkeypatch: pytest.MonkeyPatch, core: FakeCore) -> FakeCore:
    monkeypatch.setattr(kube, "core", lambda: core)
    monkeypatch.setattr(kube, "custom", lambda: core)
    return core


def _eviction(pod: str = "default/l-worker-0", uid: str = "uid-1") -> Eviction:
    return Eviction(
        pod=PodKey(pod),
        uid=uid,
        job=JobKey("default/l"),
        node=NodeName("n0"),
        reason=EvictReason.RECLAIM,
        preemptor=PodKey("default/h-worker-0"),
        message="Pod is evicted, because of reclaim by default/h-worker-0 (queue heavy)",
    )


GROUP: Obj = {"metadata": {"name": "l", "namespace": "default", "uid": "pg-uid"}}


def test_victim_is_marked_then_deleted_by_uid_and_the_events_say_why(
    monkeypatch: pytest.MonkeyPatch, recorded: list[RecordEventInput]
) -> None:
    core = _install(monkeypatch, FakeCore({"default/l-worker-0": "uid-1"}))
    ActivityEnvironment().run(evictions.evict, [_eviction()], {"default/l": GROUP})
    (patch, delete) = core.calls
    assert patch[:2] == ("patch", "default/l-worker-0")
    conditions = {c["type"]: c for c in patch[2]["conditions"]}
    assert conditions["DisruptionTarget"]["status"] == "True"
    assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "Evict")
    assert conditions["Ready"]["message"] == _eviction().message
    assert delete == ("delete", "default/l-worker-0", "uid-1")
    assert [(e.kind, e.name, e.namespace, e.type, e.reason) for e in recorded] == [
        ("Pod", "l-worker-0", "default", "Warning", "Evict"),
        ("PodGroup", "l", "default", "Normal", "Evict"),
    ]


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param({}, id="already-gone"),
        pytest.param({"default/l-worker-0": "uid-2"}, id="recreated-under-the-same-name"),
    ],
)
def test_victim_already_gone_is_done_and_nothing_else_is_touched(
    monkeypatch: pytest.MonkeyPatch, recorded: list[RecordEventInput], pods: dict[str, str]
) -> None:
    core = _install(monkeypatch, FakeCore(pods))
    ActivityEnvironment().run(evictions.evict, [_eviction()], {"default/l": GROUP})
    assert core.calls == [] and core.pods == pods and recorded == []


def test_apiserver_failure_fails_the_session_so_it_is_retried(
    monkeypatch: pytest.MonkeyPatch, recorded: list[RecordEventInput]
) -> None:
    core = FakeCore({"default/l-worker-0": "uid-1"})

    def broken(*_: Any, **__: Any) -> None:
        raise ApiException(status=500, reason="Internal Server Error")

    monkeypatch.setattr(core, "delete_namespaced_pod", broken)
    _install(monkeypatch, core)
    with pytest.raises(ApplicationError, match="evict pod default/l-worker-0") as failure:
        ActivityEnvironment().run(evictions.evict, [_eviction()], {})
    assert not failure.value.non_retryable


def _world() -> dict[str, list[Obj]]:
    """light fills one 8-CPU node with 4 pods of 2 CPUs; heavy (weight 3) has 4 pending."""
    jobs = [running(f"l{i}", ["n0"], cpu="2", queue="light") for i in range(4)]
    jobs += [gang(f"h{i}", 1, cpu="2", queue="heavy") for i in range(4)]
    pods = [p for _, members in jobs for p in members]
    for p in pods:
        p["metadata"]["uid"] = f"uid-{p['metadata']['name']}"
    groups = []
    for group, _ in jobs:
        name = group["metadata"]["name"]
        ref = {"apiVersion": vcjob.API_VERSION, "kind": "Job", "name": name, "uid": f"j-{name}"}
        group["metadata"]["ownerReferences"] = [ref]
        groups.append(group)
    return {
        "nodes": [make_node("n0", cpu="8", memory="32Gi").obj()],
        "pods": pods,
        "pvcs": [],
        "pvs": [],
        "classes": [],
        "priority": [],
        "podgroups": groups,
        "queues": [make_queue("light", weight=1), make_queue("heavy", weight=3)],
        "hypernodes": [],
        "csinodes": [],
    }


def _session(monkeypatch: pytest.MonkeyPatch, core: FakeCore) -> None:
    monkeypatch.setattr(informer, "cluster", lambda: FakeCache(_world()))
    _install(monkeypatch, core)
    request = SessionInput(scheduler_name="volcano", session=1, assumed={})
    ActivityEnvironment().run(sessions.schedule_session, request)


def test_session_evicts_what_reclaim_decided(
    monkeypatch: pytest.MonkeyPatch, recorded: list[RecordEventInput]
) -> None:
    uids = {f"default/{p['metadata']['name']}": p["metadata"]["uid"] for p in _world()["pods"]}
    core = FakeCore(uids)
    _session(monkeypatch, core)
    deleted = sorted(key for kind, key, _ in core.calls if kind == "delete")
    assert deleted == ["default/l1-worker-0", "default/l2-worker-0", "default/l3-worker-0"]
    assert sum(1 for e in recorded if e.reason == "Evict") == 6  # pod and PodGroup each


def test_actions_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, recorded: list[RecordEventInput]
) -> None:
    monkeypatch.setenv(scheduler_conf.ENV_ACTIONS, "enqueue, allocate, backfill")
    assert scheduler_conf.session_config().actions == (
        Action.ENQUEUE,
        Action.ALLOCATE,
        Action.BACKFILL,
    )
    core = FakeCore({})
    _session(monkeypatch, core)
    assert [c for c in core.calls if c[0] == "delete"] == []


def test_malformed_actions_fail_the_session_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(scheduler_conf.ENV_ACTIONS, "enqueue, alocate")
    with pytest.raises(ApplicationError, match="unknown action") as failure:
        scheduler_conf.session_config()
    assert failure.value.non_retryable
    monkeypatch.setenv(scheduler_conf.ENV_ACTIONS, "")
    assert Action.RECLAIM in scheduler_conf.session_config().actions

"""Binding a pod's ResourceClaims with its node, against a fake apiserver that keeps claims
as resource.k8s.io/v1 does (resourceVersion guards, the status subresource writing only the
status, reservedFor only on an allocated claim, an allocation immutable once set): allocate and
reserve, a retried bind, a claim allocated elsewhere or replaced, the undo of a failed bind,
conflicts, and a gang sharing one claim. On the real apiserver: tests/e2e/test_claim_binding.py.
"""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client import ApiException
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.messages import BindPlacementsInput, BindPodsResult, JobPlacements
from activities.scheduler import binding, resourceclaims
from models.signals.scheduler import ClaimPlan, DeviceResult, PlacedPod

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
NS = "ns"
GPU0 = DeviceResult(request="gpu", driver="gpu.example.com", pool="n1", device="gpu-0")
GPU1 = DeviceResult(request="gpu", driver="gpu.example.com", pool="n1", device="gpu-1")


@dataclass
class Response:
    data: bytes


def _error(status: int, reason: str, message: str = "") -> ApiException:
    e = ApiException(status=status, reason=reason)
    e.body = json.dumps({"message": message}) if message else None
    return e


@dataclass
class FakeResourceApi:
    """ResourceClaims by name in one namespace, each write recorded."""

    claims: dict[str, Obj] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (what, claim)
    conflicts: int = 0  # writes refused with 409 before one goes through
    refuse: str = ""  # a status write's 422 message, when set
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, uid: str = "c1", status: Obj | None = None) -> None:
        self.claims[name] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS, "uid": uid, "resourceVersion": "1"},
            "spec": {"devices": {"requests": [{"name": "gpu"}]}},
            "status": status or {},
        }

    def read_namespaced_resource_claim(self, name: str, namespace: str, **_: Any) -> Response:
        with self.lock:
            if name not in self.claims:
                raise _error(404, "Not Found")
            return Response(json.dumps(self.claims[name]).encode())

    def _write(self, name: str, body: Obj, status: bool) -> Response:
        with self.lock:
            current = self.claims.get(name)
            if current is None:
                raise _error(404, "Not Found")
            if self.conflicts:
                self.conflicts -= 1
                raise _error(409, "Conflict")
            if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                raise _error(409, "Conflict")
            new = copy.deepcopy(current)
            if status:
                if self.refuse:
                    raise _error(422, "Unprocessable Entity", self.refuse)
                before, after = (
                    current["status"].get("allocation"),
                    body["status"].get("allocation"),
                )
                if before is not None and after is not None and before != after:
                    raise _error(422, "Invalid", "status.allocation: field is immutable")
                if body["status"].get("reservedFor") and after is None:
                    raise _error(422, "Invalid", "status.reservedFor: may not be set unallocated")
                new["status"] = copy.deepcopy(body["status"])
            else:
                new["metadata"]["finalizers"] = list(body["metadata"].get("finalizers") or [])
            rv = str(int(current["metadata"]["resourceVersion"]) + 1)
            new["metadata"]["resourceVersion"] = rv
            self.claims[name] = new
            self.writes.append(("status" if status else "claim", name))
            return Response(json.dumps(new).encode())

    def replace_namespaced_resource_claim(
        self, name: str, namespace: str, body: Obj, **_: Any
    ) -> Response:
        return self._write(name, body, status=False)

    def replace_namespaced_resource_claim_status(
        self, name: str, namespace: str, body: Obj, **_: Any
    ) -> Response:
        return self._write(name, body, status=True)


@dataclass
class FakeCore:
    """Pods (uid, node) and nodes; a binding as the apiserver takes it."""

    pods: dict[str, tuple[str, str]] = field(default_factory=dict)  # name → (uid, node)
    nodes: set[str] = field(default_factory=lambda: {"n1", "n2"})
    refuse_binding: bool = False  # the apiserver refuses every binding (409)
    conditions: list[str] = field(default_factory=list)

    def read_node(self, name: str) -> None:
        if name not in self.nodes:
            raise _error(404, "Not Found")

    def read_namespaced_pod(self, name: str, namespace: str) -> Any:
        if name not in self.pods:
            raise _error(404, "Not Found")
        uid, node = self.pods[name]
        return SimpleNamespace(
            metadata=SimpleNamespace(uid=uid), spec=SimpleNamespace(node_name=node or None)
        )

    def create_namespaced_pod_binding(self, name: str, namespace: str, body: Obj, **_: Any) -> None:
        if name not in self.pods:
            raise _error(404, "Not Found")
        uid, node = self.pods[name]
        pinned = body["metadata"].get("uid")
        if self.refuse_binding or node or (pinned and pinned != uid):
            raise _error(409, "Conflict")
        self.pods[name] = (uid, body["target"]["name"])

    def patch_namespaced_pod_status(self, name: str, namespace: str, body: Obj, **_: Any) -> None:
        self.conditions.append(name)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeCore, FakeResourceApi]:
    core, resource = FakeCore(), FakeResourceApi()
    monkeypatch.setattr(kube, "core", lambda: core)
    monkeypatch.setattr(resourceclaims, "_api", lambda: resource)
    return core, resource


def _pod(core: FakeCore, name: str, uid: str = "") -> str:
    core.pods[name] = (uid or f"uid-{name}", "")
    return core.pods[name][0]


def _bind(*placed: PlacedPod) -> BindPodsResult:
    result: BindPodsResult = ActivityEnvironment().run(
        binding.bind_placements, BindPlacementsInput(namespace=NS, placements=list(placed))
    )
    return result


def _status(resource: FakeResourceApi, name: str) -> Obj:
    status: Obj = resource.claims[name]["status"]
    return status


def _results(status: Obj) -> list[str]:
    return [r["device"] for r in status["allocation"]["devices"]["results"]]


def _reserved(status: Obj) -> list[str]:
    return [r["name"] for r in status.get("reservedFor") or []]


def test_a_claim_is_allocated_and_reserved_before_the_pod_is_bound(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    config = [{"source": "FromClass", "requests": [], "opaque": {"driver": "d", "parameters": {}}}]
    plan = ClaimPlan(claim="c", uid="c1", devices=[GPU0, GPU1], node="n1", config=config)
    result = _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=[plan]))
    assert (result.bound, result.failed) == (["p"], {})
    assert core.pods["p"] == (uid, "n1")
    claim = resource.claims["c"]
    assert claim["metadata"]["finalizers"] == [resourceclaims.FINALIZER]
    allocation = claim["status"]["allocation"]
    assert allocation["devices"] == {
        "results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"},
            {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-1"},
        ],
        "config": config,
    }
    assert allocation["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
        ]
    }
    assert allocation["allocationTimestamp"].endswith("Z")
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": uid}]
    # The finalizer by a normal update, then allocation and reservation in one status write.
    assert resource.writes == [("claim", "c"), ("status", "c")]


def test_devices_every_node_reaches_get_no_node_selector(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])]))
    assert "nodeSelector" not in _status(resource, "c")["allocation"]
    assert "config" not in _status(resource, "c")["allocation"]["devices"]


def test_a_retried_bind_writes_nothing_twice(api: tuple[FakeCore, FakeResourceApi]) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    placed = PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])])
    assert _bind(placed).bound == ["p"]
    writes = list(resource.writes)
    again = _bind(placed)  # the activity retried after it had bound
    assert (again.bound, again.failed) == (["p"], {})
    assert resource.writes == writes
    assert _reserved(_status(resource, "c")) == ["p"]


def test_an_attempt_that_allocated_but_did_not_bind_is_finished_by_the_next(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    plan = ClaimPlan(claim="c", devices=[GPU0], node="n1")
    allocation = resourceclaims.allocation(plan, datetime.now(UTC))
    resource.claims["c"]["status"] = {"allocation": allocation}  # reservation not written
    assert _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=[plan])).bound == ["p"]
    assert _reserved(_status(resource, "c")) == ["p"]
    assert resource.writes == [("status", "c")]


def test_a_claim_allocated_otherwise_fails_the_pod_and_is_left_alone(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    other = resourceclaims.allocation(
        ClaimPlan(claim="c", devices=[GPU1], node="n1"),
        datetime.now(UTC),
    )
    resource.add("c", status={"allocation": other, "reservedFor": [{"uid": "q1", "name": "q"}]})
    before = copy.deepcopy(resource.claims["c"])
    result = _bind(
        PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])])
    )
    assert result.failed == {"p": f"claim {NS}/c is allocated elsewhere"}
    assert binding.failure_reason(result.failed["p"]) == "DynamicResources"
    assert core.pods["p"] == (uid, "")
    assert resource.claims["c"] == before


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        ("replaced", f"claim {NS}/c was replaced"),
        ("missing", f"claim {NS}/c does not exist"),
        ("deleting", f"claim {NS}/c is being deleted"),
    ],
)
def test_a_claim_that_is_not_the_one_decided_on_fails_the_pod(
    api: tuple[FakeCore, FakeResourceApi], setup: str, why: str
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    if setup != "missing":
        resource.add("c", uid="c2" if setup == "replaced" else "c1")
    if setup == "deleting":
        resource.claims["c"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    plan = ClaimPlan(claim="c", uid="c1", devices=[GPU0], node="n1")
    result = _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=[plan]))
    assert result.failed == {"p": why}
    assert core.pods["p"] == (uid, "")
    assert [w for w in resource.writes if w[0] == "status"] == []


def test_a_failed_binding_releases_and_deallocates_what_the_attempt_took(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    core.refuse_binding = True
    resource.add("c")
    shared = resourceclaims.allocation(ClaimPlan(claim="s", devices=[GPU1]), datetime.now(UTC))
    resource.add("s", uid="s1", status={"allocation": shared, "reservedFor": [{"uid": "q1"}]})
    plans = [ClaimPlan(claim="c", devices=[GPU0], node="n1"), ClaimPlan(claim="s", uid="s1")]
    result = _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=plans))
    assert result.failed == {"p": "failed to bind to node n1: Conflict"}
    claim = resource.claims["c"]
    assert claim["status"] == {"reservedFor": []}  # unallocated: its devices are free again
    assert claim["metadata"]["finalizers"] == []
    # The shared claim keeps its allocation and its other user; only this pod left it.
    assert _status(resource, "s") == {"allocation": shared, "reservedFor": [{"uid": "q1"}]}


def test_a_later_claim_that_fails_releases_the_earlier_ones(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("a")
    resource.add("b", uid="b1")
    plans = [
        ClaimPlan(claim="a", devices=[GPU0], node="n1"),
        ClaimPlan(claim="b", uid="b2", devices=[GPU1], node="n1"),  # b was replaced
    ]
    result = _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=plans))
    assert result.failed == {"p": f"claim {NS}/b was replaced"}
    assert "allocation" not in _status(resource, "a") and not _reserved(_status(resource, "a"))


def test_a_missing_node_writes_nothing(api: tuple[FakeCore, FakeResourceApi]) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    plan = ClaimPlan(claim="c", devices=[GPU0], node="gone")
    result = _bind(PlacedPod(pod="p", uid=uid, node="gone", claims=[plan]))
    assert result.failed == {"p": "failed to bind to node gone: node not found"}
    assert resource.writes == []


def test_the_apiservers_refusal_fails_the_pod_with_its_message(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    resource.refuse = "status.allocation.devices.results[0].request: no such request"
    result = _bind(
        PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])])
    )
    assert result.failed == {"p": f"claim {NS}/c could not be reserved: {resource.refuse}"}
    assert core.pods["p"] == (uid, "")
    assert resource.claims["c"]["metadata"].get("finalizers") == []  # released


def test_conflicts_are_read_again_and_retried(api: tuple[FakeCore, FakeResourceApi]) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    resource.conflicts = 2
    result = _bind(
        PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])])
    )
    assert result.bound == ["p"]
    assert _results(_status(resource, "c")) == ["gpu-0"] and _reserved(_status(resource, "c")) == [
        "p"
    ]


def test_endless_conflicts_fail_the_pod(api: tuple[FakeCore, FakeResourceApi]) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    resource.conflicts = 1000
    result = _bind(
        PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])])
    )
    assert result.failed["p"].startswith(f"claim {NS}/c could not be reserved: it kept changing")


def test_a_gang_sharing_a_claim_allocates_it_once_and_reserves_it_for_each(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    """The sharers come after the allocating pod whatever the order in the gang."""
    core, resource = api
    uids = {name: _pod(core, name) for name in ("w0", "w1", "w2", "w3")}
    resource.add("shared")
    allocate = ClaimPlan(claim="shared", uid="c1", devices=[GPU0], node="n1")
    share = ClaimPlan(claim="shared", uid="c1")
    placed = [
        PlacedPod(pod=name, uid=uid, node="n1", claims=[allocate if name == "w3" else share])
        for name, uid in uids.items()
    ]
    result = _bind(*placed)
    assert sorted(result.bound) == sorted(uids) and result.failed == {}
    assert _results(_status(resource, "shared")) == ["gpu-0"]
    assert sorted(_reserved(_status(resource, "shared"))) == sorted(uids)


def test_a_gang_that_fails_together_frees_its_shared_claim(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    core.refuse_binding = True
    uids = {name: _pod(core, name) for name in ("w0", "w1")}
    resource.add("shared")
    placed = [
        PlacedPod(pod="w0", uid=uids["w0"], node="n1", claims=[ClaimPlan(claim="shared")]),
        PlacedPod(
            pod="w1", uid=uids["w1"], node="n1", claims=[ClaimPlan(claim="shared", devices=[GPU0])]
        ),
    ]
    assert set(_bind(*placed).failed) == {"w0", "w1"}
    assert _status(resource, "shared") == {"reservedFor": []}


def test_a_sharer_of_a_claim_nobody_allocated_fails(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    result = _bind(PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="c")]))
    assert result.failed == {"p": f"claim {NS}/c is not allocated"}


def test_the_pods_uid_is_read_when_the_placement_lacks_it(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, resource = api
    uid = _pod(core, "p")
    resource.add("c")
    result = _bind(PlacedPod(pod="p", node="n1", claims=[ClaimPlan(claim="c", devices=[GPU0])]))
    assert result.bound == ["p"]
    assert _status(resource, "c")["reservedFor"] == [{"resource": "pods", "name": "p", "uid": uid}]


def test_a_session_binding_marks_a_pod_whose_claim_failed(
    api: tuple[FakeCore, FakeResourceApi],
) -> None:
    core, _ = api
    uid = _pod(core, "p")
    ok = _pod(core, "q")
    job = JobPlacements(
        job_workflow_id="vcjob/ns/j",
        namespace=NS,
        placements=[
            PlacedPod(pod="p", uid=uid, node="n1", claims=[ClaimPlan(claim="missing")]),
            PlacedPod(pod="q", uid=ok, node="n2"),
        ],
    )
    bound, failed = ActivityEnvironment().run(binding.bind_gangs, [job], 1.0)
    assert (bound, failed) == (1, {f"{NS}/p": f"claim {NS}/missing does not exist"})
    assert core.conditions == ["p"]  # PodScheduled=False saying why

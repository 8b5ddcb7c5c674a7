"""The job's PodGroup against a recording fake apiserver: its subGroupPolicy written at creation
for a job with partitions (and left out otherwise), and patched as Volcano's job controller
updates it (shouldUpdateExistingPodGroup, updatePgSubGroupPolicy)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client import ApiException
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.controllers import podgroups
from activities.messages import EnsurePodGroupInput
from controllers.job import subgroups
from models.vcjob import Job
from tests.builders import make_job

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
# Two partitions of two, both needed: the task's minTaskMember stays its replicas.
PARTITIONS = {"partitionPolicy": {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 2}}


class FakeApi:
    """The namespace's PodGroups by name; every write recorded in order."""

    def __init__(self, groups: dict[str, Obj] | None = None) -> None:
        self.groups = copy.deepcopy(groups or {})
        self.calls: list[tuple[str, str, Obj]] = []

    def create_namespaced_custom_object(self, *args: Any, **_: Any) -> None:
        body = args[4]
        name = body["metadata"]["name"]
        if name in self.groups:
            raise ApiException(status=409, reason="AlreadyExists")
        self.groups[name] = copy.deepcopy(body)
        self.calls.append(("create", name, body))

    def get_namespaced_custom_object(self, *args: Any) -> Obj:
        name = args[4]
        if name not in self.groups:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(self.groups[name])

    def patch_namespaced_custom_object(self, *args: Any, **_: Any) -> None:
        name, body = args[4], args[5]
        spec = self.groups[name]["spec"]
        for key, value in body["spec"].items():
            if value is None:
                spec.pop(key, None)
            else:
                spec[key] = value
        self.calls.append(("patch", name, body))


def _job(*partitioned: str) -> Job:
    builder = make_job("j", "ns")
    for name in ("a", "b"):
        builder.task(name, 4, **(PARTITIONS if name in partitioned else {}))
    job = builder.spec(minAvailable=4).build()
    return job.model_copy(update={"metadata": job.metadata.model_copy(update={"uid": "u1"})})


def _ensure(api: FakeApi, monkeypatch: pytest.MonkeyPatch, job: Job, look_up: bool) -> None:
    monkeypatch.setattr(kube, "custom", lambda: api)
    ActivityEnvironment().run(
        podgroups.ensure_pod_group, EnsurePodGroupInput(job=job, look_up=look_up)
    )


def test_the_spec_has_no_sub_group_policy_without_partitions() -> None:
    assert "subGroupPolicy" not in podgroups.desired_spec(_job(), {})


def test_the_spec_has_one_policy_per_partitioned_task() -> None:
    job = _job("b")
    spec = podgroups.desired_spec(job, {})
    assert spec["subGroupPolicy"] == [
        {
            "name": "b",
            "subGroupSize": 2,
            "minSubGroups": 2,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "b"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
        }
    ]


def test_a_new_job_with_partitions_creates_its_podgroup_with_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = FakeApi()
    job = _job("a", "b")
    _ensure(api, monkeypatch, job, look_up=False)
    ((kind, _, body),) = api.calls
    assert kind == "create"
    assert [p["name"] for p in body["spec"]["subGroupPolicy"]] == ["a", "b"]


@pytest.mark.parametrize(
    ("before", "after", "patched"),
    [
        pytest.param((), (), None, id="no-partitions-no-patch"),
        pytest.param(("b",), ("b",), None, id="same-partitions-no-patch"),
        pytest.param((), ("b",), ["b"], id="partitions-added"),
        pytest.param(("b",), ("a", "b"), ["a", "b"], id="one-more"),
        pytest.param(("a", "b"), (), "cleared", id="partitions-gone"),
    ],
)
def test_an_existing_podgroup_gets_the_jobs_policies(
    monkeypatch: pytest.MonkeyPatch,
    before: tuple[str, ...],
    after: tuple[str, ...],
    patched: list[str] | str | None,
) -> None:
    """Only subGroupPolicy changes here; a job without partitions that left policies behind
    clears them (Volcano writes an empty list, which its Update leaves out of the object)."""
    old = _job(*before)
    api = FakeApi()
    _ensure(api, monkeypatch, old, look_up=False)
    api.calls.clear()
    _ensure(api, monkeypatch, _job(*after), look_up=True)
    stored = next(iter(api.groups.values()))["spec"]
    if patched is None:
        assert api.calls == []
        return
    ((kind, _, body),) = api.calls
    assert kind == "patch"
    if patched == "cleared":
        assert body == {"spec": {"subGroupPolicy": None}}
        assert "subGroupPolicy" not in stored
    else:
        assert list(body["spec"]) == ["subGroupPolicy"]
        assert [p["name"] for p in stored["subGroupPolicy"]] == patched


def test_the_patch_leaves_entries_volcano_would_keep() -> None:
    """Stored in another order, or with an entry named for no task: no rewrite."""
    job = _job("a", "b")
    spec = podgroups.desired_spec(job, {})
    policies = [*reversed(spec["subGroupPolicy"]), {"name": "other", "subGroupSize": 1}]
    current = {"spec": {**spec, "subGroupPolicy": policies}}
    assert podgroups.update_patch(job, current, spec) == {}


def test_the_patch_rewrites_a_changed_policy_with_the_sizes() -> None:
    job = _job("b")
    spec = podgroups.desired_spec(job, {})
    stale = [{**spec["subGroupPolicy"][0], "minSubGroups": 1}]
    current = {"spec": {**spec, "minMember": 1, "subGroupPolicy": stale}}
    assert podgroups.update_patch(job, current, spec) == {
        "minMember": 4,
        "subGroupPolicy": [p.dump() for p in subgroups.sub_group_policy(job)],
    }

"""The Kubernetes Workload and PodGroup of a batch/v1 Job with spec.scheduling: their names, the
objects, the pods naming the PodGroup, and when the core ensures and patches them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from controllers.batchjob import controller, podspec, workload
from controllers.batchjob.state import BatchJobRecord
from controllers.outcomes import ActionFailed
from models import batchv1, labels
from models.batchv1 import NewPod, SchedulingGroup
from tests.builders import make_batch_job, observed_batch_job
from tests.unit.controllers.batchjob.cluster import FakeCluster

GANG = {"schedulingPolicy": {"gang": {}}}
SAFE = re.compile(r"^[bcdfghjklmnpqrstvwxz2456789]+$")


def _job(scheduling: dict[str, Any] | None = GANG, **spec: Any) -> batchv1.BatchJob:
    fields = {"parallelism": 3, "completions": 3, **spec}
    if scheduling is not None:
        fields["scheduling"] = scheduling
    return make_batch_job("train").spec(**fields).build()


def _volcano_template(queue: str | None = None) -> dict[str, Any]:
    template = make_batch_job("train").manifest()["spec"]["template"]
    template["spec"]["schedulerName"] = "volcano"
    template["spec"]["priorityClassName"] = "high"
    if queue:
        template["metadata"]["annotations"] = {batchv1.QUEUE_ANNOTATION: queue}
    return template


# -- names ----------------------------------------------------------------------------------


def test_fnv1a32_matches_the_reference_vectors() -> None:
    assert workload._fnv1a32(b"") == 0x811C9DC5
    assert workload._fnv1a32(b"a") == 0xE40C292C
    assert workload._fnv1a32(b"foobar") == 0xBF9CF968


def test_workload_name_is_the_job_name_and_a_safe_hash_of_its_uid() -> None:
    name = workload.workload_name(_job())
    prefix, _, suffix = name.rpartition("-")
    assert prefix == "train" and SAFE.match(suffix) and len(suffix) <= 10
    other = make_batch_job("train", uid="other-uid").spec(scheduling=GANG).build()
    assert workload.workload_name(other) != name
    assert workload.workload_name(_job()) == name  # stable across restarts


def test_workload_name_of_a_long_job_name_is_cut_to_253() -> None:
    job = make_batch_job("j" * 300).spec(scheduling=GANG).build()
    name = workload.workload_name(job)
    assert len(name) == 253 and name.startswith("j" * 200)


def test_template_and_pod_group_names() -> None:
    job = _job()
    assert workload.template_name(job) == "train-pgt-0"
    wl = workload.workload_name(job)
    name = workload.pod_group_name(wl, "train-pgt-0")
    assert name.startswith(f"{wl}-train-pgt-0-") and SAFE.match(name.rpartition("-")[2])


@pytest.mark.parametrize(
    ("wl_len", "tpl_len", "kept"),
    [
        pytest.param(20, 300, (20, None), id="short-workload-keeps-all"),
        pytest.param(300, 20, (None, 20), id="short-template-keeps-all"),
        pytest.param(300, 300, ("half+odd", "half"), id="both-long-split"),
    ],
)
def test_pod_group_name_truncation(wl_len: int, tpl_len: int, kept: tuple[Any, Any]) -> None:
    name = workload.pod_group_name("w" * wl_len, "t" * tpl_len)
    assert len(name) == 253
    suffix = name.rpartition("-")[2]
    room = 253 - len(suffix) - 2
    w, t = name.count("w"), name.count("t")
    assert w + t == room
    if kept == (20, None):
        assert w == 20
    elif kept == (None, 20):
        assert t == 20
    else:
        assert (w, t) == (room - room // 2, room // 2)


# -- minCount and eligibility ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("scheduling", "parallelism", "expected"),
    [
        pytest.param(GANG, 3, 3, id="gang-defaults-to-parallelism"),
        pytest.param(GANG, 0, 1, id="gang-at-least-one"),
        pytest.param({"schedulingPolicy": {"gang": {"minCount": 2}}}, 3, 2, id="gang-explicit"),
        pytest.param({"schedulingPolicy": {"basic": {}}}, 3, None, id="basic"),
        pytest.param({}, 3, None, id="no-policy-is-basic"),
    ],
)
def test_min_count(scheduling: dict[str, Any], parallelism: int, expected: int | None) -> None:
    assert workload.min_count(_job(scheduling, parallelism=parallelism)) == expected


def test_wanted_only_for_a_root_job_with_scheduling_and_no_group_of_its_own() -> None:
    assert workload.wanted(_job())
    assert not workload.wanted(_job(scheduling=None))
    template = make_batch_job("train").manifest()["spec"]["template"]
    template["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    assert not workload.wanted(_job(template=template))
    owned = make_batch_job("train").spec(scheduling=GANG).manifest()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "x/v1", "kind": "Parent", "name": "p", "uid": "p", "controller": True}
    ]
    assert not workload.wanted(batchv1.BatchJob.model_validate(owned))


# -- the objects ----------------------------------------------------------------------------


# The Job owns them as it owns its pods.
JOB_OWNER = podspec.owner_reference(make_batch_job("train").build())


def test_workload_object() -> None:
    scheduling = {**GANG, "disruptionMode": {"all": {}}}
    job = _job(scheduling, template=_volcano_template())
    name = workload.workload_name(job)
    assert workload.workload(job) == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": [JOB_OWNER]},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [
                {
                    "name": "train-pgt-0",
                    "schedulingPolicy": {"gang": {"minCount": 3}},
                    "disruptionMode": {"all": {}},
                    "priorityClassName": "high",
                }
            ],
        },
    }


def test_pod_group_object_owned_by_job_and_workload_with_the_queue() -> None:
    job = _job({"schedulingPolicy": {"basic": {}}}, template=_volcano_template(queue="q1"))
    wl = workload.workload_name(job)
    group = workload.pod_group(job, "wl-uid")
    assert group["metadata"] == {
        "name": workload.pod_group_name(wl, "train-pgt-0"),
        "namespace": "ns",
        "ownerReferences": [
            JOB_OWNER,
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "Workload",
                "name": wl,
                "uid": "wl-uid",
            },
        ],
        "annotations": {labels.QUEUE_NAME: "q1"},
    }
    assert group["spec"] == {
        "workloadRef": {"workloadName": wl, "templateName": "train-pgt-0"},
        "schedulingPolicy": {"basic": {}},
        "priorityClassName": "high",
    }


def test_pod_names_its_pod_group_and_gets_no_group_name_annotation() -> None:
    job = _job(template=_volcano_template())
    group = SchedulingGroup(pod_group="train-pg", uid="pg-uid")
    pod = podspec.build_pod(job, NewPod(name="train-1"), group)
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "train-pg"}
    assert labels.GROUP_NAME not in pod["metadata"]["annotations"]
    assert pod["metadata"]["ownerReferences"][1] == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "name": "train-pg",
        "uid": "pg-uid",
    }
    plain = podspec.build_pod(job, NewPod(name="train-1"))
    assert "schedulingGroup" not in plain["spec"]
    assert plain["metadata"]["annotations"][labels.GROUP_NAME] == job.pod_group_name


# -- the core -------------------------------------------------------------------------------


def _cluster(scheduling: dict[str, Any] | None = GANG, follow: bool = True) -> FakeCluster:
    cluster = FakeCluster(state=BatchJobRecord(follow_scheduling=follow))
    manifest = (
        make_batch_job("train")
        .spec(parallelism=3, completions=3, template=_volcano_template())
        .manifest()
    )
    if scheduling is not None:
        manifest["spec"]["scheduling"] = scheduling
    cluster.observe(manifest)
    return cluster


def test_workload_ensured_before_the_first_pod_which_names_its_pod_group() -> None:
    cluster = _cluster()
    kinds = [e.kind for e in cluster.effects]
    assert kinds.count("EnsureWorkload") == 1 and "EnsurePodGroup" not in kinds
    assert kinds.index("EnsureWorkload") < kinds.index("CreatePods")
    [create] = cluster.named("CreatePods")
    gang = cluster.state.kube_gang
    assert gang is not None and (gang.uid, gang.min_count) == ("pg-uid", 3)
    assert create.group == SchedulingGroup(pod_group=gang.pod_group, uid="pg-uid")
    assert not cluster.state.pod_group


def test_no_pod_until_the_workload_is_ensured_and_a_failure_retries_it() -> None:
    cluster = FakeCluster(state=BatchJobRecord(follow_scheduling=True))
    manifest = make_batch_job("train").spec(scheduling=GANG).manifest()
    first = controller.decide(cluster.state, observed_batch_job(manifest), cluster.now)
    assert [e.kind for e in first.effects] == ["EnsureWorkload"]
    cluster.state = first.state
    cluster.feed(ActionFailed(effect="EnsureWorkload", error="boom"))
    assert not cluster.named("CreatePods") and cluster.state.kube_gang is not None
    cluster.advance(cluster.timers["retry"] - cluster.now)
    assert len(cluster.named("EnsureWorkload")) == 1  # the retry's; it made the pods
    assert cluster.named("CreatePods")


def test_a_changed_min_count_is_patched_once_and_again_after_a_failure() -> None:
    cluster = _cluster()
    manifest = (
        make_batch_job("train")
        .spec(parallelism=3, completions=3, template=_volcano_template())
        .manifest()
    )
    manifest["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    cluster.observe(manifest)
    cluster.observe(manifest)
    [patch] = cluster.named("PatchGangMinCount")
    assert patch.min_count == 2
    cluster.feed(ActionFailed(effect="PatchGangMinCount", error="boom"))
    cluster.observe(manifest)
    assert [p.min_count for p in cluster.named("PatchGangMinCount")] == [2, 2]


def test_a_job_without_scheduling_keeps_its_volcano_pod_group() -> None:
    cluster = _cluster(scheduling=None)
    kinds = [e.kind for e in cluster.effects]
    assert "EnsureWorkload" not in kinds and kinds.count("EnsurePodGroup") == 1
    assert all(c.group is None for c in cluster.named("CreatePods"))
    assert cluster.state.kube_gang is None


def test_scheduling_not_followed_without_the_patch() -> None:
    cluster = _cluster(follow=False)
    kinds = [e.kind for e in cluster.effects]
    assert "EnsureWorkload" not in kinds and "EnsurePodGroup" in kinds


def test_a_job_that_already_started_gets_no_workload() -> None:
    cluster = FakeCluster(state=BatchJobRecord(follow_scheduling=True))
    manifest = make_batch_job("train").spec(scheduling=GANG).manifest()
    manifest["status"] = {"startTime": "2026-01-01T00:00:00Z", "active": 1}
    cluster.observe(manifest)
    assert not cluster.named("EnsureWorkload") and cluster.state.kube_gang is None

"""Pods of batch/v1 Jobs as the built-in controller makes them from the template."""

from __future__ import annotations

from controllers.batchjob import podspec
from models import batchv1
from models.batchv1 import NewPod
from tests.builders import make_batch_job


def test_non_indexed_pod_keeps_template_and_adds_finalizer_and_owner() -> None:
    job = make_batch_job("train").build()
    pod = podspec.build_pod(job, NewPod(name="train-bcdfg"))
    meta = pod["metadata"]
    assert meta["name"] == "train-bcdfg" and meta["namespace"] == "ns"
    assert meta["labels"] == {
        "batch.kubernetes.io/controller-uid": "job-uid",
        "batch.kubernetes.io/job-name": "train",
    }
    assert meta["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": "job-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"] == job.spec.template.spec  # schedulerName and all, verbatim
    assert "hostname" not in pod["spec"]


def test_indexed_pod_carries_its_index_everywhere() -> None:
    job = (
        make_batch_job("train")
        .spec(completionMode="Indexed", completions=3, backoffLimitPerIndex=2)
        .build()
    )
    pod = podspec.build_pod(
        job, NewPod(name="train-2-bcdfg", index=2, failure_count=1, ignored_failure_count=1)
    )
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == "2"
    assert meta["annotations"] == {
        "batch.kubernetes.io/job-completion-index": "2",
        "batch.kubernetes.io/job-index-failure-count": "1",
        "batch.kubernetes.io/job-index-ignored-failure-count": "1",
    }
    assert spec["hostname"] == "train-2"
    (env,) = spec["containers"][0]["env"]
    assert env == {
        "name": "JOB_COMPLETION_INDEX",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}
        },
    }
    assert "env" not in (job.spec.template.spec or {})["containers"][0], "template untouched"


def test_gang_scheduled_pods_name_their_pod_group() -> None:
    manifest = make_batch_job("train").manifest()
    template = manifest["spec"]["template"]
    template["spec"]["schedulerName"] = "volcano"
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    template["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": "research"}
    job = batchv1.defaulted(batchv1.BatchJob.model_validate(manifest))
    pod = podspec.build_pod(job, NewPod(name="train-bcdfg"))
    assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "podgroup-job-uid"
    group = podspec.pod_group(job)
    assert group["metadata"]["name"] == "podgroup-job-uid"
    assert group["metadata"]["ownerReferences"] == [podspec.owner_reference(job)]
    assert group["spec"] == {
        "minMember": 1,
        "queue": "research",
        "minResources": {"cpu": "250m", "pods": "1"},
    }


def test_pods_for_kube_scheduler_have_no_pod_group() -> None:
    pod = podspec.build_pod(make_batch_job("train").build(), NewPod(name="train-bcdfg"))
    assert "scheduling.k8s.io/group-name" not in pod["metadata"]["annotations"]

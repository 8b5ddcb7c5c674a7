"""The Volcano pod builder: what a pod takes from its Job's annotations and labels."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job import podspec
from models.vcjob import Job
from tests.builders import make_job

MIN, MAX = "volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"


def _pod(annotations: dict[str, str], job_labels: dict[str, str] | None = None) -> Any:
    manifest = make_job("train", "ns").task("worker", replicas=2).manifest()
    manifest["metadata"]["uid"] = "u1"
    manifest["metadata"]["annotations"] = annotations
    manifest["metadata"]["labels"] = job_labels or {}
    return podspec.build_pod(Job.model_validate(manifest), "worker", 1, version=0, retry_count=0)


@pytest.mark.parametrize(
    ("job_annotations", "expected"),
    [
        ({MIN: "2", MAX: "1"}, {MIN: "2"}),  # only the first of the budget goes
        ({MAX: "1"}, {MAX: "1"}),
        ({}, {}),
    ],
    ids=["both", "max-only", "none"],
)
def test_a_pod_takes_only_the_first_disruption_budget_of_its_job(
    job_annotations: dict[str, str], expected: dict[str, str]
) -> None:
    annotations = _pod(job_annotations)["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k in (MIN, MAX)} == expected


def test_scheduling_hints_go_from_annotations_and_from_labels_as_volcano_copies_them() -> None:
    hints = {
        "volcano.sh/preemptable": "true",
        "volcano.sh/cooldown-time": "60s",
        "volcano.sh/revocable-zone": "*",
    }
    pod = _pod(hints, job_labels={**hints, MIN: "1", "team": "a"})
    annotations, pod_labels = pod["metadata"]["annotations"], pod["metadata"]["labels"]
    assert {k: annotations[k] for k in hints} == hints
    # From the labels only preemptable and cooldown-time; no budget, no other label.
    assert {k: v for k, v in pod_labels.items() if k in {*hints, MIN, "team"}} == {
        "volcano.sh/preemptable": "true",
        "volcano.sh/cooldown-time": "60s",
    }


_CLAIM = {"accessModes": ["ReadWriteOnce"]}


@pytest.mark.parametrize(
    ("volumes", "claims"),
    [
        pytest.param([{"mountPath": "/d", "volumeClaimName": "shared"}], ["shared"], id="named"),
        pytest.param(
            [{"mountPath": "/d", "volumeClaim": _CLAIM, "volumeClaimName": "v-pvc-0123456789ab"}],
            ["v-pvc-0123456789ab"],
            id="written-back",
        ),
        pytest.param(
            [{"mountPath": "/d", "volumeClaim": _CLAIM}], ["v-pvc-0"], id="run-from-before"
        ),
    ],
)
def test_pods_mount_the_claims_the_spec_names(
    volumes: list[dict[str, Any]], claims: list[str]
) -> None:
    doc = make_job("v", "ns").task("w", replicas=1).spec(volumes=volumes).manifest()
    doc["spec"]["tasks"][0]["template"] = {
        "spec": {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}
    }
    doc["metadata"]["uid"] = "u1"
    job = Job.model_validate(doc)
    pod = podspec.build_pod(job, "w", 0, version=0, retry_count=0)
    assert [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]] == claims
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "caldera-volume-0", "mountPath": "/d"}
    ]
    assert "volumeMounts" not in pod["spec"]["initContainers"][0]


def test_claim_manifest_is_owned_by_the_job() -> None:
    doc = make_job("v", "ns").task("w", replicas=1).manifest()
    doc["metadata"]["uid"] = "u1"
    claim = podspec.claim_manifest(Job.model_validate(doc), "v-pvc-0123456789ab", _CLAIM)
    assert claim["metadata"]["name"] == "v-pvc-0123456789ab"
    (owner,) = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", "u1", True)
    assert claim["spec"] == _CLAIM


QUEUE_NAME = "volcano.sh/queue-name"


@pytest.mark.parametrize(
    ("queue", "label"),
    [
        pytest.param(None, "default", id="unset-default"),
        pytest.param("research", "research", id="cluster-queue"),
        pytest.param("namespace/training", None, id="namespace-queue"),
        pytest.param("other/training", None, id="malformed"),
    ],
)
def test_the_queue_label_names_only_a_cluster_queue_the_annotation_keeps_the_reference(
    queue: str | None, label: str | None
) -> None:
    manifest = make_job("train", "ns").task("worker", replicas=1).manifest()
    manifest["metadata"]["uid"] = "u1"
    if queue is not None:
        manifest["spec"]["queue"] = queue
    pod = podspec.build_pod(Job.model_validate(manifest), "worker", 0, version=0, retry_count=0)
    assert pod["metadata"]["annotations"][QUEUE_NAME] == (queue or "default")
    assert pod["metadata"]["labels"].get(QUEUE_NAME) == label

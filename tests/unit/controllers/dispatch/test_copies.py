"""The copy and the Command the dispatcher writes on a worker cluster."""

from __future__ import annotations

from datetime import UTC, datetime

from controllers.dispatch import copies
from models.dispatch import (
    DISPATCHED_TO_ANNOTATION,
    GENERATION_ANNOTATION,
    LEASE_ANNOTATION,
    ORIGIN_ANNOTATION,
)
from models.signals.common import CommandIssued
from models.vcjob import Job
from tests.builders import make_job


def test_copy_keeps_the_spec_less_the_managers_own_and_names_its_dispatch() -> None:
    doc = make_job("train", "ns").task("w", replicas=2).spec(queue="multi").manifest()
    doc["metadata"].update(
        uid="u1",
        labels={"team": "x"},
        annotations={DISPATCHED_TO_ANNOTATION: "a", copies.LAST_APPLIED: "{}", "keep": "me"},
    )
    body = copies.manifest(
        Job.model_validate(doc), "u1", 3, datetime(2026, 1, 1, 0, 1, 0, 500, UTC), "default"
    )
    meta = body["metadata"]
    assert meta == {
        "name": "train",
        "namespace": "ns",
        "labels": {"team": "x"},
        "annotations": {
            "keep": "me",
            ORIGIN_ANNOTATION: "u1",
            GENERATION_ANNOTATION: "3",
            LEASE_ANNOTATION: "2026-01-01T00:01:00Z",
        },
    }
    spec = body["spec"]
    assert isinstance(spec, dict) and spec["queue"] == "default"
    assert spec["tasks"][0]["replicas"] == 2
    assert copies.whose(meta["annotations"]) == ("u1", 3)  # type: ignore[index]
    assert copies.whose({}) == ("", 0)


def test_command_is_named_and_aimed_at_the_copy() -> None:
    issued = CommandIssued(action="AbortJob", reason="r", message="m")
    body = copies.command("ns", "train", "copy-uid", 2, 7, issued)
    assert body["metadata"] == {
        "name": "train-abortjob-g2-7",
        "namespace": "ns",
        "ownerReferences": [body["target"]],
    }
    assert body["action"] == "AbortJob" and body["reason"] == "r" and body["message"] == "m"
    target = body["target"]
    assert isinstance(target, dict) and target["uid"] == "copy-uid" and target["kind"] == "Job"
    assert len(copies.command_name("x" * 300, "RestartJob", 1, 1)) == copies.NAME_LIMIT


def test_a_spec_change_takes_only_what_an_update_may_change_and_keeps_what_the_worker_filled() -> (
    None
):
    there = {
        "queue": "default",  # the worker had no queue `multi`
        "minAvailable": 2,
        "schedulerName": "volcano",
        "volumes": [{"mountPath": "/data", "volumeClaimName": "train-data-x7"}],
        "tasks": [{"name": "w", "replicas": 2, "minAvailable": 2, "template": {"spec": {}}}],
    }
    doc = make_job("train", "ns").task("w", replicas=4).spec(queue="multi").manifest()
    doc["spec"].update(minAvailable=3, priorityClassName="high")
    updated = copies.updated_spec(there, Job.model_validate(doc))
    assert updated["queue"] == "default" and updated["volumes"] == there["volumes"]
    assert (updated["minAvailable"], updated["priorityClassName"]) == (3, "high")
    assert updated["tasks"][0]["replicas"] == 4 and updated["tasks"][0]["template"] == {"spec": {}}
    assert copies.updated_spec(updated, Job.model_validate(doc)) == updated  # no change twice

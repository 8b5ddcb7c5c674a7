"""The volumes step against a recording fake apiserver: a claim name generated, written into
the Job before its PVC is made and kept by the next attempt; a named claim used or waited for.
On the real stack: tests/e2e/test_volumes.py."""

from __future__ import annotations

import copy
import dataclasses
import random
import re
from typing import Any

import pytest
from kubernetes.client import ApiException
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import kube, kube_events, options
from activities.controllers import volume_claims
from activities.messages import JobInput, RecordEventInput, VolumesResult
from controllers.job import podspec
from models.vcjob import Job

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


class FakeApi:
    """One Job and the namespace's PVCs; every write recorded in order."""

    def __init__(self, job: Obj, claims: set[str], fail_create: int = 0) -> None:
        self.job = copy.deepcopy(job)
        self.claims = set(claims)
        self.calls: list[tuple[str, str]] = []
        self.fail_create = fail_create  # PVC creations that fail (a transient 500) before one works

    def get_namespaced_custom_object(self, *args: Any) -> Obj:
        return copy.deepcopy(self.job)

    def replace_namespaced_custom_object(self, *args: Any) -> None:
        body = args[5]
        if body["metadata"]["resourceVersion"] != self.job["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        self.job = copy.deepcopy(body)
        self.job["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        self.calls.append(
            ("update", ",".join(v.get("volumeClaimName", "") for v in body["spec"]["volumes"]))
        )

    def read_namespaced_persistent_volume_claim(self, name: str, namespace: str) -> None:
        if name not in self.claims:
            raise ApiException(status=404, reason="Not Found")

    def create_namespaced_persistent_volume_claim(self, namespace: str, body: Obj) -> None:
        if self.fail_create:
            self.fail_create -= 1
            raise ApiException(status=500, reason="Internal Error")
        name = body["metadata"]["name"]
        if name in self.claims:
            raise ApiException(status=409, reason="AlreadyExists")
        self.claims.add(name)
        self.calls.append(("create", name))


def _job(*vols: Obj) -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1", "resourceVersion": "1"},
        "spec": {"tasks": [{"name": "w", "replicas": 1, "template": {}}], "volumes": list(vols)},
    }


@pytest.fixture
def warned(monkeypatch: pytest.MonkeyPatch) -> list[RecordEventInput]:
    out: list[RecordEventInput] = []
    monkeypatch.setattr(kube_events, "write_event", out.append)
    return out


def _run(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch, job: Obj, attempt: int = 1
) -> VolumesResult:
    monkeypatch.setattr(kube, "core", lambda: api)
    monkeypatch.setattr(kube, "custom", lambda: api)
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    result: VolumesResult = env.run(
        volume_claims.ensure_volumes, JobInput(job=Job.model_validate(job))
    )
    return result


def test_generated_name_is_written_back_then_its_claim_created(
    monkeypatch: pytest.MonkeyPatch, warned: list[RecordEventInput]
) -> None:
    job = _job({"mountPath": "/data", "volumeClaim": CLAIM})
    api = FakeApi(job, claims=set())
    result = _run(api, monkeypatch, job)
    (name,) = result.claims
    assert re.fullmatch(r"j-pvc-[0-9a-z]{12}", name)
    assert api.calls == [("update", name), ("create", name)]
    assert api.job["spec"]["volumes"][0] == {
        "mountPath": "/data",
        "volumeClaim": CLAIM,
        "volumeClaimName": name,
    }
    assert not warned


def test_an_attempt_after_a_failed_create_keeps_the_name(
    monkeypatch: pytest.MonkeyPatch, warned: list[RecordEventInput]
) -> None:
    job = _job({"mountPath": "/data", "volumeClaim": CLAIM})
    api = FakeApi(job, claims=set(), fail_create=1)
    with pytest.raises(ApplicationError):
        _run(api, monkeypatch, job)
    (written,) = [n for kind, n in api.calls if kind == "update"]
    result = _run(api, monkeypatch, job, attempt=2)  # the input still lacks the name
    assert result.claims == [written]
    assert api.calls == [("update", written), ("create", written)], "no second name, no second PVC"


def test_a_named_claim_is_used_as_is(
    monkeypatch: pytest.MonkeyPatch, warned: list[RecordEventInput]
) -> None:
    job = _job({"mountPath": "/data", "volumeClaimName": "shared"})
    api = FakeApi(job, claims={"shared"})
    assert _run(api, monkeypatch, job).claims == ["shared"]
    assert api.calls == []


@pytest.mark.parametrize(("attempt", "events_written"), [(1, 1), (2, 0)])
def test_a_missing_named_claim_fails_the_attempt_with_volcanos_words(
    monkeypatch: pytest.MonkeyPatch,
    warned: list[RecordEventInput],
    attempt: int,
    events_written: int,
) -> None:
    job = _job({"mountPath": "/data", "volumeClaimName": "data"})
    api = FakeApi(job, claims=set())
    with pytest.raises(ApplicationError) as err:
        _run(api, monkeypatch, job, attempt=attempt)
    message = "pvc data is not found, the job will be in the Pending state until the PVC is created"
    assert err.value.message == message and not err.value.non_retryable
    assert [(w.reason, w.message) for w in warned] == [
        ("PVCError", f"Failed to create PVC, err: {message}")
    ] * events_written


def test_a_job_replaced_meanwhile_is_not_written(
    monkeypatch: pytest.MonkeyPatch, warned: list[RecordEventInput]
) -> None:
    job = _job({"mountPath": "/data", "volumeClaim": CLAIM})
    stored = copy.deepcopy(job)
    stored["metadata"]["uid"] = "u2"
    api = FakeApi(stored, claims=set())
    with pytest.raises(ApplicationError) as err:
        _run(api, monkeypatch, job)
    assert err.value.type == volume_claims.JOB_GONE and err.value.non_retryable
    assert api.calls == []


@pytest.mark.parametrize("seed", range(5))
def test_generated_names_are_volcanos_shape(seed: int) -> None:
    name = podspec.generated_claim_name("train", random.Random(seed).choice)
    assert re.fullmatch(r"train-pvc-[0-9a-z]{12}", name)


def test_a_missing_claim_is_waited_for_about_five_minutes() -> None:
    """KUBE_WRITE's budget, which a job naming a missing claim spends Pending: 15 attempts,
    back-off doubling from 1 s up to 30 s between them."""
    retry = options.KUBE_WRITE.retry
    assert retry.initial_interval is not None and retry.maximum_interval is not None
    waits, wait = [], retry.initial_interval.total_seconds()
    for _ in range(retry.maximum_attempts - 1):
        waits.append(min(wait, retry.maximum_interval.total_seconds()))
        wait *= retry.backoff_coefficient
    assert (retry.maximum_attempts, sum(waits)) == (15, 301.0)
    assert "ClaimNotFound" not in (retry.non_retryable_error_types or [])

"""A Volcano Job's volumes and controlledResources in the JobWorkflow: the volumes step runs
before the PodGroup, its claim names reach the pods and the status with the plugins' markers,
and a claim that never appears ends the job Terminated once the step's retries are spent."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from temporalio.common import RetryPolicy

from activities import options
from models.signals import job as job_signals
from tests.builders import make_job
from tests.workflows.harness import UID, Harness, phase_is, pod, pods_changed, until
from workflows.job import JobWorkflow

CLAIM = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


@pytest.fixture
def h(harness: Harness) -> Harness:
    return harness


def _manifest(volumes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return (
        make_job("vols", namespace="test")
        .task("worker", replicas=2)
        .spec(volumes=volumes, **spec)
        .manifest()
    )


def _statuses(h: Harness) -> list[dict[str, Any]]:
    return [w["status"] for w in h.calls.named("write_job_status")]


def _names(h: Harness) -> list[str]:
    return [name for name, _ in h.calls.log]


async def test_claim_is_named_before_the_pod_group_and_pods_mount_it(h: Harness) -> None:
    handle = await h.submit(
        _manifest([{"mountPath": "/data", "volumeClaim": CLAIM}], plugins={"svc": [], "env": []})
    )
    await until(handle, lambda v: bool(h.calls.named("create_pods")), "pods created")
    names = _names(h)
    assert names.index("ensure_volumes") < names.index("ensure_pod_group")
    (created,) = h.calls.named("create_pods")
    assert [v.volume_claim_name for v in created.job.spec.volumes] == ["vols-pvc-fake0"]
    assert _statuses(h)[0]["state"]["phase"] == "Pending"  # written before the volumes step
    await pods_changed(handle, pod("vols", "worker", 0), pod("vols", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    assert _statuses(h)[-1]["controlledResources"] == {
        "plugin-env": "env",
        "plugin-svc": "svc",
        "volume-pvc-vols-pvc-fake0": "vols-pvc-fake0",
    }


async def test_full_kill_drops_the_plugin_markers_and_keeps_the_claim(h: Harness) -> None:
    handle = await h.submit(
        _manifest([{"mountPath": "/data", "volumeClaim": CLAIM}], plugins={"svc": []})
    )
    await pods_changed(handle, pod("vols", "worker", 0), pod("vols", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    await handle.execute_update(JobWorkflow.restart, job_signals.JobCommand(reason="test"))
    await until(handle, phase_is("Restarting"), "Restarting")
    assert _statuses(h)[-1]["controlledResources"] == {
        "volume-pvc-vols-pvc-fake0": "vols-pvc-fake0"
    }
    await pods_changed(
        handle,
        pod("vols", "worker", 0, deleted=True, out_of_sync=True),
        pod("vols", "worker", 1, deleted=True, out_of_sync=True),
    )
    await until(handle, phase_is("Pending"), "Pending again")
    assert len(h.calls.named("ensure_volumes")) == 1, "the claim is named once per job"
    await pods_changed(handle, *[pod("vols", "worker", i, version=1) for i in (0, 1)])
    await until(handle, phase_is("Running"), "Running again")
    assert _statuses(h)[-1]["controlledResources"] == {
        "plugin-svc": "svc",
        "volume-pvc-vols-pvc-fake0": "vols-pvc-fake0",
    }


async def test_existing_claim_is_used_as_named(h: Harness) -> None:
    handle = await h.submit(_manifest([{"mountPath": "/data", "volumeClaimName": "shared"}]))
    await until(handle, lambda v: bool(h.calls.named("create_pods")), "pods created")
    (created,) = h.calls.named("create_pods")
    assert [v.volume_claim_name for v in created.job.spec.volumes] == ["shared"]


async def test_missing_claim_keeps_the_job_pending_then_terminates_it(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The budget of attempts as deployed, without its five minutes of back-off (each retry
    # waits on a workflow timer, `activity_call.LOCAL_RETRY_THRESHOLD`: a short one is fewer
    # round trips with the time-skipping server).
    budget = options.KUBE_WRITE.retry.maximum_attempts
    quick = RetryPolicy(
        initial_interval=timedelta(milliseconds=5),
        backoff_coefficient=1.0,
        maximum_attempts=budget,
        non_retryable_error_types=options.PERMANENT,
    )
    monkeypatch.setattr(options, "KUBE_WRITE", dataclasses.replace(options.KUBE_WRITE, retry=quick))
    h.calls.missing_claims.add("data")
    handle = await h.submit(_manifest([{"mountPath": "/data", "volumeClaimName": "data"}]))
    await until(handle, phase_is("Terminating"), "Terminating once the retries are spent")
    assert len(h.calls.named("ensure_volumes")) == budget == 15
    assert not h.calls.named("ensure_pod_group") and not h.calls.named("create_pods")
    assert _statuses(h)[0]["state"]["phase"] == "Pending"
    (failed,) = [e for e in h.calls.named("record_event") if e["reason"] == "ActionFailed"]
    assert (
        "pvc data is not found, the job will be in the Pending state until the PVC is created"
        in failed["message"]
    )
    # The forwarder's echo of the Terminating write: nothing is left alive.
    echo = _manifest([{"mountPath": "/data", "volumeClaimName": "data"}])
    echo["metadata"].update(uid=UID, generation=1)
    await handle.signal(JobWorkflow.job_observed, job_signals.JobObserved(job=echo))
    await until(handle, phase_is("Terminated"), "Terminated")
    assert len(h.calls.named("ensure_volumes")) == budget, "not tried again once it gave up"

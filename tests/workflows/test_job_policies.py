"""JobWorkflow on the time-skipping server: one test per policy form of the issue.

Activities are recording fakes; the forwarder's signals are sent by hand. A 5-minute policy
timeout takes milliseconds because the server skips time while the workflow only waits.
"""

from __future__ import annotations

from typing import Any

from models.signals import job as job_signals
from tests.builders import make_job
from tests.workflows.harness import (
    SKIP_PAST,
    Harness,
    phase_is,
    pod,
    pods_changed,
    until,
    view,
)


def _job(**spec: Any) -> dict[str, Any]:
    builder = make_job("train", namespace="test").task("master").task("worker", replicas=2)
    return builder.spec(**spec).manifest()


async def _running(h: Harness, manifest: dict[str, Any]) -> Any:
    handle = await h.submit(manifest)
    await until(handle, lambda v: v.pod_group_phase is None and v.phase == "Pending", "Pending")
    await pods_changed(
        handle, pod("train", "master", 0), pod("train", "worker", 0), pod("train", "worker", 1)
    )
    await until(handle, phase_is("Running"), "Running")
    return handle


async def test_pod_failed_restarts_job(harness: Harness) -> None:
    handle = await _running(
        harness, _job(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    )
    await pods_changed(handle, pod("train", "worker", 1, phase="Failed", exit_code=1))
    status = await until(handle, phase_is("Restarting"), "Restarting")
    assert (status.version, status.retry_count) == (1, 1)
    (killed,) = harness.calls.named("delete_pods")
    assert sorted(killed.names) == ["train-master-0", "train-worker-0", "train-worker-1"]
    assert harness.calls.named("delete_pod_group")


async def test_pod_evicted_timeout_is_cancelled_when_the_pod_recovers(harness: Harness) -> None:
    policy = {"event": "PodEvicted", "action": "TerminateJob", "timeout": "5m"}
    handle = await _running(harness, _job(policies=[policy]))
    await pods_changed(handle, pod("train", "worker", 0, deleted=True))
    armed = await until(handle, lambda v: len(v.delayed) == 1, "delayed action armed")
    assert armed.delayed[0].action == "TerminateJob" and armed.delayed[0].pod == "train-worker-0"
    # The pod comes back (same name, new uid) and runs: the timer is cancelled.
    await pods_changed(handle, pod("train", "worker", 0, phase="Pending", version=0))
    await pods_changed(handle, pod("train", "worker", 0, phase="Running", version=0))
    await until(handle, lambda v: not v.delayed, "delayed action cancelled")
    await harness.env.sleep(SKIP_PAST)
    assert (await view(handle)).phase == "Running"
    assert not harness.calls.named("delete_pods")


async def test_pod_evicted_timeout_fires_when_the_pod_does_not_recover(harness: Harness) -> None:
    policy = {"event": "PodEvicted", "action": "TerminateJob", "timeout": "5m"}
    handle = await _running(harness, _job(policies=[policy]))
    await pods_changed(handle, pod("train", "worker", 0, deleted=True))
    await until(handle, lambda v: len(v.delayed) == 1, "delayed action armed")
    await harness.env.sleep(SKIP_PAST)
    status = await until(handle, phase_is("Terminating"), "Terminating after the timeout")
    assert not status.delayed
    (killed,) = harness.calls.named("delete_pods")
    assert sorted(killed.names) == ["train-master-0", "train-worker-1"]


async def test_exit_code_restarts_job(harness: Harness) -> None:
    handle = await _running(harness, _job(policies=[{"exitCode": 3, "action": "RestartJob"}]))
    await pods_changed(handle, pod("train", "master", 0, phase="Failed", exit_code=1))
    status = await until(handle, lambda v: v.tasks[0].phases.get("Failed") == 1, "failure counted")
    assert status.phase == "Running"  # exit code 1 matches no policy
    await pods_changed(handle, pod("train", "worker", 0, phase="Failed", exit_code=3))
    status = await until(handle, phase_is("Restarting"), "Restarting on exit code 3")
    assert status.retry_count == 1


async def test_task_completed_completes_job(harness: Harness) -> None:
    manifest = (
        make_job("train", namespace="test")
        .task("master", policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
        .task("worker", replicas=2)
        .manifest()
    )
    handle = await _running(harness, manifest)
    await pods_changed(handle, pod("train", "master", 0, phase="Succeeded"))
    await until(handle, phase_is("Completing"), "Completing")
    (killed,) = harness.calls.named("delete_pods")
    assert sorted(killed.names) == ["train-worker-0", "train-worker-1"]  # the master is kept
    await pods_changed(
        handle,
        pod("train", "worker", 0, deleted=True, out_of_sync=True),
        pod("train", "worker", 1, deleted=True, out_of_sync=True),
    )
    await until(handle, phase_is("Completed"), "Completed once the workers are gone")


async def test_any_event_restarts_job(harness: Harness) -> None:
    handle = await _running(harness, _job(policies=[{"event": "*", "action": "RestartJob"}]))
    await pods_changed(handle, pod("train", "worker", 1, deleted=True))
    status = await until(handle, phase_is("Restarting"), "Restarting on any event")
    assert status.version == 1


async def test_max_retry_exhausted_fails_job(harness: Harness) -> None:
    handle = await _running(
        harness, _job(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    )
    for run in range(2):
        await pods_changed(handle, pod("train", "worker", 0, phase="Failed", version=run))
        await until(handle, lambda v, r=run: v.retry_count == r + 1, f"restart {run + 1}")
        gone = [
            pod("train", t, i, deleted=True, out_of_sync=True, version=run)
            for t, i in (("master", 0), ("worker", 0), ("worker", 1))
        ]
        await pods_changed(handle, *gone)
        if run == 0:
            await until(handle, phase_is("Pending"), "Pending again after the first restart")
            again = [
                pod("train", t, i, version=1)
                for t, i in (("master", 0), ("worker", 0), ("worker", 1))
            ]
            await pods_changed(handle, *again)
            await until(handle, phase_is("Running"), "Running again")
    await until(handle, phase_is("Failed"), "Failed once maxRetry runs are used")


async def test_stale_version_pod_failure_is_only_a_sync(harness: Harness) -> None:
    handle = await _running(harness, _job(policies=[{"event": "PodFailed", "action": "AbortJob"}]))
    await handle.execute_update("restart", job_signals.JobCommand(reason="test"))
    await until(handle, lambda v: v.version == 1, "restarted")
    await pods_changed(handle, pod("train", "worker", 0, phase="Failed", version=0))
    status = await view(handle)
    assert status.phase in ("Restarting", "Pending")

"""The watch-forwarder against the real apiserver and Temporal dev server: the Job side.

The real JobWorkflow is not needed: a recording stand-in registered as "JobWorkflow" keeps
every signal it receives and answers a query with them. It runs in a Temporal namespace made
for this module, so its worker is the only one polling the controllers task queue there. Each
forwarder is a `caldera forwarder` subprocess, stopped with SIGTERM like a Deployment's pod.
The stand-ins, their worker and the forwarder process live in `tests.e2e.forwarding`, shared
with the Queue side in `test_forwarder_queues`.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from forwarder.routing import envelopes
from models.signals import common as common_signals
from models.signals import job as job_signals
from tests.builders import make_job
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.forwarding import COALESCE_MS, Forwarder, Recorder, forwarders

JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
COMMANDS = ("bus.volcano.sh", "v1alpha1", "commands")


pytestmark = pytest.mark.usefixtures("default_forwarder_paused")


def _create_job(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    doc = make_job(name, ns).task("worker", replicas=1).manifest()
    created: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        *JOBS[:2], ns, JOBS[2], doc
    )
    return created


def _owner(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def _task_pod(job: dict[str, Any], scheduler: str, **annotations: str) -> dict[str, Any]:
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-worker-0",
            "labels": {"volcano.sh/job-name": name},
            "annotations": {
                "volcano.sh/job-name": name,
                "volcano.sh/task-spec": "worker",
                "volcano.sh/task-index": "0",
                "volcano.sh/job-version": "2",
                **annotations,
            },
            "ownerReferences": [_owner(job)],
        },
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }


def _observed(recorder: Recorder, ns: str, name: str) -> list[dict[str, Any]]:
    return eventually(
        lambda: recorder.named(ns, name, job_signals.SIGNAL_JOB_OBSERVED), 20, f"{name} observed"
    )


def _pods(recorder: Recorder, ns: str, name: str) -> list[dict[str, Any]]:
    batches = recorder.named(ns, name, job_signals.SIGNAL_PODS_CHANGED)
    return [p for b in batches for p in b["pods"]]


def test_job_created_starts_workflow_with_job_observed(
    api: client.ApiClient, namespace: str, recorder: Recorder, forwarder: Forwarder
) -> None:
    job = _create_job(api, namespace, "train")
    [first] = _observed(recorder, namespace, "train")
    assert first["job"]["metadata"]["uid"] == job["metadata"]["uid"]
    settings = recorder.started_with(namespace, "train").settings
    assert settings.scheduler_override == "e2e-scheduler"

    # The status is the workflow's own write: neither counters nor a phase change come back.
    # A spec change after them does, carrying the latest status with it.
    custom = client.CustomObjectsApi(api)
    status = {"state": {"phase": "Pending"}, "pending": 1, "running": 0}
    custom.patch_namespaced_custom_object_status(
        *JOBS[:2], namespace, JOBS[2], "train", {"status": status}
    )
    custom.patch_namespaced_custom_object_status(
        *JOBS[:2], namespace, JOBS[2], "train", {"status": {"state": {"phase": "Running"}}}
    )
    custom.patch_namespaced_custom_object(
        *JOBS[:2], namespace, JOBS[2], "train", {"spec": {"maxRetry": 5}}
    )
    seen = eventually(
        lambda: (
            seen
            if len(seen := recorder.named(namespace, "train", job_signals.SIGNAL_JOB_OBSERVED)) >= 2
            else None
        ),
        30,
        "spec change observed",
    )
    assert len(seen) == 2, seen
    assert seen[1]["job"]["spec"]["maxRetry"] == 5
    assert seen[1]["job"]["status"]["state"]["phase"] == "Running"


def test_volcano_pod_sends_translated_snapshot(
    api: client.ApiClient, namespace: str, recorder: Recorder, forwarder: Forwarder
) -> None:
    job = _create_job(api, namespace, "run")
    _observed(recorder, namespace, "run")
    pod = _task_pod(
        job,
        "default-scheduler",
        **{"sim.caldera.dev/run-seconds": "0.3", "sim.caldera.dev/exit-code": "3"},
    )
    client.CoreV1Api(api).create_namespaced_pod(namespace, pod)

    def failed() -> dict[str, Any] | None:
        return next((p for p in _pods(recorder, namespace, "run") if p["phase"] == "Failed"), None)

    snap = eventually(failed, 30, "failed pod snapshot")
    assert snap["name"] == "run-worker-0"
    assert snap["job_uid"] == job["metadata"]["uid"]
    assert (snap["task"], snap["index"], snap["job_version"]) == ("worker", 0, 2)
    assert snap["exit_code"] == 3
    assert snap["node_name"].startswith("kwok-node-")
    assert not snap["deleted"] and not snap["ready"]


def test_quick_pod_updates_coalesce_into_few_signals(
    api: client.ApiClient, namespace: str, recorder: Recorder, forwarder: Forwarder
) -> None:
    job = _create_job(api, namespace, "burst")
    _observed(recorder, namespace, "burst")
    core = client.CoreV1Api(api)
    core.create_namespaced_pod(namespace, _task_pod(job, "nobody"))  # stays unscheduled
    started = time.monotonic()
    updates = 10
    for i in range(1, updates + 1):
        status = {
            "containerStatuses": [
                {
                    "name": "main",
                    "image": "busybox",
                    "imageID": "",
                    "ready": False,
                    "restartCount": i,
                    "state": {"waiting": {"reason": "Backoff"}},
                }
            ]
        }
        core.patch_namespaced_pod_status("burst-worker-0", namespace, {"status": status})
    took = time.monotonic() - started

    def final() -> list[dict[str, Any]] | None:
        pods = _pods(recorder, namespace, "burst")
        return pods if pods and pods[-1]["restart_count"] == updates else None

    eventually(final, 10, "last restart count delivered")
    batches = recorder.named(namespace, "burst", job_signals.SIGNAL_PODS_CHANGED)
    # One create and ten updates, sent at most once per window while they kept coming.
    assert len(batches) <= 2 + int(took * 1000 / COALESCE_MS), (took, batches)
    assert all(len(b["pods"]) == 1 for b in batches)


def test_pod_group_phase_observed(
    api: client.ApiClient, namespace: str, recorder: Recorder, forwarder: Forwarder
) -> None:
    job = _create_job(api, namespace, "gang")
    _observed(recorder, namespace, "gang")
    forwarder.listed(envelopes.Kind.POD_GROUP)
    custom = client.CustomObjectsApi(api)
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "gang-pg", "ownerReferences": [_owner(job)]},
        "spec": {"minMember": 1},
    }
    custom.create_namespaced_custom_object(*PODGROUPS[:2], namespace, PODGROUPS[2], group)

    def observed() -> list[dict[str, Any]]:
        return recorder.named(namespace, "gang", job_signals.SIGNAL_POD_GROUP_OBSERVED)

    # Its creation (no phase yet) is the Job's own echo; the scheduler's phase is news.
    custom.patch_namespaced_custom_object_status(
        *PODGROUPS[:2], namespace, PODGROUPS[2], "gang-pg", {"status": {"phase": "Inqueue"}}
    )
    seen = eventually(observed, 30, "pod group phase")
    assert [(g["name"], g["phase"]) for g in seen] == [("gang-pg", "Inqueue")]


def test_command_consumed_and_delivered_once(
    api: client.ApiClient, namespace: str, recorder: Recorder, forwarder: Forwarder
) -> None:
    job = _create_job(api, namespace, "cmd")
    _observed(recorder, namespace, "cmd")
    custom = client.CustomObjectsApi(api)
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "cmd-abortjob-1", "ownerReferences": [_owner(job)]},
        "action": "AbortJob",
        "target": _owner(job),
        "reason": "e2e",
        "message": "suspend",
    }
    custom.create_namespaced_custom_object(*COMMANDS[:2], namespace, COMMANDS[2], command)
    [issued] = eventually(
        lambda: recorder.named(namespace, "cmd", common_signals.SIGNAL_COMMAND_ISSUED),
        10,
        "command",
    )
    assert issued == {
        "action": "AbortJob",
        "command": "cmd-abortjob-1",
        "reason": "e2e",
        "message": "suspend",
    }
    with pytest.raises(client.ApiException) as gone:
        custom.get_namespaced_custom_object(*COMMANDS[:2], namespace, COMMANDS[2], "cmd-abortjob-1")
    assert gone.value.status == 404
    time.sleep(COALESCE_MS / 1000 * 2)
    assert len(recorder.named(namespace, "cmd", common_signals.SIGNAL_COMMAND_ISSUED)) == 1


def test_job_deleted_sends_job_deleted(
    api: client.ApiClient, namespace: str, recorder: Recorder, forwarder: Forwarder
) -> None:
    job = _create_job(api, namespace, "bye")
    _observed(recorder, namespace, "bye")
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        *JOBS[:2], namespace, JOBS[2], "bye"
    )
    [gone] = eventually(
        lambda: recorder.named(namespace, "bye", job_signals.SIGNAL_JOB_DELETED), 10, "job deleted"
    )
    assert gone == {"uid": job["metadata"]["uid"]}


def _holder(api: client.ApiClient, ns: str) -> str | None:
    leases = client.CoordinationV1Api(api).list_namespaced_lease(ns).items
    return next((le.spec.holder_identity for le in leases), None) if leases else None


def test_only_lease_holder_forwards_and_standby_takes_over(
    api: client.ApiClient,
    e2e_stack: E2EStack,
    namespace: str,
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    with forwarders(e2e_stack, recorder, namespace, tmp_path, count=2) as replicas:
        by_id = {f.identity: f for f in replicas}
        leader_id = eventually(lambda: _holder(api, namespace), 20, "a lease holder")
        leader = by_id[leader_id]
        [standby] = [f for f in replicas if f is not leader]
        eventually(lambda: "standing by" in standby.text(), 20, "standby announced")

        _create_job(api, namespace, "first")
        _observed(recorder, namespace, "first")
        assert "leader elected" in leader.text() and "leader elected" not in standby.text()
        assert "listed kind=" not in standby.text()  # the standby never watched

        assert leader.stop() == 0
        assert "lease released" in leader.text()
        eventually(lambda: _holder(api, namespace) == standby.identity, 10, "takeover")
        _create_job(api, namespace, "second")
        _observed(recorder, namespace, "second")


def test_standby_takes_over_when_leader_dies_without_release(
    api: client.ApiClient,
    e2e_stack: E2EStack,
    namespace: str,
    recorder: Recorder,
    tmp_path: Path,
) -> None:
    short = ("--lease-duration", "2", "--renew-interval", "0.5")
    with forwarders(e2e_stack, recorder, namespace, tmp_path, 2, *short) as replicas:
        by_id = {f.identity: f for f in replicas}
        leader = by_id[eventually(lambda: _holder(api, namespace), 20, "a lease holder")]
        [standby] = [f for f in replicas if f is not leader]
        eventually(lambda: "standing by" in standby.text(), 20, "standby announced")

        leader.stop(signal.SIGKILL)  # no release: the standby must wait for expiry
        killed = time.monotonic()
        eventually(lambda: _holder(api, namespace) == standby.identity, 10, "takeover")
        assert time.monotonic() - killed >= 1.0  # not before the lease could have expired
        _create_job(api, namespace, "after")
        _observed(recorder, namespace, "after")

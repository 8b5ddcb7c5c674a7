"""Plain batch/v1 Jobs with `spec.managedBy: caldera.dev/job-controller` run as BatchJobWorkflows
end to end: real apiserver and kube-controller-manager (whose built-in job controller leaves
them alone and runs the same manifests without managedBy, for comparison), kube-scheduler,
kwok pods, Temporal dev server, Caldera's worker and forwarder."""

from __future__ import annotations

import concurrent.futures
import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError

from models import batchv1, keys
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")

RUN = "sim.caldera.dev/run-seconds"
EXIT = "sim.caldera.dev/exit-code"


def _manifest(name: str, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": annotations or {}},
        "spec": {
            "restartPolicy": "Never",  # kwok has no kubelet restarts
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template, "managedBy": batchv1.CONTROLLER_NAME, **spec},
    }


def _builtin(manifest: dict[str, Any]) -> dict[str, Any]:
    """The same Job for the built-in controller: no managedBy, another name."""
    other = copy.deepcopy(manifest)
    other["metadata"]["name"] += "-builtin"
    del other["spec"]["managedBy"]
    return other


def _create(api: client.ApiClient, ns: str, manifest: dict[str, Any]) -> None:
    client.BatchV1Api(api).create_namespaced_job(ns, manifest)  # type: ignore[arg-type]


def _job(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    raw = client.BatchV1Api(api).read_namespaced_job(name, ns, _preload_content=False)
    found: dict[str, Any] = json.loads(raw.data)
    return found


def _patch_job(api: client.ApiClient, ns: str, name: str, spec: dict[str, Any]) -> None:
    client.BatchV1Api(api).patch_namespaced_job(
        name, ns, {"spec": spec}, _content_type="application/merge-patch+json"
    )


def _pods(api: client.ApiClient, ns: str, job: str) -> list[dict[str, Any]]:
    raw = client.CoreV1Api(api).list_namespaced_pod(
        ns, label_selector=f"{batchv1.JOB_NAME_LABEL}={job}", _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(raw.data)["items"]
    return sorted(items, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))


def _true(job: dict[str, Any], type_: str) -> dict[str, Any] | None:
    conditions = (job.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_ and c["status"] == "True"), None)


def _finished(
    api: client.ApiClient, ns: str, name: str, type_: str, timeout: float = 60
) -> dict[str, Any]:
    """The Job once it has the condition (Complete or Failed) and no pod left terminating."""

    def probe() -> dict[str, Any] | None:
        job = _job(api, ns, name)
        return job if _true(job, type_) else None

    try:
        return eventually(probe, timeout, f"job {ns}/{name} {type_}")
    except AssertionError as e:
        raise AssertionError(f"{e}; status {_job(api, ns, name).get('status')}") from None


def _shape(status: dict[str, Any]) -> dict[str, Any]:
    """A status with its times blanked: what must be equal between the two controllers."""
    out: dict[str, Any] = {}
    for key, value in status.items():
        if key in ("startTime", "completionTime"):
            out[key] = "<time>"
        elif key == "conditions":
            out[key] = [(c["type"], c["status"], c.get("reason"), c.get("message")) for c in value]
        else:
            out[key] = value
    return out


def _both(fn: Callable[[str], dict[str, Any]], names: tuple[str, str]) -> list[dict[str, Any]]:
    """Run the same wait for Caldera's Job and the built-in one side by side."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(fn, names))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def _timers(stack: E2EStack, ns: str, name: str) -> list[float]:
    temporal = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    handle = temporal.get_workflow_handle(keys.batch_job_workflow_id(ns, name))
    out = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            out.append(event.timer_started_event_attributes.start_to_fire_timeout.ToSeconds())
    return out


async def _has_workflow(stack: E2EStack, ns: str, name: str) -> bool:
    temporal = await Client.connect(stack.temporal_address, data_converter=pydantic_data_converter)
    try:
        await temporal.get_workflow_handle(keys.batch_job_workflow_id(ns, name)).describe()
    except RPCError:
        return False
    return True


async def test_completions_5_parallelism_2_matches_the_builtin_controller(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    manifest = _manifest("five", {RUN: "1"}, completions=5, parallelism=2)
    _create(api, namespace, manifest)
    _create(api, namespace, _builtin(manifest))
    most = 0

    def active() -> None:
        nonlocal most
        most = max(most, (_job(api, namespace, "five").get("status") or {}).get("active", 0))

    def done(name: str) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            if name == "five":
                active()
            job = _job(api, namespace, name)
            return job if _true(job, "Complete") else None

        return eventually(probe, 90, f"job {name} Complete")

    ours, builtin = _both(done, ("five", "five-builtin"))
    assert most == 2
    assert ours["status"]["succeeded"] == 5
    assert _shape(ours["status"]) == _shape(builtin["status"])
    pods = _pods(api, namespace, "five")
    assert len(pods) == 5 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(not p["metadata"].get("finalizers") for p in pods), "finalizers released"
    owner = pods[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "Job",
        ours["metadata"]["uid"],
        True,
        True,
    )
    assert await _has_workflow(e2e_stack, namespace, "five")
    assert not await _has_workflow(e2e_stack, namespace, "five-builtin")


async def test_backoff_limit_2_fails_after_10s_and_20s_backoff(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    manifest = _manifest("flaky", {RUN: "1", EXIT: "1"}, backoffLimit=2)
    _create(api, namespace, manifest)
    _create(api, namespace, _builtin(manifest))
    ours, builtin = _both(
        lambda n: _finished(api, namespace, n, "Failed", timeout=120), ("flaky", "flaky-builtin")
    )
    status = ours["status"]
    assert _shape(status) == _shape(builtin["status"])
    assert status["failed"] == 3
    assert _true(ours, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    pods = _pods(api, namespace, "flaky")
    assert len(pods) == 3
    for before, after, wait in zip(pods, pods[1:], (10, 20), strict=False):
        finished = before["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
        gap = (_time(after["metadata"]["creationTimestamp"]) - _time(finished)).total_seconds()
        assert wait - 1 <= gap <= wait + 5, f"re-created {gap}s after a failure, want {wait}s"
    timers = await _timers(e2e_stack, namespace, "flaky")
    assert [round(t / 10) * 10 for t in timers] == [10, 20], f"durable back-off timers {timers}"


async def test_active_deadline_fails_running_job(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    manifest = _manifest("slow", {}, parallelism=2, completions=2, activeDeadlineSeconds=5)
    _create(api, namespace, manifest)
    _create(api, namespace, _builtin(manifest))
    ours, builtin = _both(
        lambda n: _finished(api, namespace, n, "Failed"), ("slow", "slow-builtin")
    )
    assert _true(ours, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    assert _shape(ours["status"]) == _shape(builtin["status"])
    assert ours["status"]["failed"] == 2
    ran = _time(_true(ours, "Failed")["lastTransitionTime"]) - _time(ours["status"]["startTime"])  # type: ignore[index]
    assert 5 <= ran.total_seconds() <= 15
    eventually(lambda: not _pods(api, namespace, "slow"), 30, "running pods deleted")
    assert any(3 <= t <= 5 for t in await _timers(e2e_stack, namespace, "slow")), "durable"


def test_indexed_job_pods_carry_their_index_like_the_builtin_ones(
    api: client.ApiClient, namespace: str
) -> None:
    manifest = _manifest("idx", {RUN: "1"}, completionMode="Indexed", completions=3, parallelism=3)
    _create(api, namespace, manifest)
    _create(api, namespace, _builtin(manifest))
    ours, builtin = _both(
        lambda n: _finished(api, namespace, n, "Complete"), ("idx", "idx-builtin")
    )
    assert ours["status"]["completedIndexes"] == "0-2"
    assert _shape(ours["status"]) == _shape(builtin["status"])

    def pod_shape(pod: dict[str, Any], job: str) -> dict[str, Any]:
        meta, spec = pod["metadata"], pod["spec"]
        index = meta["annotations"][batchv1.COMPLETION_INDEX]
        return {
            "name": meta["name"].startswith(f"{job}-{index}-"),
            "labels": {
                k: v.replace("-builtin", "") if k.endswith("job-name") else k
                for k, v in meta["labels"].items()
                if "controller-uid" not in k
            },
            "annotations": meta["annotations"],
            "hostname": spec["hostname"].replace("-builtin", ""),
            "env": spec["containers"][0]["env"],
        }

    mine = sorted((pod_shape(p, "idx") for p in _pods(api, namespace, "idx")), key=str)
    theirs = sorted(
        (pod_shape(p, "idx-builtin") for p in _pods(api, namespace, "idx-builtin")), key=str
    )
    assert mine == theirs
    assert sorted(p["hostname"] for p in mine) == ["idx-0", "idx-1", "idx-2"]
    assert all(p["name"] for p in mine)


def _fail_pod(api: client.ApiClient, ns: str, name: str, code: int, disrupted: bool) -> None:
    """What a kubelet writes when a container exits (with DisruptionTarget when evicted)."""
    now = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    conditions = [{"type": "Ready", "status": "False", "lastTransitionTime": now}]
    if disrupted:
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "lastTransitionTime": now,
            }
        )
    terminated = {"exitCode": code, "reason": "Error", "startedAt": now, "finishedAt": now}
    status = {
        "phase": "Failed",
        "conditions": conditions,
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": terminated},
            }
        ],
    }
    client.CoreV1Api(api).patch_namespaced_pod_status(
        name, ns, {"status": status}, _content_type="application/strategic-merge-patch+json"
    )


def _running(api: client.ApiClient, ns: str, job: str, count: int) -> list[str]:
    def probe() -> list[str] | None:
        names = [
            p["metadata"]["name"]
            for p in _pods(api, ns, job)
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return names if len(names) == count else None

    return eventually(probe, 60, f"{count} running pods of {job}")


def test_pod_failure_policy_ignores_disruption_and_fails_job_on_exit_42(
    api: client.ApiClient, namespace: str
) -> None:
    policy = {
        "rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
        ]
    }
    _create(api, namespace, _manifest("pfp", {}, backoffLimit=0, podFailurePolicy=policy))
    (first,) = _running(api, namespace, "pfp", 1)
    _fail_pod(api, namespace, first, 137, disrupted=True)
    (second,) = _running(api, namespace, "pfp", 1)  # replaced: the failure was ignored
    assert second != first
    job = _job(api, namespace, "pfp")
    assert not job["status"].get("failed") and not _true(job, "Failed")
    _fail_pod(api, namespace, second, 42, disrupted=False)
    failed = _finished(api, namespace, "pfp", "Failed")
    condition = _true(failed, "Failed")
    assert condition is not None and condition["reason"] == "PodFailurePolicy"
    assert condition["message"] == (
        f"Container main for pod {namespace}/{second} failed with exit code 42 matching "
        "FailJob rule at index 1"
    )
    assert _true(failed, "FailureTarget") is not None
    assert failed["status"]["failed"] == 1


def test_suspend_deletes_pods_and_resume_runs_them_again(
    api: client.ApiClient, namespace: str
) -> None:
    _create(api, namespace, _manifest("pause", {RUN: "6"}, parallelism=2, completions=2))
    before = _running(api, namespace, "pause", 2)
    _patch_job(api, namespace, "pause", {"suspend": True})

    def suspended() -> dict[str, Any] | None:
        job = _job(api, namespace, "pause")
        quiet = not _pods(api, namespace, "pause")
        return job if _true(job, "Suspended") and quiet else None

    job = eventually(suspended, 30, "suspended with its pods gone")
    status = job["status"]
    assert "startTime" not in status and not status.get("active") and not status.get("failed")
    assert _true(job, "Suspended")["reason"] == "JobSuspended"  # type: ignore[index]
    _patch_job(api, namespace, "pause", {"suspend": False})
    after = _running(api, namespace, "pause", 2)
    assert not set(after) & set(before)
    done = _finished(api, namespace, "pause", "Complete")
    assert [(c["type"], c["status"], c["reason"]) for c in done["status"]["conditions"]] == [
        ("Suspended", "False", "JobResumed"),
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert done["status"]["succeeded"] == 2 and not done["status"].get("failed")

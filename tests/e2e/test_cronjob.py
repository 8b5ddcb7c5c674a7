"""Volcano CronJobs end to end: each CronJob keeps a Temporal Schedule, each run of it is a
CronRunWorkflow that makes a Volcano Job named and owned as Volcano's controller does.

Runs are started with the schedule's own `trigger` and `backfill` (a nominal time in the past,
as Temporal does for the times it missed while it was down); one test waits for a real minute
boundary. Pods end when their `sim.caldera.dev/run-seconds` annotation says (kwok), or run until
deleted without it."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    ScheduleBackfill,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleOverlapPolicy,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from models import cronjob, keys
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")
EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "cronjob.yaml"
GROUP, VERSION = "batch.volcano.sh", "v1alpha1"
RUN_SECONDS = "sim.caldera.dev/run-seconds"
NEW_YEAR = datetime(2026, 1, 1, tzinfo=UTC)  # the one time of "0 0 1 1 *" before now
YEARLY = "0 0 1 1 *"
ALL = ScheduleOverlapPolicy.ALLOW_ALL  # every missed time at once, as Allow has them
T = TypeVar("T")


def _temporal(stack: E2EStack, call: Callable[[Client], Awaitable[T]]) -> T:
    async def run() -> T:
        connected = await Client.connect(
            stack.temporal_address, data_converter=pydantic_data_converter
        )
        return await call(connected)

    return asyncio.run(run())


def _schedule(stack: E2EStack, ns: str, name: str) -> ScheduleDescription | None:
    async def describe(c: Client) -> ScheduleDescription | None:
        try:
            return await c.get_schedule_handle(keys.cronjob_workflow_id(ns, name)).describe()
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                return None
            raise

    return _temporal(stack, describe)


def _on_schedule(
    stack: E2EStack, ns: str, name: str, act: Callable[[ScheduleHandle], Awaitable[None]]
) -> None:
    async def call(c: Client) -> None:
        await act(c.get_schedule_handle(keys.cronjob_workflow_id(ns, name)))

    _temporal(stack, call)


def _backfill(
    stack: E2EStack,
    ns: str,
    name: str,
    start: datetime,
    end: datetime,
    overlap: ScheduleOverlapPolicy | None = None,  # None: the schedule's own policy
) -> None:
    window = ScheduleBackfill(start_at=start, end_at=end, overlap=overlap)
    _on_schedule(stack, ns, name, lambda h: h.backfill(window))


def _at(when: datetime) -> tuple[datetime, datetime]:
    return when - timedelta(milliseconds=500), when + timedelta(milliseconds=500)


def _result(stack: E2EStack, workflow_id: str) -> str:
    async def result(c: Client) -> str:
        found: str = await c.get_workflow_handle(workflow_id).result()
        return found

    return _temporal(stack, result)


def _template(run_seconds: str | None) -> dict[str, Any]:
    notes = {RUN_SECONDS: run_seconds} if run_seconds is not None else {}
    pod = {
        "metadata": {"annotations": notes},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "restartPolicy": "Never",
        },
    }
    return {"spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": pod}]}}


def _create(
    api: client.ApiClient,
    ns: str,
    name: str,
    schedule: str = YEARLY,
    run_seconds: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": _template(run_seconds), **spec},
    }
    made: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, ns, "cronjobs", body
    )
    return made


def _cron(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, ns, "cronjobs", name
    )
    return found


def _jobs(api: client.ApiClient, ns: str) -> dict[str, dict[str, Any]]:
    listed = client.CustomObjectsApi(api).list_namespaced_custom_object(GROUP, VERSION, ns, "jobs")
    return {j["metadata"]["name"]: j for j in listed["items"]}


def _phase(job: dict[str, Any] | None) -> str:
    return str(((job or {}).get("status") or {}).get("state", {}).get("phase") or "")


def _job_in(api: client.ApiClient, ns: str, name: str, *phases: str) -> dict[str, Any] | None:
    job = _jobs(api, ns).get(name)
    return job if job is not None and _phase(job) in phases else None


def _name(cron: str, when: datetime) -> str:
    return f"{cron}-{int(when.timestamp()) // 60}"


def _run_id(ns: str, cron: str, when: datetime) -> str:
    return f"{keys.cron_run_workflow_id(ns, cron)}-{when.strftime('%Y-%m-%dT%H:%M:%SZ')}"


def _trigger_taken(stack: E2EStack, ns: str, name: str) -> bool:
    """The schedule's own workflow has handled the trigger (its `patch` signal and a workflow
    task after it): what the overlap policy decided is in effect."""

    async def taken(c: Client) -> bool:
        wid = f"temporal-sys-scheduler:{keys.cronjob_workflow_id(ns, name)}"
        events = (await c.get_workflow_handle(wid).fetch_history()).events
        signalled = [
            i
            for i, e in enumerate(events)
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            and e.workflow_execution_signaled_event_attributes.signal_name == "patch"
        ]
        after = events[signalled[-1] :] if signalled else []
        return any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in after)

    return _temporal(stack, taken)


def _ready(stack: E2EStack, ns: str, name: str) -> ScheduleDescription:
    return eventually(lambda: _schedule(stack, ns, name), 30, f"the schedule of {name}")


def test_example_runs_a_job_named_and_owned_as_volcano_does(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    template = doc["spec"]["jobTemplate"]["spec"]["tasks"][0]["template"]
    template.setdefault("metadata", {})["annotations"] = {RUN_SECONDS: "1"}
    made = client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "cronjobs", copy.deepcopy(doc)
    )
    name = doc["metadata"]["name"]
    described = _ready(e2e_stack, namespace, name)
    assert described.schedule.policy.overlap == ScheduleOverlapPolicy.BUFFER_ALL  # Forbid
    assert described.schedule.policy.catchup_window == timedelta(seconds=60)
    _on_schedule(e2e_stack, namespace, name, lambda h: h.trigger())
    # The triggered run's Job (the earliest, should a five-minute boundary pass meanwhile).
    job_name = min(eventually(lambda: list(_jobs(api, namespace)), 60, "the run's Job"))
    job = eventually(lambda: _job_in(api, namespace, job_name, "Completed"), 60, "Job Completed")
    stamp = datetime.fromisoformat(job["metadata"]["annotations"][cronjob.SCHEDULED_TIMESTAMP])
    assert job_name == _name(name, stamp)  # <cronjob>-<scheduled minute>
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "CronJob",
        name,
        made["metadata"]["uid"],
        True,
    )
    status = eventually(
        lambda: (
            (_cron(api, namespace, name).get("status") or {}).get("lastSuccessfulTime")
            and _cron(api, namespace, name)["status"]
        ),
        30,
        "lastSuccessfulTime",
    )
    assert datetime.fromisoformat(status["lastScheduleTime"]) == stamp
    assert not status.get("active")
    result = _result(e2e_stack, _run_id(namespace, name, stamp))
    assert result == f"Job {job_name}: Completed"


def test_history_limit_deletes_the_oldest_completed_job(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    _create(api, namespace, "keep1", run_seconds="0.5", successfulJobsHistoryLimit=1)
    _ready(e2e_stack, namespace, "keep1")
    first = _name("keep1", NEW_YEAR)
    _backfill(e2e_stack, namespace, "keep1", *_at(NEW_YEAR))
    eventually(lambda: _job_in(api, namespace, first, "Completed"), 60, "the first Job done")
    _on_schedule(e2e_stack, namespace, "keep1", lambda h: h.trigger())
    second = eventually(
        lambda: [n for n, j in _jobs(api, namespace).items() if n != first and _phase(j)],
        60,
        "a second Job",
    )
    eventually(lambda: _job_in(api, namespace, second[0], "Completed"), 60, "the second done")
    eventually(lambda: first not in _jobs(api, namespace), 30, "the first Job deleted")
    assert list(_jobs(api, namespace)) == second


def _running_then_triggered(
    api: client.ApiClient, ns: str, stack: E2EStack, name: str, policy: str
) -> str:
    """A Job of New Year's run Running (its pods run until told), then the next run triggered;
    the first Job's name."""
    _create(api, ns, name, concurrencyPolicy=policy)
    _ready(stack, ns, name)
    first = _name(name, NEW_YEAR)
    _backfill(stack, ns, name, *_at(NEW_YEAR))
    eventually(lambda: _job_in(api, ns, first, "Running"), 60, "the first Job Running")
    _on_schedule(stack, ns, name, lambda h: h.trigger())
    return first


def test_forbid_holds_the_next_run_until_the_job_ends(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    first = _running_then_triggered(api, namespace, e2e_stack, "solo", "Forbid")
    eventually(lambda: _trigger_taken(e2e_stack, namespace, "solo"), 30, "the trigger taken")
    described = _schedule(e2e_stack, namespace, "solo")
    assert described is not None and len(described.info.running_actions) == 1  # held back
    assert list(_jobs(api, namespace)) == [first]
    core = client.CoreV1Api(api)
    [pod] = core.list_namespaced_pod(namespace).items
    core.patch_namespaced_pod(
        pod.metadata.name, namespace, {"metadata": {"annotations": {RUN_SECONDS: "0"}}}
    )
    eventually(lambda: _job_in(api, namespace, first, "Completed"), 60, "the first Job done")
    later = eventually(
        lambda: [n for n in _jobs(api, namespace) if n != first], 60, "the held run's Job"
    )
    assert len(later) == 1


def test_replace_deletes_the_running_job_for_the_next_run(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    first = _running_then_triggered(api, namespace, e2e_stack, "swap", "Replace")
    eventually(lambda: first not in _jobs(api, namespace), 60, "the first Job deleted")
    [second] = eventually(lambda: list(_jobs(api, namespace)), 60, "the next run's Job")
    assert second != first
    active = eventually(
        lambda: (_cron(api, namespace, "swap").get("status") or {}).get("active"), 30, "active"
    )
    assert [a["name"] for a in active] == [second]


def test_catch_up_makes_only_the_most_recent_missed_job_within_the_deadline(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    """As after an outage: Temporal starts every missed time of the window; Volcano makes a Job
    for the most recent one only, and none when that is past startingDeadlineSeconds."""
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    recent, older = now - timedelta(minutes=2), now - timedelta(minutes=10)
    schedule = f"{older.minute},{recent.minute} * * * *"
    _create(api, namespace, "late", schedule=schedule)
    _create(api, namespace, "strict", schedule=schedule, startingDeadlineSeconds=60)
    for name in ("late", "strict"):
        _ready(e2e_stack, namespace, name)
        _backfill(e2e_stack, namespace, name, now - timedelta(minutes=15), now, ALL)
    made = _name("late", recent)
    eventually(lambda: list(_jobs(api, namespace)) == [made], 60, "the most recent run's Job")
    ended = {
        (name, when): _result(e2e_stack, _run_id(namespace, name, when))
        for name, when in (("late", older), ("strict", older), ("strict", recent))
    }
    # Started side by side: refused as superseded, or as older than the time already taken.
    assert ended[("late", older)].startswith(("no Job: a later time is due", "no Job: the time")), (
        ended
    )
    assert ended[("strict", older)].startswith("no Job: missed its starting deadline")
    assert ended[("strict", recent)].startswith("no Job: missed its starting deadline")
    assert list(_jobs(api, namespace)) == [made]


def test_suspend_pauses_the_schedule(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    _create(api, namespace, "pausing")
    assert not _ready(e2e_stack, namespace, "pausing").schedule.state.paused
    custom = client.CustomObjectsApi(api)
    for suspend in (True, False):
        patch = {"spec": {"suspend": suspend}}
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "cronjobs", "pausing", patch
        )

        def paused(wanted: bool = suspend) -> bool:
            described = _schedule(e2e_stack, namespace, "pausing")
            return described is not None and described.schedule.state.paused == wanted

        eventually(paused, 30, f"schedule paused={suspend}")


def test_a_run_happens_on_the_minute_and_deleting_removes_the_schedule(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    _create(api, namespace, "minutely", schedule="* * * * *", run_seconds="0.5")
    _ready(e2e_stack, namespace, "minutely")
    [name] = eventually(lambda: list(_jobs(api, namespace)), 75, "a Job on the minute")
    minute = int(name.rsplit("-", 1)[1])
    stamp = _jobs(api, namespace)[name]["metadata"]["annotations"][cronjob.SCHEDULED_TIMESTAMP]
    assert datetime.fromisoformat(stamp) == datetime.fromtimestamp(minute * 60, UTC)
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        GROUP, VERSION, namespace, "cronjobs", "minutely"
    )
    eventually(lambda: _schedule(e2e_stack, namespace, "minutely") is None, 30, "schedule gone")
    eventually(lambda: not _jobs(api, namespace), 60, "its Jobs garbage-collected")


def test_webhook_refuses_a_schedule_with_seconds(api: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as refused:
        _create(api, namespace, "bad", schedule="0 0 * * * *")
    assert "spec.schedule" in str(refused.value.body)

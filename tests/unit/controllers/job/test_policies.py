"""applyPolicies (§5.1): every rule of the spec, including the downgrades to a sync."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controllers.job.policies import Request, apply_policies
from models.bus import Action, Event
from models.defaults import default_job
from models.vcjob import Job
from tests.builders import make_job


def _job(
    job_policies: list[dict[str, Any]], task_policies: list[dict[str, Any]] | None = None
) -> Job:
    builder = make_job("j").task("master").task("worker", replicas=2, policies=task_policies or [])
    manifest = builder.spec(policies=job_policies).manifest()
    manifest["metadata"]["uid"] = "u1"
    return default_job(Job.model_validate(manifest))


REQ = Request(
    event=Event.POD_FAILED,
    task="worker",
    pod="j-worker-0",
    job_uid="u1",
    job_version=1,
    exit_code=137,
)


@pytest.mark.parametrize(
    ("job_policies", "task_policies", "request_", "action", "delay"),
    [
        pytest.param(
            [{"event": "PodFailed", "action": "RestartJob"}],
            None,
            REQ,
            Action.RESTART_JOB,
            None,
            id="job-event",
        ),
        pytest.param(
            [{"event": "PodFailed", "action": "AbortJob"}],
            [{"exitCode": 137, "action": "RestartTask"}],
            REQ,
            Action.RESTART_TASK,
            None,
            id="task-before-job",
        ),
        pytest.param(
            [{"event": "PodFailed", "action": "AbortJob"}],
            [{"exitCode": 1, "action": "RestartTask"}],
            REQ,
            Action.ABORT_JOB,
            None,
            id="task-no-match-falls-to-job",
        ),
        pytest.param(
            [{"event": "*", "action": "RestartJob"}],
            None,
            REQ,
            Action.RESTART_JOB,
            None,
            id="any-event",
        ),
        pytest.param(
            [{"events": ["PodEvicted", "PodFailed"], "action": "TerminateJob", "timeout": "5m"}],
            None,
            REQ,
            Action.TERMINATE_JOB,
            timedelta(minutes=5),
            id="events-list-with-timeout",
        ),
        pytest.param(
            [{"event": "PodPending", "action": "RestartJob"}],
            None,
            REQ.model_copy(update={"event": Event.POD_PENDING}),
            Action.SYNC_JOB,
            None,
            id="pending-without-timeout-ignored",
        ),
        pytest.param(
            [{"event": "PodPending", "action": "RestartJob", "timeout": "10m"}],
            None,
            REQ.model_copy(update={"event": Event.POD_PENDING}),
            Action.RESTART_JOB,
            timedelta(minutes=10),
            id="pending-with-timeout",
        ),
        pytest.param(
            [{"event": "*", "action": "RestartJob"}],
            None,
            REQ.model_copy(update={"event": Event.POD_RUNNING}),
            Action.SYNC_JOB,
            None,
            id="internal-event",
        ),
        pytest.param(
            [{"event": "PodFailed", "action": "RestartJob"}],
            None,
            REQ.model_copy(update={"job_version": 0}),
            Action.SYNC_JOB,
            None,
            id="stale-version",
        ),
        pytest.param(
            [{"event": "PodFailed", "action": "RestartJob"}],
            None,
            REQ.model_copy(update={"job_uid": "other"}),
            Action.SYNC_JOB,
            None,
            id="foreign-uid",
        ),
        pytest.param(
            [{"event": "PodFailed", "action": "RestartJob"}],
            None,
            REQ.model_copy(update={"action": Action.ABORT_JOB, "event": Event.COMMAND_ISSUED}),
            Action.ABORT_JOB,
            None,
            id="command-bypasses-policies",
        ),
        pytest.param(
            [{"exitCode": 3, "action": "RestartJob"}],
            None,
            REQ,
            Action.SYNC_JOB,
            None,
            id="no-match",
        ),
    ],
)
def test_apply_policies(
    job_policies: list[dict[str, Any]],
    task_policies: list[dict[str, Any]] | None,
    request_: Request,
    action: Action,
    delay: timedelta | None,
) -> None:
    resolution = apply_policies(_job(job_policies, task_policies), 1, request_)
    assert (resolution.action, resolution.delay) == (action, delay)


def test_resolution_names_the_policy_for_the_story() -> None:
    resolution = apply_policies(_job([{"event": "PodFailed", "action": "RestartJob"}]), 1, REQ)
    assert resolution.policy == "job policy PodFailed → RestartJob"

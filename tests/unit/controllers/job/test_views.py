"""Command refusals the update validators show users, word for word."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.job import controller, views
from controllers.job.state import JobRecord
from models.bus import Action
from models.signals import job as job_signals
from models.vcjob import JobPhase
from tests.builders import make_job, observed_job

_NOW = datetime(2026, 1, 1, tzinfo=UTC)
UNGATED = JobRecord(settings=job_signals.ControllerSettings(scheduler_override="default-scheduler"))


def _observed() -> JobRecord:
    doc: dict[str, Any] = make_job("j", namespace="ns").task("w", replicas=2).manifest()
    doc["metadata"].update(uid="u1", generation=1)
    return controller.decide(UNGATED, observed_job(doc), _NOW).state


@pytest.mark.parametrize(
    ("phase", "action", "message"),
    [
        pytest.param(
            JobPhase.COMPLETED,
            Action.RESUME_JOB,
            "job ns/j is Completed: only an Aborting or Aborted job can be resumed",
            id="resume-completed",
        ),
        pytest.param(
            JobPhase.FAILED,
            Action.ABORT_JOB,
            "job ns/j is Failed: AbortJob does not apply to a finished job",
            id="abort-failed",
        ),
        pytest.param(
            JobPhase.RESTARTING,
            Action.TERMINATE_JOB,
            "job ns/j is Restarting: TerminateJob would be ignored until it is Pending again",
            id="terminate-restarting",
        ),
        pytest.param(JobPhase.RUNNING, Action.ABORT_JOB, None, id="abort-running"),
        pytest.param(JobPhase.ABORTED, Action.RESUME_JOB, None, id="resume-aborted"),
    ],
)
def test_refusal(phase: JobPhase, action: Action, message: str | None) -> None:
    state = _observed()
    status = state.status.model_copy(
        update={"state": state.status.state.model_copy(update={"phase": phase})}
    )  # type: ignore[union-attr]
    assert views.refusal(state.model_copy(update={"status": status}), action) == message

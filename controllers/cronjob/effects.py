"""What only a CronJobWorkflow's shell does on its core's behalf; with `controllers.effects`
(Events, Job deletion, the end of the workflow), the closed union the shell executes in order."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from controllers import effects as fx
from controllers.cronjob.plan import Overlap, SchedulePlan
from models.cronjob import CronJobStatus
from models.signals import cronjob as cronjob_signals


class ApplySchedule(fx.Effect):
    """Create the CronJob's Temporal Schedule, or bring the one there in step with `plan`."""

    kind: Literal["ApplySchedule"] = "ApplySchedule"
    schedule_id: str
    namespace: str
    name: str
    plan: SchedulePlan


class BackfillSchedule(fx.Effect):
    """Take the schedule's action for the one nominal time `at` (a run missed while the
    schedule was paused or did not exist yet)."""

    kind: Literal["BackfillSchedule"] = "BackfillSchedule"
    schedule_id: str
    at: datetime
    overlap: Overlap


class DeleteSchedule(fx.Effect):
    kind: Literal["DeleteSchedule"] = "DeleteSchedule"
    schedule_id: str


class AnswerRun(fx.Effect):
    """Tell a scheduled run whether it makes its Job (`run_answered`)."""

    kind: Literal["AnswerRun"] = "AnswerRun"
    workflow_id: str
    answer: cronjob_signals.RunAnswer


class TellRun(fx.Effect):
    """Tell a scheduled run its Job finished or went (`run_finished`): it ends."""

    kind: Literal["TellRun"] = "TellRun"
    workflow_id: str
    phase: str


class WriteCronJobStatus(fx.Effect):
    kind: Literal["WriteCronJobStatus"] = "WriteCronJobStatus"
    namespace: str
    name: str
    status: CronJobStatus


Own = (
    ApplySchedule
    | BackfillSchedule
    | DeleteSchedule
    | AnswerRun
    | TellRun
    | WriteCronJobStatus
    | fx.DeleteJob
)
AnyEffect = Own | fx.RecordEvent | fx.Finish

"""What a CronJobWorkflow remembers between inputs, carried whole through continue-as-new."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from controllers.cronjob.plan import SchedulePlan
from controllers.cronjob.runs import Run
from models.cronjob import CronJob


class CronJobRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str = ""
    name: str = ""
    cron_job: CronJob | None = None  # as last observed; None: not yet
    applied: SchedulePlan | None = None  # as last written to the schedule; None: none yet
    runs: dict[str, Run] = Field(default_factory=dict)  # Job name → run, oldest first
    last_schedule_time: datetime | None = None  # None: nothing scheduled yet
    # What status.lastScheduleTime says: a time is written once its Job is made, as Volcano
    # writes it with the Job's reference; None: nothing made yet.
    reported_schedule_time: datetime | None = None
    last_successful_time: datetime | None = None  # None: no Job completed yet
    deleted: bool = False  # the CronJob is gone; the workflow is ending

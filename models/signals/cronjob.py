"""What Volcano CronJobs' workflows exchange: a CronJobWorkflow per CronJob hears the forwarder,
a CronRunWorkflow per scheduled run asks it whether the run is due and reports back.

Signal and workflow type names are stored in histories and used by the forwarder: they never
change. Pure: pydantic only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from models.cronjob import CronJob
from models.signals import common
from models.vcjob import Job


class CronJobStart(common.Payload):
    """What the forwarder starts a CronJobWorkflow with (signal-with-start)."""


class CronJobObserved(common.Payload):
    """The CronJob as the apiserver holds it now (added, spec changed, or resynced)."""

    cron_job: CronJob


class CronJobRun(common.Payload):
    """A Volcano Job a CronJob controls, as far as its CronJobWorkflow reads it."""

    name: str
    uid: str
    resource_version: str = ""
    phase: str = ""  # "": no phase yet
    created: datetime | None = None  # None: unknown
    finished_at: datetime | None = None  # status.state.lastTransitionTime; None: unknown
    deleted: bool = False  # gone from the apiserver


class CronJobRunChanged(common.Payload):
    job: CronJobRun


class RunDue(common.Payload):
    """A scheduled run started and asks whether it is still due (its nominal time)."""

    workflow_id: str
    scheduled: datetime


class RunAnswer(common.Payload):
    """The CronJobWorkflow's answer to `RunDue`: the Job to create, or why not."""

    job: Job | None = None  # None: the run makes no Job
    reason: str = ""


class RunCreated(common.Payload):
    """What the run's create found: the Job made (or the one of that name already there)."""

    workflow_id: str
    name: str
    uid: str = ""  # "": it could not be created
    resource_version: str = ""
    created: datetime | None = None  # None: unknown
    owned: bool = True  # False: a Job of that name the CronJob does not control
    phase: str = ""  # of an existing Job; "": none
    error: str = ""  # why it could not be created; "": it was


class RunEnded(common.Payload):
    """The run ends before its Job finished (cancelled by Replace), its Job deleted."""

    workflow_id: str
    name: str


class RunFinished(common.Payload):
    """To a run: its Job finished, went, or the CronJob is gone; the run ends."""

    phase: str  # the Job's last phase, "Deleted", or "CronJobDeleted"


class CronRunStart(common.Payload):
    """The schedule's argument to every run: whose run it is."""

    namespace: str
    name: str


class CronJobView(common.Payload):
    """The `status` query of a CronJobWorkflow."""

    namespace: str
    name: str
    schedule_id: str
    paused: bool = False
    active: list[str] = Field(default_factory=list)  # Job names
    jobs: dict[str, str] = Field(default_factory=dict)  # Job name → phase
    last_schedule_time: datetime | None = None  # None: never
    backlog: int = 0
    kind: Literal["CronJobView"] = "CronJobView"


# Workflow type and message names: histories and the forwarder use these strings.
CRON_JOB_WORKFLOW = "CronJobWorkflow"
CRON_RUN_WORKFLOW = "CronRunWorkflow"
SIGNAL_CRON_JOB_OBSERVED = "cron_job_observed"
SIGNAL_CRON_JOB_DELETED = "cron_job_deleted"  # with JobDeleted: the CronJob's uid
SIGNAL_CRON_JOB_RUN_CHANGED = "cron_job_run_changed"
SIGNAL_RUN_DUE = "run_due"
SIGNAL_RUN_CREATED = "run_created"
SIGNAL_RUN_ENDED = "run_ended"
SIGNAL_RUN_ANSWERED = "run_answered"
SIGNAL_RUN_FINISHED = "run_finished"

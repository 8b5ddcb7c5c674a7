"""The signal handlers several entity workflows take alike, written once: a bus Command (the
Queue's, a Job's, a dispatched Job's workflow) and a Job's deletion (both job kinds and a
dispatched Job). Each only hands the input to the workflow's entity; the signal names are what
the forwarder sends."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.signals import common as common_signals
    from models.signals import job as job_signals


class TakesCommands:
    """A workflow whose entity carries out bus Commands (`volcano.sh` Command objects)."""

    _entity: Any  # an Entity whose inputs include CommandIssued

    @workflow.signal(name=common_signals.SIGNAL_COMMAND_ISSUED)
    def command_issued(self, command: common_signals.CommandIssued) -> None:
        self._entity.accept(command)


class TakesDeletion:
    """A workflow that owns a Job and ends with it."""

    _entity: Any  # an Entity whose inputs include JobDeleted

    @workflow.signal(name=job_signals.SIGNAL_JOB_DELETED)
    def job_deleted(self, deleted: common_signals.JobDeleted) -> None:
        self._entity.accept(deleted)

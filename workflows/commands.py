"""The Volcano commands (abort, restart, resume, terminate, complete) as workflow updates, for
every workflow that owns a Volcano Job: its JobWorkflow, or its DispatchWorkflow when it was
dispatched to a worker cluster. One set of handlers: the update names are what clients call.

A workflow mixing this in has an `_entity` whose `command` carries a command out and returns
the phase before and after, and says in `_refuse` why it may not take one now (the validator
runs it, so a refused update leaves no trace in the history). The same commands also arrive as
bus Commands, by signal (`workflows.handlers.TakesCommands`).
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.bus import Action
    from models.signals import common as common_signals
    from models.signals import job as job_signals
    from workflows.handlers import TakesCommands


class VolcanoCommands(TakesCommands):
    _entity: Any  # an Entity: `await command(issued)` gives (phase before, phase after)

    def _refuse(self, action: Action) -> None:
        """Raise a non-retryable ApplicationError when `action` may not be taken now."""
        raise NotImplementedError

    async def _command(
        self, action: Action, cmd: job_signals.JobCommand
    ) -> job_signals.JobCommandResult:
        issued = common_signals.CommandIssued(action=action, reason=cmd.reason, message=cmd.message)
        before, after = await self._entity.command(issued)
        return job_signals.JobCommandResult(action=action, phase_before=before, phase_after=after)

    @workflow.update
    async def abort(self, cmd: job_signals.JobCommand) -> job_signals.JobCommandResult:
        return await self._command(Action.ABORT_JOB, cmd)

    @abort.validator
    def _abort_allowed(self, cmd: job_signals.JobCommand) -> None:
        self._refuse(Action.ABORT_JOB)

    @workflow.update
    async def restart(self, cmd: job_signals.JobCommand) -> job_signals.JobCommandResult:
        return await self._command(Action.RESTART_JOB, cmd)

    @restart.validator
    def _restart_allowed(self, cmd: job_signals.JobCommand) -> None:
        self._refuse(Action.RESTART_JOB)

    @workflow.update
    async def resume(self, cmd: job_signals.JobCommand) -> job_signals.JobCommandResult:
        return await self._command(Action.RESUME_JOB, cmd)

    @resume.validator
    def _resume_allowed(self, cmd: job_signals.JobCommand) -> None:
        self._refuse(Action.RESUME_JOB)

    @workflow.update
    async def terminate(self, cmd: job_signals.JobCommand) -> job_signals.JobCommandResult:
        return await self._command(Action.TERMINATE_JOB, cmd)

    @terminate.validator
    def _terminate_allowed(self, cmd: job_signals.JobCommand) -> None:
        self._refuse(Action.TERMINATE_JOB)

    @workflow.update
    async def complete(self, cmd: job_signals.JobCommand) -> job_signals.JobCommandResult:
        return await self._command(Action.COMPLETE_JOB, cmd)

    @complete.validator
    def _complete_allowed(self, cmd: job_signals.JobCommand) -> None:
        self._refuse(Action.COMPLETE_JOB)

"""The handlers several entity workflows take alike, written once: a bus Command (the Queue's,
a NamespaceQueue's, a Job's, a dispatched Job's workflow), a Job's deletion (both job kinds and a
dispatched Job), the PodGroups a queue counts and its open and close updates (a cluster Queue
and a NamespaceQueue). Each hands the input to the workflow's entity; the signal names are what
the forwarder sends."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from models.bus import Action
    from models.scheduling import QueueState
    from models.signals import common as common_signals
    from models.signals import job as job_signals
    from models.signals import queue as queue_signals


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


class CountsPodGroups:
    """A queue's workflow: told of the PodGroups that name it, to count them by phase."""

    _entity: Any  # an Entity whose inputs include PodGroupsChanged and PodGroupsListed

    @workflow.signal(name=queue_signals.SIGNAL_POD_GROUPS_CHANGED)
    def pod_groups_changed(self, changed: queue_signals.PodGroupsChanged) -> None:
        self._entity.accept(changed)

    @workflow.signal(name=queue_signals.SIGNAL_POD_GROUPS_LISTED)
    def pod_groups_listed(self, listed: queue_signals.PodGroupsListed) -> None:
        self._entity.accept(listed)


class OpensAndCloses:
    """A queue's workflow: the `open` and `close` updates, refused before they are accepted
    when its state machine would refuse them (the refusal and the command are the queue
    kind's own)."""

    _entity: Any  # an Entity whose commands open and close the queue

    def _refusal(self, action: Action) -> str | None:
        raise NotImplementedError

    def _command_for(self, action: Action, why: str) -> Any:
        raise NotImplementedError

    def _refuse(self, action: Action) -> None:
        why = self._refusal(action)
        if why is not None:
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)

    async def _command(
        self, action: Action, cmd: queue_signals.QueueCommand
    ) -> queue_signals.QueueCommandResult:
        before, after = await self._entity.command(
            self._command_for(action, cmd.reason or "update")
        )
        return queue_signals.QueueCommandResult(
            action=action, state_before=QueueState(before), state_after=QueueState(after)
        )

    @workflow.update
    async def open(self, cmd: queue_signals.QueueCommand) -> queue_signals.QueueCommandResult:
        return await self._command(Action.OPEN_QUEUE, cmd)

    @open.validator
    def _open_allowed(self, cmd: queue_signals.QueueCommand) -> None:
        self._refuse(Action.OPEN_QUEUE)

    @workflow.update
    async def close(self, cmd: queue_signals.QueueCommand) -> queue_signals.QueueCommandResult:
        return await self._command(Action.CLOSE_QUEUE, cmd)

    @close.validator
    def _close_allowed(self, cmd: queue_signals.QueueCommand) -> None:
        self._refuse(Action.CLOSE_QUEUE)

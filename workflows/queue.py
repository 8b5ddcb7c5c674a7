"""QueueWorkflow: one durable workflow per Volcano Queue (id `queue/<name>`).

Signals from the forwarder (the queue, its PodGroups, its children) and from the parent's
workflow (its state) go to the inbox; `run` feeds each to `controller.decide` and carries out
the effects. Commands arrive as Command CRs (signal) or as the validated `open`/`close`
updates. State is set in `@workflow.init`, so signals before `run` are never lost.

Patches in force: none yet.
"""

from __future__ import annotations

from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities import events as event_activities
    from activities import options, queues
    from activities.messages import PatchQueueInput, QueueStatusInput, RecordEventInput
    from controllers.queue import controller
    from controllers.queue import effects as fx
    from controllers.queue.state import QueueRecord
    from models import keys, signals
    from models.bus import Action
    from workflows import activity_call, search_attributes
    from workflows.inbox import Inbox, continue_due

EVENTS_NAMESPACE = "default"  # Events about a cluster-scoped Queue need some namespace


class QueueWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.QueueStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: QueueRecord | None = None  # None: a new queue
    max_history: int = 0  # 0: continue as new when the server suggests it


@workflow.defn(name=signals.QUEUE_WORKFLOW)
class QueueWorkflow:
    @workflow.init
    def __init__(self, start: QueueWorkflowInput) -> None:
        self._state = start.state or QueueRecord()
        self._inbox: Inbox[controller.Input | controller.Command] = Inbox()
        self._finished = False
        self._max_history = start.max_history

    @workflow.run
    async def run(self, start: QueueWorkflowInput) -> None:
        while True:
            await workflow.wait_condition(
                lambda: bool(self._inbox) or continue_due(self._max_history)
            )
            while self._inbox and not self._finished:
                ticket, item = self._inbox.take()
                await self._process(item)
                self._inbox.done(ticket, self._state.current)
            if self._finished or continue_due(self._max_history):
                await workflow.wait_condition(workflow.all_handlers_finished)
                if self._inbox and not self._finished:
                    continue
                if self._finished:
                    return
                workflow.continue_as_new(
                    QueueWorkflowInput(state=self._state, max_history=self._max_history)
                )

    @workflow.signal(name=signals.SIGNAL_QUEUE_OBSERVED)
    def queue_observed(self, observed: signals.QueueObserved) -> None:
        self._inbox.accept(observed)

    @workflow.signal(name=signals.SIGNAL_QUEUE_DELETED)
    def queue_deleted(self, deleted: signals.QueueDeleted) -> None:
        self._inbox.accept(deleted)

    @workflow.signal(name=signals.SIGNAL_POD_GROUPS_CHANGED)
    def pod_groups_changed(self, changed: signals.PodGroupsChanged) -> None:
        self._inbox.accept(changed)

    @workflow.signal(name=signals.SIGNAL_CHILD_QUEUE_OBSERVED)
    def child_queue_observed(self, child: signals.ChildQueueObserved) -> None:
        self._inbox.accept(child)

    @workflow.signal(name=signals.SIGNAL_PARENT_STATE_CHANGED)
    def parent_state_changed(self, parent: signals.ParentStateChanged) -> None:
        self._inbox.accept(parent)

    @workflow.signal(name=signals.SIGNAL_COMMAND_ISSUED)
    def command_issued(self, command: signals.CommandIssued) -> None:
        self._inbox.accept(command)

    def _refuse(self, action: Action) -> None:
        why = controller.refusal(self._state, action)
        if why is not None:
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)

    async def _command(
        self, action: Action, cmd: signals.QueueCommand
    ) -> signals.QueueCommandResult:
        before = self._state.current
        ticket = self._inbox.accept(controller.Command(action=action, why=cmd.reason or "update"))
        # Carried out in arrival order with every other input.
        after = await self._inbox.answer(ticket)
        return signals.QueueCommandResult(action=action, state_before=before, state_after=after)

    @workflow.update
    async def open(self, cmd: signals.QueueCommand) -> signals.QueueCommandResult:
        return await self._command(Action.OPEN_QUEUE, cmd)

    @open.validator
    def _open_allowed(self, cmd: signals.QueueCommand) -> None:
        self._refuse(Action.OPEN_QUEUE)

    @workflow.update
    async def close(self, cmd: signals.QueueCommand) -> signals.QueueCommandResult:
        return await self._command(Action.CLOSE_QUEUE, cmd)

    @close.validator
    def _close_allowed(self, cmd: signals.QueueCommand) -> None:
        self._refuse(Action.CLOSE_QUEUE)

    @workflow.query
    def status(self) -> signals.QueueView:
        return controller.view(self._state, self._inbox.backlog)

    async def _process(self, item: controller.Input | controller.Command) -> None:
        decision = controller.decide(self._state, item)
        self._state = decision.state
        for effect in decision.effects:
            try:
                await self._apply(effect)
            except ActivityError as e:
                # Status and annotations are level-triggered: the next sync writes them again.
                workflow.logger.warning(
                    "queue effect failed queue=%s effect=%s error=%s",
                    self._state.name,
                    effect.kind,
                    e.cause,
                )

    async def _apply(self, effect: fx.AnyEffect) -> None:
        name = self._state.name
        match effect:
            case fx.WriteQueueStatus():
                await activity_call.run(
                    queues.write_queue_status,
                    QueueStatusInput(
                        name=effect.name, status={"state": effect.state, **effect.counts}
                    ),
                    options.KUBE_WRITE,
                    f"write status {effect.state} {effect.counts}",
                )
            case fx.PatchQueue():
                await activity_call.run(
                    queues.patch_queue,
                    PatchQueueInput(
                        name=effect.name,
                        closed_by_parent=effect.closed_by_parent,
                        parent=effect.parent,
                    ),
                    options.KUBE_WRITE,
                    f"patch queue {effect.name}: closed-by-parent={effect.closed_by_parent}",
                )
            case fx.TellChildren():
                for child in effect.children:
                    handle = workflow.get_external_workflow_handle(keys.queue_workflow_id(child))
                    try:
                        await handle.signal(
                            signals.SIGNAL_PARENT_STATE_CHANGED,
                            signals.ParentStateChanged(parent=name, state=effect.state),
                        )
                    except Exception as e:
                        workflow.logger.info(
                            "child not told queue=%s child=%s error=%s", name, child, e
                        )
            case fx.StateChanged():
                workflow.upsert_search_attributes(
                    [
                        search_attributes.QUEUE_STATE.value_set(effect.state),
                        search_attributes.QUEUE_PARENT.value_set(effect.parent or ""),
                    ]
                )
                workflow.set_current_details(f"{effect.state}: {effect.reason}")
                workflow.logger.info(
                    "state changed queue=%s from=%s to=%s reason=%s",
                    name,
                    effect.previous,
                    effect.state,
                    effect.reason,
                )
            case fx.RecordEvent():
                uid = (self._state.queue.metadata.uid if self._state.queue else None) or ""
                await activity_call.run(
                    event_activities.record_event,
                    RecordEventInput(
                        namespace=EVENTS_NAMESPACE,
                        name=name,
                        uid=uid,
                        type=effect.type,
                        reason=effect.reason,
                        message=effect.message,
                        api_version="scheduling.volcano.sh/v1beta1",
                        kind="Queue",
                    ),
                    options.KUBE_EVENT,
                    f"event {effect.reason}: {effect.message}",
                )
            case fx.Finish():
                self._finished = True
            case _:
                assert_never(effect)

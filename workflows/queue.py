"""QueueWorkflow: one durable workflow per Volcano Queue (id `queue/<name>`).

It runs on the entity shell (`workflows.entity`) with Volcano's queue core
(`controllers.queue`). Signals come from the forwarder (the queue, its PodGroups, its
children) and from the parent's workflow (its state); commands arrive as Command CRs (signal)
or as the validated `open`/`close` updates. What is its own: the status query and the effects
only a queue has (status, annotations, telling its children).

Patches in force: none yet.
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import queues
    from activities.messages import PatchQueueInput, QueueStatusInput
    from controllers.outcomes import AnyOutcome
    from controllers.parsed import ParsedQueue
    from controllers.queue import controller
    from controllers.queue import effects as queue_fx
    from controllers.queue.state import QueueRecord
    from models import keys, scheduling
    from models.bus import Action
    from models.signals import job as job_signals
    from models.signals import queue as queue_signals
    from service import search_attributes
    from workflows import activity_call, visibility
    from workflows.entity import Entity, Ref, parsed
    from workflows.handlers import CountsPodGroups, OpensAndCloses, TakesCommands

EVENTS_NAMESPACE = "default"  # Events about a cluster-scoped Queue need some namespace


class QueueWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.queue.QueueStart`, which must stay a subset of these fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: QueueRecord | None = None  # None: a new queue
    observed: queue_signals.QueueObserved | None = None  # a queue made again as the last run ended
    max_history: int = 0  # 0: continue as new when the server suggests it


@workflow.defn(name=queue_signals.QUEUE_WORKFLOW)
class QueueWorkflow(TakesCommands, CountsPodGroups, OpensAndCloses):
    @workflow.init
    def __init__(self, start: QueueWorkflowInput) -> None:
        # Status and annotations are level-triggered: a failed write is logged, and the next
        # sync writes them again.
        self._entity = Entity[QueueRecord, controller.Input | controller.Command, queue_fx.Own](
            self, start.state or QueueRecord(), start.max_history, report_failures=False
        )
        if start.observed is not None:
            self._observe(start.observed)

    @workflow.run
    async def run(self, start: QueueWorkflowInput) -> None:
        await self._entity.run(())

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self,
        state: QueueRecord,
        item: controller.Input | controller.Command | AnyOutcome,
        now: datetime,
    ) -> controller.Decision:
        if isinstance(item, AnyOutcome):
            return controller.Decision(state=state)  # a queue arms no timer and binds nothing
        return controller.decide(state, item)

    def carry(
        self, state: QueueRecord, start_over: job_signals.JobObserved | None, max_history: int
    ) -> QueueWorkflowInput:
        return QueueWorkflowInput(state=state, max_history=max_history)

    def made_again(
        self, state: QueueRecord, item: object, max_history: int
    ) -> QueueWorkflowInput | None:
        if not isinstance(item, ParsedQueue):
            return None
        if (item.signal.queue.get("metadata") or {}).get("uid") == self.ref(state).uid:
            return None
        return QueueWorkflowInput(observed=item.signal, max_history=max_history)

    def answer(self, state: QueueRecord) -> str:
        return state.current

    def ref(self, state: QueueRecord) -> Ref:
        uid = (state.queue.metadata.uid if state.queue else None) or ""
        return Ref(
            namespace=EVENTS_NAMESPACE,
            name=state.name,
            uid=uid,
            api_version=scheduling.API_VERSION,
            kind="Queue",
        )

    def decided(self, before: QueueRecord, after: QueueRecord) -> None:
        return None

    # -- inputs -------------------------------------------------------------------------------

    def _observe(self, observed: queue_signals.QueueObserved) -> None:
        """Hand the core the Queue parsed here, once (`controllers.parsed`); a payload that is
        not a Queue is dropped, logged."""
        queue = parsed(scheduling.Queue, observed.queue, queue_signals.SIGNAL_QUEUE_OBSERVED)
        if queue is not None:
            self._entity.accept(ParsedQueue(signal=observed, queue=queue))

    @workflow.signal(name=queue_signals.SIGNAL_QUEUE_OBSERVED)
    def queue_observed(self, observed: queue_signals.QueueObserved) -> None:
        self._observe(observed)

    @workflow.signal(name=queue_signals.SIGNAL_QUEUE_DELETED)
    def queue_deleted(self, deleted: queue_signals.QueueDeleted) -> None:
        self._entity.accept(deleted)

    @workflow.signal(name=queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED)
    def child_queue_observed(self, child: queue_signals.ChildQueueObserved) -> None:
        self._entity.accept(child)

    @workflow.signal(name=queue_signals.SIGNAL_PARENT_STATE_CHANGED)
    def parent_state_changed(self, parent: queue_signals.ParentStateChanged) -> None:
        self._entity.accept(parent)

    def _refusal(self, action: Action) -> str | None:
        return controller.refusal(self._entity.state, action)

    def _command_for(self, action: Action, why: str) -> controller.Command:
        return controller.Command(action=action, why=why)

    @workflow.query
    def status(self) -> queue_signals.QueueView:
        return controller.view(self._entity.state, self._entity.inbox.backlog)

    # -- the effects only a queue has ------------------------------------------------------------

    async def apply(self, effect: queue_fx.Own) -> None:
        name = self._entity.state.name
        match effect:
            case queue_fx.WriteQueueStatus():
                await activity_call.run(
                    queues.write_queue_status,
                    QueueStatusInput(
                        name=effect.name, status={"state": effect.state, **effect.counts}
                    ),
                    options.KUBE_WRITE,
                    f"write status {effect.state} {effect.counts}",
                )
            case queue_fx.PatchQueue():
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
            case queue_fx.TellChildren():
                await self._tell_children(name, effect)
            case queue_fx.StateChanged():
                visibility.upsert_changed(
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
            case _:
                assert_never(effect)

    async def _tell_children(self, name: str, effect: queue_fx.TellChildren) -> None:
        for child in effect.children:
            handle = workflow.get_external_workflow_handle(keys.queue_workflow_id(child))
            try:
                await handle.signal(
                    queue_signals.SIGNAL_PARENT_STATE_CHANGED,
                    queue_signals.ParentStateChanged(parent=name, state=effect.state),
                )
            except Exception as e:
                workflow.logger.info("child not told queue=%s child=%s error=%s", name, child, e)

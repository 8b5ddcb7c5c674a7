"""NamespaceQueueWorkflow: one durable workflow per NamespaceQueue (id
`namespacequeue/<namespace>/<name>`).

It runs on the entity shell (`workflows.entity`) with the NamespaceQueue core
(`controllers.namespacequeue`). The forwarder signals the queue itself, its PodGroups (the
ones whose `spec.queue` is `namespace/<name>` in its namespace) and `hierarchy_changed` when a
NamespaceQueue above, beside or below it, or the cluster Queue it hangs under, changes; bus
Commands aimed at it (`target` kind NamespaceQueue) open and close it, as do the validated
`open`/`close` updates. What is its own: the status query, the read of its surroundings (whose
result goes back into the inbox ahead of everything else) and the status write. It ends when
its NamespaceQueue (or its namespace) is deleted.

Patches in force: none yet.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import namespacequeues
    from controllers.namespacequeue import controller
    from controllers.namespacequeue import effects as nq_fx
    from controllers.namespacequeue.state import NamespaceQueueRecord
    from controllers.outcomes import AnyOutcome
    from models import namespacequeue, scheduling
    from models.bus import Action
    from models.signals import job as job_signals
    from models.signals import namespacequeue as nq_signals
    from workflows import activity_call
    from workflows.entity import Entity, Ref, parsed
    from workflows.handlers import CountsPodGroups, OpensAndCloses, TakesCommands


class NamespaceQueueWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.namespacequeue.NamespaceQueueStart`, which must stay a subset of these
    fields (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: NamespaceQueueRecord | None = None  # None: a new queue
    # A queue made again as the last run ended; None: none.
    observed: nq_signals.NamespaceQueueObserved | None = None
    max_history: int = 0  # 0: continue as new when the server suggests it


@workflow.defn(name=nq_signals.NAMESPACE_QUEUE_WORKFLOW)
class NamespaceQueueWorkflow(TakesCommands, CountsPodGroups, OpensAndCloses):
    @workflow.init
    def __init__(self, start: NamespaceQueueWorkflowInput) -> None:
        # Status is level-triggered: a failed write is logged, the next change writes again.
        self._entity = Entity[
            NamespaceQueueRecord, controller.Input | controller.Command, nq_fx.Own
        ](self, start.state or NamespaceQueueRecord(), start.max_history, report_failures=False)
        if start.observed is not None:
            self._observe(start.observed)

    @workflow.run
    async def run(self, start: NamespaceQueueWorkflowInput) -> None:
        await self._entity.run(())

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self,
        state: NamespaceQueueRecord,
        item: controller.Input | controller.Command | AnyOutcome,
        now: datetime,
    ) -> controller.Decision:
        if isinstance(item, AnyOutcome):
            return controller.Decision(state=state)  # it arms no timer and binds nothing
        return controller.decide(state, item, now)

    def carry(
        self,
        state: NamespaceQueueRecord,
        start_over: job_signals.JobObserved | None,
        max_history: int,
    ) -> NamespaceQueueWorkflowInput:
        return NamespaceQueueWorkflowInput(state=state, max_history=max_history)

    def made_again(
        self, state: NamespaceQueueRecord, item: object, max_history: int
    ) -> NamespaceQueueWorkflowInput | None:
        if not isinstance(item, controller.ParsedNamespaceQueue):
            return None
        if (item.signal.queue.get("metadata") or {}).get("uid") == state.uid:
            return None
        return NamespaceQueueWorkflowInput(observed=item.signal, max_history=max_history)

    def answer(self, state: NamespaceQueueRecord) -> str:
        return state.current

    def ref(self, state: NamespaceQueueRecord) -> Ref:
        return Ref(
            namespace=state.namespace,
            name=state.name,
            uid=state.uid,
            api_version=scheduling.API_VERSION,
            kind=namespacequeue.KIND,
        )

    def decided(self, before: NamespaceQueueRecord, after: NamespaceQueueRecord) -> None:
        return None

    # -- inputs -------------------------------------------------------------------------------

    def _observe(self, observed: nq_signals.NamespaceQueueObserved) -> None:
        """Hand the core the NamespaceQueue parsed here, once; a payload that is not one is
        dropped, logged."""
        queue = parsed(
            namespacequeue.NamespaceQueue,
            observed.queue,
            nq_signals.SIGNAL_NAMESPACE_QUEUE_OBSERVED,
        )
        if queue is not None:
            self._entity.accept(controller.ParsedNamespaceQueue(signal=observed, queue=queue))

    @workflow.signal(name=nq_signals.SIGNAL_NAMESPACE_QUEUE_OBSERVED)
    def namespace_queue_observed(self, observed: nq_signals.NamespaceQueueObserved) -> None:
        self._observe(observed)

    @workflow.signal(name=nq_signals.SIGNAL_NAMESPACE_QUEUE_DELETED)
    def namespace_queue_deleted(self, deleted: nq_signals.NamespaceQueueDeleted) -> None:
        self._entity.accept(deleted)

    @workflow.signal(name=nq_signals.SIGNAL_HIERARCHY_CHANGED)
    def hierarchy_changed(self, changed: nq_signals.HierarchyChanged) -> None:
        self._entity.accept(changed)

    def _refusal(self, action: Action) -> str | None:
        return controller.refusal(self._entity.state, action)

    def _command_for(self, action: Action, why: str) -> controller.Command:
        return controller.Command(action=action, why=why)

    @workflow.query
    def status(self) -> nq_signals.NamespaceQueueView:
        return controller.view(self._entity.state, self._entity.inbox.backlog)

    # -- the effects only a NamespaceQueue has -----------------------------------------------

    async def apply(self, effect: nq_fx.Own) -> None:
        match effect:
            case nq_fx.ReadSurroundings():
                surroundings = await activity_call.run(
                    namespacequeues.read_namespace_queue_surroundings,
                    namespacequeues.SurroundingsInput(namespace=effect.namespace, name=effect.name),
                    options.KUBE_WRITE,
                    f"read the queues around {effect.namespace}/{effect.name}",
                )
                read = controller.SurroundingsRead(surroundings=surroundings)
                self._entity.inbox.internal(read, first=True)
            case nq_fx.WriteNamespaceQueueStatus():
                shown = effect.status.get("conditions") or []
                ready: dict[str, Any] = next((c for c in shown if c.get("type") == "Ready"), {})
                await activity_call.run(
                    namespacequeues.write_namespace_queue_status,
                    namespacequeues.NamespaceQueueStatusInput(
                        namespace=effect.namespace, name=effect.name, status=effect.status
                    ),
                    options.KUBE_WRITE,
                    f"write status {effect.status.get('state')} "
                    f"Ready={ready.get('status')} {ready.get('reason')}",
                )
            case nq_fx.StateChanged():
                state = self._entity.state
                workflow.set_current_details(f"{effect.state}: {effect.reason}")
                workflow.logger.info(
                    "state changed namespacequeue=%s from=%s to=%s reason=%s",
                    state.id,
                    effect.previous,
                    effect.state,
                    effect.reason,
                    extra={"namespacequeue": state.id},
                )
            case _:
                assert_never(effect)

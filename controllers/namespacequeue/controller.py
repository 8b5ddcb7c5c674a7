"""The NamespaceQueueWorkflow's pure core: `decide(state, input, now) -> Decision`.

Volcano's NamespaceQueue controller (design 3.4): on any change of the queue or around it, the
shell reads what its conditions depend on (`ReadSurroundings`); with that read, the core sets
`Authorized` and `Ready` (`hierarchy.evaluate`) and the lifecycle state, from the cluster
Queue's state table (`controllers.queue.transitions`): Open, or Closing after a close until no
PodGroup of it holds resources any more, then Closed; Ready is False while it is not Open. The
status (state, conditions, counters) is written only when it changed. Authorization and the
lifecycle are independent: an unauthorized queue keeps its state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.namespacequeue import conditions
from controllers.namespacequeue import effects as nq_fx
from controllers.namespacequeue.conditions import Check, Reason
from controllers.namespacequeue.hierarchy import Surroundings, evaluate, trimmed_namespace_queue
from controllers.namespacequeue.state import NamespaceQueueRecord, Written
from controllers.queue.controller import Command as Command  # open and close, as a Queue's
from controllers.queue.state import count_phases, with_refs
from controllers.queue.transitions import Operation, next_state, rule_for
from models.bus import Action
from models.meta import Condition
from models.namespacequeue import ConditionType, NamespaceQueue
from models.scheduling import QueueState
from models.signals import common as common_signals
from models.signals import namespacequeue as nq_signals
from models.signals import queue as queue_signals


@dataclasses.dataclass(frozen=True)
class ParsedNamespaceQueue:
    """`namespace_queue_observed` with its NamespaceQueue validated (once, by the shell)."""

    signal: nq_signals.NamespaceQueueObserved
    queue: NamespaceQueue


class SurroundingsRead(BaseModel):
    """The result of `ReadSurroundings`, handed back by the shell."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["SurroundingsRead"] = "SurroundingsRead"
    surroundings: Surroundings


Input = (
    ParsedNamespaceQueue
    | nq_signals.NamespaceQueueDeleted
    | nq_signals.HierarchyChanged
    | SurroundingsRead
    | queue_signals.PodGroupsChanged
    | queue_signals.PodGroupsListed
    | common_signals.CommandIssued
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: NamespaceQueueRecord
    effects: tuple[nq_fx.AnyEffect, ...] = ()


Out = list[nq_fx.AnyEffect]


def _read(r: NamespaceQueueRecord) -> nq_fx.ReadSurroundings:
    return nq_fx.ReadSurroundings(namespace=r.namespace, name=r.name)


def _adopted(nq: NamespaceQueue) -> Written | None:
    """What the object's status already says (a workflow started again over an existing
    queue does not write it again unchanged); None: no status yet."""
    status = nq.status
    if status is None:
        return None
    found = {k: getattr(status, k) or 0 for k in count_phases({})}
    return Written(state=status.state, conditions=tuple(status.conditions or ()), counts=found)


def _observe(
    r: NamespaceQueueRecord, observed: ParsedNamespaceQueue
) -> tuple[NamespaceQueueRecord, Out]:
    nq = observed.queue
    uid = nq.metadata.uid or ""
    if r.uid and uid and uid != r.uid:
        # Deleted and made again under the same name while no one watched: a new object.
        r = r.model_copy(
            update={"queue": None, "state": None, "written": None, "surroundings": None}
        )
    if r.queue is None:
        adopted = _adopted(nq)
        state = nq.status.state if nq.status is not None else None
        r = r.model_copy(update={"written": adopted, "state": state})
    r = r.model_copy(
        update={
            "namespace": nq.metadata.namespace or "",
            "name": nq.metadata.name or "",
            "uid": uid or r.uid,
            "queue": trimmed_namespace_queue(nq),
        }
    )
    return r, [_read(r)]


def _lifecycle_check(state: QueueState) -> Check:
    reason = Reason.CLOSING if state == QueueState.CLOSING else Reason.CLOSED
    return Check(False, reason, f"NamespaceQueue is {state}: it takes no new workload")


def _write(r: NamespaceQueueRecord, now: datetime) -> tuple[NamespaceQueueRecord, Out]:
    """The status the queue should show; written only when it differs from the last one."""
    if r.queue is None or r.surroundings is None:
        return r, []  # the conditions need the read first: one write, not two
    authorized, ready = evaluate(r.queue, r.surroundings)
    if ready.ok and r.current != QueueState.OPEN:
        ready = _lifecycle_check(r.current)
    before = r.written.conditions if r.written is not None else ()
    generation = r.queue.metadata.generation
    shown = (
        conditions.condition(ConditionType.AUTHORIZED, authorized, before, now, generation),
        conditions.condition(ConditionType.READY, ready, before, now, generation),
    )
    wanted = Written(state=r.current, conditions=shown, counts=r.counts())
    w = r.written
    if (
        w is not None
        and w.state == wanted.state
        and w.counts == wanted.counts
        and conditions.same(w.conditions, shown)
    ):
        return r, []
    status = {
        "state": str(r.current),
        "conditions": [c.dump() for c in shown],
        **wanted.counts,
    }
    write = nq_fx.WriteNamespaceQueueStatus(namespace=r.namespace, name=r.name, status=status)
    return r.model_copy(update={"written": wanted}), [write, *_told(before, ready)]


def _told(before: Sequence[Condition], ready: Check) -> Out:
    """An Event when Ready moves (`kubectl describe` shows why a queue stopped scheduling);
    none for a first Ready=True, nor while it stays as it was."""
    was = next((c.status for c in before if c.type == ConditionType.READY), None)
    now = "True" if ready.ok else "False"
    if was == now or (was is None and ready.ok):
        return []
    kind: Literal["Normal", "Warning"] = "Normal" if ready.ok else "Warning"
    return [fx.RecordEvent(type=kind, reason=ready.reason, message=ready.message)]


def _sync(
    r: NamespaceQueueRecord, action: Action, why: str, now: datetime
) -> tuple[NamespaceQueueRecord, Out]:
    """One request through the state table, then the status."""
    if r.queue is None or r.deleted:
        return r, []
    rule = rule_for(r.state, action)
    before = r.current
    after = next_state(before, rule.target, r.holding())
    out: Out = []
    if after != r.state:  # a queue never written before counts as changed
        r = r.model_copy(update={"state": after})
        if after != before or r.written is None:
            out.append(nq_fx.StateChanged(state=after, previous=before, reason=why))
        if rule.operation == Operation.CLOSE and after != before:
            out.append(fx.RecordEvent(reason="CloseQueue", message=f"Close queue succeed: {why}"))
    r, more = _write(r, now)
    return r, out + more


def decide(r: NamespaceQueueRecord, event: Input | Command, now: datetime) -> Decision:
    out: Out
    match event:
        case ParsedNamespaceQueue():
            r, out = _observe(r, event)
        case nq_signals.NamespaceQueueDeleted():
            return Decision(state=r.model_copy(update={"deleted": True}), effects=(fx.Finish(),))
        case nq_signals.HierarchyChanged():
            out = [_read(r)] if r.queue is not None and not r.deleted else []
        case SurroundingsRead():
            r = r.model_copy(update={"surroundings": event.surroundings})
            r, out = _sync(r, Action.SYNC_QUEUE, "surroundings read", now)
        case queue_signals.PodGroupsChanged():
            r = r.model_copy(update={"pod_groups": with_refs(r.pod_groups, event.groups)})
            r, out = _sync(r, Action.SYNC_QUEUE, "PodGroups changed", now)
        case queue_signals.PodGroupsListed():
            listed = set(event.keys)
            groups = {k: v for k, v in r.pod_groups.items() if k in listed}
            if groups == r.pod_groups:
                return Decision(state=r)
            r = r.model_copy(update={"pod_groups": groups})
            r, out = _sync(r, Action.SYNC_QUEUE, "PodGroups gone unseen", now)
        case common_signals.CommandIssued() | Command():
            try:
                action: Action | None = Action(event.action)
            except ValueError:
                action = None
            if action not in (Action.OPEN_QUEUE, Action.CLOSE_QUEUE):
                warning = f"action {event.action} does not apply to a NamespaceQueue; ignored"
                event_fx = fx.RecordEvent(type="Warning", reason="InvalidCommand", message=warning)
                return Decision(state=r, effects=(event_fx,))
            why = (
                f"command {event.command}"
                if isinstance(event, common_signals.CommandIssued)
                else event.why
            )
            r, out = _sync(r, action, why or "update", now)
    return Decision(state=r, effects=tuple(out))


def refusal(r: NamespaceQueueRecord, action: Action) -> str | None:
    """Why an open/close update cannot apply now (None: it can)."""
    if r.queue is None:
        return f"NamespaceQueue {r.namespace or '?'}/{r.name or '?'} has not been observed yet"
    if action == Action.OPEN_QUEUE and r.current == QueueState.OPEN:
        return f"NamespaceQueue {r.id} is already Open"
    if action == Action.CLOSE_QUEUE and r.current in (QueueState.CLOSED, QueueState.CLOSING):
        return f"NamespaceQueue {r.id} is already {r.current}"
    return None


def view(r: NamespaceQueueRecord, backlog: int = 0) -> nq_signals.NamespaceQueueView:
    shown = {c.type: c for c in (r.written.conditions if r.written else ())}
    ready = shown.get(ConditionType.READY)
    authorized = shown.get(ConditionType.AUTHORIZED)
    return nq_signals.NamespaceQueueView(
        namespace=r.namespace,
        name=r.name,
        state=r.current,
        parent=r.parent,
        authorized=authorized.status if authorized else "",
        ready=ready.status if ready else "",
        reason=(ready.reason or "") if ready else "",
        pod_groups=r.counts(),
        backlog=backlog,
    )

"""The QueueWorkflow's pure core: `decide(state, input) -> Decision`.

Volcano's syncQueue, openQueue and closeQueue over the state table, with the hierarchy done by
message passing: a parent tells its children its state, and each child closes itself when its
parent is Closed or Closing (marking `volcano.sh/closed-by-parent`), and reopens when the
parent is Open again only if the parent had closed it. An OpenQueue under a closed parent
waits, and runs as soon as the parent opens.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.parsed import ParsedQueue
from controllers.queue import effects as queue_fx
from controllers.queue.state import Child, QueueRecord, with_refs
from controllers.queue.transitions import CLOSED_OR_CLOSING, Operation, next_state, rule_for
from models.bus import Action
from models.defaults import default_queue
from models.scheduling import CLOSED_BY_PARENT, ROOT_QUEUE, QueueState
from models.signals import common as common_signals
from models.signals import queue as queue_signals


class Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["Command"] = "Command"
    action: Action
    why: str = ""


Input = (
    ParsedQueue
    | queue_signals.QueueDeleted
    | queue_signals.PodGroupsChanged
    | queue_signals.PodGroupsListed
    | queue_signals.ChildQueueObserved
    | queue_signals.ParentStateChanged
    | common_signals.CommandIssued
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: QueueRecord
    effects: tuple[queue_fx.AnyEffect, ...] = ()


def _state_of(text: str) -> QueueState:
    """A state another queue reported; one this controller does not know reads as Unknown
    (not Closed, so a child still holds its closing parent; nor Open, so a parent in it
    neither closes nor reopens its children)."""
    try:
        return QueueState(text)
    except ValueError:
        return QueueState.UNKNOWN


def _parent_closed(q: QueueRecord) -> bool:
    return q.parent not in (None, ROOT_QUEUE) and q.parent_state in CLOSED_OR_CLOSING


def _run(q: QueueRecord, action: Action, why: str) -> tuple[QueueRecord, list[queue_fx.AnyEffect]]:
    """One request: the table's rule, then the hierarchy check of syncQueue."""
    if q.queue is None or q.deleted:
        return q, []
    rule = rule_for(q.state, action)
    out: list[queue_fx.AnyEffect] = []
    before = q.current
    update: dict[str, object] = {}
    if rule.operation == Operation.OPEN and before != QueueState.OPEN:
        if _parent_closed(q):
            message = (
                f"queue {q.name}: open the parent queue {q.parent} first, it is {q.parent_state}"
            )
            out.append(fx.RecordEvent(type="Warning", reason="OpenQueue", message=message))
            return q.model_copy(update={"open_waiting": True}), out
        update["open_waiting"] = False
        if q.closed_by_parent:
            update["closed_by_parent"] = False
            out.append(queue_fx.PatchQueue(name=q.name, closed_by_parent=False))
    if (
        rule.operation == Operation.CLOSE
        and before not in CLOSED_OR_CLOSING
        and q.name == ROOT_QUEUE
    ):
        out.append(
            fx.RecordEvent(
                type="Warning", reason="CloseQueue", message="Root queue cannot be closed"
            )
        )
        return q, out
    after = next_state(before, rule.target, q.holding())
    changed = after != q.state  # a queue never written before counts as changed
    q = q.model_copy(update={**update, "state": after})
    if changed or q.counts() != q.counts_written:
        out.append(queue_fx.WriteQueueStatus(name=q.name, state=after, counts=q.counts()))
        q = q.model_copy(update={"counts_written": q.counts()})
    if changed:
        out.append(queue_fx.StateChanged(state=after, previous=before, parent=q.parent, reason=why))
        if q.children:
            out.append(queue_fx.TellChildren(children=sorted(q.children), state=after))
        if rule.operation == Operation.CLOSE:
            out.append(fx.RecordEvent(reason="CloseQueue", message=f"Close queue succeed: {why}"))
    return _hierarchy(q, out)


def _hierarchy(
    q: QueueRecord, out: list[queue_fx.AnyEffect]
) -> tuple[QueueRecord, list[queue_fx.AnyEffect]]:
    """syncHierarchicalQueue: follow the parent's state."""
    if q.parent is None:
        return q, out
    if _parent_closed(q) and q.current not in CLOSED_OR_CLOSING:
        q = q.model_copy(update={"closed_by_parent": True})
        out.append(queue_fx.PatchQueue(name=q.name, closed_by_parent=True))
        q, more = _run(q, Action.CLOSE_QUEUE, f"parent queue {q.parent} is {q.parent_state}")
        return q, out + more
    parent_open = q.parent_state in (None, QueueState.OPEN)
    if parent_open and q.current in CLOSED_OR_CLOSING and (q.closed_by_parent or q.open_waiting):
        q, more = _run(q, Action.OPEN_QUEUE, f"parent queue {q.parent} is Open again")
        return q, out + more
    return q, out


def _observe(q: QueueRecord, observed: ParsedQueue) -> tuple[QueueRecord, list[queue_fx.AnyEffect]]:
    queue = observed.queue
    name = queue.metadata.name or ""
    uid = queue.metadata.uid or ""
    out: list[queue_fx.AnyEffect] = []
    if q.uid and uid and uid != q.uid:
        # Deleted and created again under the same name while no one watched: a new object,
        # whose status holds nothing this workflow wrote (its children and PodGroups name it
        # by name, and stay).
        q = q.model_copy(update={"queue": None, "state": None, "counts_written": {}})
    first = q.queue is None
    if first and queue.status is not None and queue.status.state is not None:
        q = q.model_copy(update={"state": queue.status.state})  # adopt what is recorded
    annotations = queue.metadata.annotations or {}
    q = q.model_copy(
        update={
            "name": name,
            "uid": uid or q.uid,
            "queue": default_queue(queue),
            "closed_by_parent": annotations.get(CLOSED_BY_PARENT) == "true",
        }
    )
    if name != ROOT_QUEUE and not queue.spec.parent:
        out.append(queue_fx.PatchQueue(name=name, parent=ROOT_QUEUE))
    q, more = _run(q, Action.SYNC_QUEUE, "queue observed")
    return q, out + more


def decide(q: QueueRecord, event: Input | Command) -> Decision:
    out: list[queue_fx.AnyEffect]
    match event:
        case ParsedQueue():
            q, out = _observe(q, event)
        case queue_signals.QueueDeleted():
            return Decision(state=q.model_copy(update={"deleted": True}), effects=(fx.Finish(),))
        case queue_signals.PodGroupsChanged():
            groups = with_refs(q.pod_groups, event.groups)
            q, out = _run(
                q.model_copy(update={"pod_groups": groups}), Action.SYNC_QUEUE, "PodGroups changed"
            )
        case queue_signals.PodGroupsListed():
            listed = set(event.keys)
            groups = {k: v for k, v in q.pod_groups.items() if k in listed}
            if groups == q.pod_groups:
                return Decision(state=q)
            q, out = _run(
                q.model_copy(update={"pod_groups": groups}),
                Action.SYNC_QUEUE,
                "PodGroups gone unseen",
            )
        case queue_signals.ChildQueueObserved():
            children = dict(q.children)
            out = []
            if event.deleted:
                children.pop(event.name, None)
            else:
                known = event.name in children
                children[event.name] = Child(
                    state=_state_of(event.state) if event.state else QueueState.OPEN,
                    closed_by_parent=event.closed_by_parent,
                )
                if not known and q.queue is not None:
                    out.append(queue_fx.TellChildren(children=[event.name], state=q.current))
            q, more = _run(
                q.model_copy(update={"children": children}),
                Action.SYNC_QUEUE,
                f"child queue {event.name} changed",
            )
            out += more
        case queue_signals.ParentStateChanged():
            q = q.model_copy(update={"parent_state": _state_of(event.state)})
            q, out = _run(q, Action.SYNC_QUEUE, f"parent queue {event.parent} is {event.state}")
        case common_signals.CommandIssued() | Command():
            try:
                action = Action(event.action)
            except ValueError:
                action = None
            if action not in (Action.OPEN_QUEUE, Action.CLOSE_QUEUE):
                warning = f"action {event.action} does not apply to a queue; ignored"
                return Decision(
                    state=q,
                    effects=(
                        fx.RecordEvent(type="Warning", reason="InvalidCommand", message=warning),
                    ),
                )
            why = (
                f"command {event.command}"
                if isinstance(event, common_signals.CommandIssued)
                else event.why
            )
            q, out = _run(q, action, why or "update")
    return Decision(state=q, effects=tuple(out))


def refusal(q: QueueRecord, action: Action) -> str | None:
    """Why an open/close update cannot apply now (None: it can)."""
    if q.queue is None:
        return f"queue {q.name or '?'} has not been observed yet"
    if action == Action.OPEN_QUEUE:
        if q.current == QueueState.OPEN:
            return f"queue {q.name} is already Open"
        if _parent_closed(q):
            return f"queue {q.name}: open the parent queue {q.parent} first, it is {q.parent_state}"
        return None
    if q.name == ROOT_QUEUE:
        return "the root queue cannot be closed"
    if q.current in CLOSED_OR_CLOSING:
        return f"queue {q.name} is already {q.current}"
    return None


def view(q: QueueRecord, backlog: int = 0) -> queue_signals.QueueView:
    return queue_signals.QueueView(
        name=q.name,
        state=q.current,
        parent=q.parent,
        closed_by_parent=q.closed_by_parent,
        pod_groups=q.counts(),
        children={name: c.state for name, c in sorted(q.children.items())},
        open_waiting_for_parent=q.open_waiting,
        backlog=backlog,
    )

"""Decide what NamespaceQueueWorkflows hear for each NamespaceQueue and cluster Queue event.

A NamespaceQueue is an owner in the shape of `index` (`namespace_queue_observed` with start,
`namespace_queue_deleted`). Its conditions also depend on the queues around it (Volcano's
design, 3.4.2: a change of a parent, a sibling or the cluster Queue requeues the affected
subtree), so when one is added, changes spec or is deleted, `hierarchy_changed` goes to:

- its descendants in its namespace (their chain, their nearest capability, go through it);
- its siblings under its old and new parent (the guarantee and deserved sums); under a cluster
  Queue, those are the NamespaceQueues of every namespace attached to it.

A cluster Queue added, changing spec or deleted tells the NamespaceQueues attached to it and
their subtrees (its `allowedNamespaces`, its capability), and those attached to its parent
(a cluster child counts in their sums). The status writes of the controllers and the
scheduler change no spec, so they echo nowhere. A full list tells no neighbour: every listed
NamespaceQueue is observed again, and reads its surroundings anew.

Bus Commands whose `target` is a NamespaceQueue (in the Command's own namespace) go to its
workflow, as a Queue's do. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass
from typing import Any, Final

from forwarder.routing import envelopes, index, translate
from models import namespacequeue, queue_refs, scheduling
from models.signals import namespacequeue as nq_signals

Obj = envelopes.Obj
Fingerprint = tuple[Any, bool]  # (spec, being deleted)
QueueMarks = tuple[Any, str]  # a cluster Queue's (spec, parent)
_ROOT: Final = queue_refs.cluster(scheduling.ROOT_QUEUE)


def ref_of(obj: Obj) -> envelopes.NamespaceQueueRef:
    meta = translate.metadata(obj)
    return envelopes.NamespaceQueueRef(str(meta.get("namespace", "")), str(meta.get("name", "")))


def parent_of(obj: Obj) -> queue_refs.QueueTarget | None:
    """Where it hangs, by the one grammar; None: its reference names nothing."""
    ref = ref_of(obj)
    named = (obj.get("spec") or {}).get("parent")
    try:
        return queue_refs.parent(ref.namespace, str(named) if named else None)
    except queue_refs.BadReference:
        return None


def fingerprint(obj: Obj) -> Fingerprint:
    """Its spec (what the neighbours' conditions read) and whether it is going; its status is
    written by its own workflow and the scheduler, and would only echo."""
    return (obj.get("spec"), translate.metadata(obj).get("deletionTimestamp") is not None)


def observed(obj: Obj) -> nq_signals.NamespaceQueueObserved:
    return nq_signals.NamespaceQueueObserved(queue=translate.payload_of(obj))


RULES = index.OwnerRules(
    ref=ref_of,
    fingerprint=fingerprint,
    observed=observed,
    observed_signal=nq_signals.SIGNAL_NAMESPACE_QUEUE_OBSERVED,
    deleted=lambda uid: nq_signals.NamespaceQueueDeleted(uid=uid),
    deleted_signal=nq_signals.SIGNAL_NAMESPACE_QUEUE_DELETED,
)


def command_target(obj: Obj) -> envelopes.NamespaceQueueRef | None:
    """The NamespaceQueue a Command targets (in the Command's namespace); None: another kind."""
    target = obj.get("target") or {}
    if target.get("kind") != namespacequeue.KIND:
        return None
    if target.get("apiVersion") != scheduling.API_VERSION or not target.get("name"):
        return None
    namespace = str(translate.metadata(obj).get("namespace", ""))
    return envelopes.NamespaceQueueRef(namespace, str(target["name"]))


def _queue_marks(obj: Obj) -> QueueMarks:
    spec = obj.get("spec") or {}
    return (spec, str(spec.get("parent") or scheduling.ROOT_QUEUE))


@dataclass(frozen=True)
class _Placed:
    ref: envelopes.NamespaceQueueRef
    parent: queue_refs.QueueTarget | None  # None: a reference that names nothing


def _told(refs: Iterable[envelopes.NamespaceQueueRef], why: str) -> list[envelopes.Outbound]:
    payload = nq_signals.HierarchyChanged(why=why)
    return [
        envelopes.Signal(ref, nq_signals.SIGNAL_HIERARCHY_CHANGED, payload)
        for ref in sorted(set(refs), key=lambda r: r.workflow_id)
    ]


class NamespaceQueues:
    """NamespaceQueues by uid, where each hangs, and the cluster Queues' specs last seen.

    `appeared` is told when a NamespaceQueue becomes live (what it returns, its PodGroups
    already seen, goes after its first signal), `left` when it is gone."""

    def __init__(
        self,
        appeared: Callable[[envelopes.NamespaceQueueRef], list[envelopes.Outbound]],
        left: Callable[[envelopes.NamespaceQueueRef], None],
        deleted_capacity: int = index.DELETED_REMEMBERED,
    ) -> None:
        self._owners = index.Owners(RULES, deleted_capacity)
        self._placed: dict[str, _Placed] = {}  # by uid
        self._queues: dict[str, QueueMarks] = {}  # cluster Queue name → marks
        self._appeared = appeared
        self._left = left

    # --- NamespaceQueues ------------------------------------------------------------------

    def event(
        self, type_: envelopes.WatchType, obj: Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        uid, ref = translate.uid(obj), ref_of(obj)
        if type_ == "DELETED":
            before = self._placed.pop(uid, None)
            out = self._owners.event(type_, obj, force, relisted)
            if before is None:
                return out  # told already (its namespace went) or never seen
            self._left(before.ref)
            return out + self._neighbours(before, None, f"NamespaceQueue {ref.key} deleted")
        if self._owners.refused(uid, ref):
            return []
        before = self._placed.get(uid)
        placed = _Placed(ref, parent_of(obj))
        self._placed[uid] = placed
        seen, out = self._owners.observe(uid, ref, obj, force)
        if before is None:
            out += self._appeared(ref)
        if not relisted and (seen is None or seen.last != fingerprint(obj)):
            why = f"NamespaceQueue {ref.key} {'added' if seen is None else 'changed'}"
            out += self._neighbours(before, placed, why)
        return out

    def vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        for uid in sorted(self._placed.keys() - listed):
            self._left(self._placed.pop(uid).ref)
        return self._owners.vanished(listed)

    def namespace_gone(self, namespace: str) -> list[envelopes.Outbound]:
        for uid in sorted(u for u, p in self._placed.items() if p.ref.namespace == namespace):
            self._left(self._placed.pop(uid).ref)
        return self._owners.namespace_gone(namespace)

    # --- cluster Queues -------------------------------------------------------------------

    def queue(
        self, type_: envelopes.WatchType, obj: Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        name = str(translate.metadata(obj).get("name", ""))
        before = self._queues.get(name)
        after = None if type_ == "DELETED" else _queue_marks(obj)
        if after is None:
            self._queues.pop(name, None)
        else:
            self._queues[name] = after
        if before == after or not self._placed:
            return []
        parents = {m[1] for m in (before, after) if m is not None}
        attached = self._attached(name)
        told = [*attached, *self._below(attached)]
        for parent in sorted(parents):
            told += self._attached(parent)
        return _told(told, f"Queue {name} {'deleted' if after is None else 'changed'}")

    def queues_relisted(self, objects: Sequence[Obj]) -> list[envelopes.Outbound]:
        listed = {str(translate.metadata(o).get("name", "")) for o in objects}
        out: list[envelopes.Outbound] = []
        for name in sorted(self._queues.keys() - listed):
            out += self.queue("DELETED", {"metadata": {"name": name}}, True, True)
        for obj in objects:
            out += self.queue("ADDED", obj, True, True)
        return out

    # --- who hangs where --------------------------------------------------------------------

    def _under(self, parent: queue_refs.QueueTarget) -> list[envelopes.NamespaceQueueRef]:
        """The live NamespaceQueues whose parent is `parent`."""
        return [p.ref for p in self._placed.values() if p.parent == parent]

    def _attached(self, queue: str) -> list[envelopes.NamespaceQueueRef]:
        return self._under(queue_refs.cluster(queue)) if queue != _ROOT.name else []

    def _below(
        self, tops: Iterable[envelopes.NamespaceQueueRef]
    ) -> list[envelopes.NamespaceQueueRef]:
        """Every descendant of `tops`, each once (a cycle ends where it closes)."""
        found: dict[envelopes.NamespaceQueueRef, None] = {}
        todo = list(tops)
        while todo:
            ref = todo.pop()
            target = queue_refs.QueueTarget(queue_refs.Scope.NAMESPACE, ref.name, ref.namespace)
            for child in self._under(target):
                if child not in found:
                    found[child] = None
                    todo.append(child)
        return list(found)

    def _neighbours(
        self, before: _Placed | None, after: _Placed | None, why: str
    ) -> list[envelopes.Outbound]:
        placed = after or before
        if placed is None:
            return []
        me = placed.ref
        told = self._below([me])
        for where in (before, after):
            if where is not None and where.parent is not None:
                told += [r for r in self._under(where.parent) if self._shares(where.parent, r, me)]
        return _told((r for r in told if r != me), why)

    def _shares(
        self,
        parent: queue_refs.QueueTarget,
        sibling: envelopes.NamespaceQueueRef,
        me: envelopes.NamespaceQueueRef,
    ) -> bool:
        """Whether a sibling's conditions may depend on this one: always in its namespace (the
        sums, one subtree per namespace under a cluster Queue); across namespaces only under a
        cluster Queue that sets a guarantee or deserved to share out (every tenant's queue
        hangs under `default`: they need not all read again when one is added)."""
        if parent.namespaced or sibling.namespace == me.namespace:
            return True
        marks = self._queues.get(parent.name)
        spec = marks[0] if marks is not None else None
        return not isinstance(spec, dict) or bool(spec.get("guarantee") or spec.get("deserved"))

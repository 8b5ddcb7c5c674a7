"""Decide what QueueWorkflows hear for each Queue and PodGroup event, given what was seen.

The queue side of the router (`router.Router` hands it Queue events and every PodGroup event).
A Queue is an owner in the shape of `index`, and reproduces the event handlers of Volcano's
queue controller, turned into messages to the workflows `queue/<name>`:

- a Queue added, relisted, or changed in spec, annotations or state → `queue_observed`
  (signal-with-start), and its parent hears `child_queue_observed` when the child's state,
  closed-by-parent annotation or parent changes (a move also tells the old parent the child
  is gone);
- a Queue deleted → `queue_deleted`, and its parent hears the child is gone;
- a PodGroup added, changing phase (or queue), or deleted → a `PodGroupRef` for the queue
  named by its `spec.queue`, batched by the coalescer into `pod_groups_changed`; one naming
  `namespace/<name>` goes to that NamespaceQueue's workflow (`models.queue_refs`), one whose
  reference names no queue to none.

Refs are sent only to queues that are live (listed or added, not deleted); when a queue
appears, every PodGroup already known in it is sent after its `queue_observed`, as Volcano's
sync on queue add counts its indexed PodGroups. So the order of the Queue and PodGroup watches
does not matter: a PodGroup seen before its queue is not signalled into a workflow that does
not exist yet, and is not lost either.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, field

from forwarder.routing import envelopes, index, translate
from forwarder.routing import queue_translate as qt
from models.dispatch import DispatchSettings
from models.signals import queue as queue_signals


@dataclass(frozen=True)
class _Marks:
    """A Queue's fingerprint, compared to decide on `queue_observed`, and what its parent was
    told last (`child`, compared on its own to decide on `child_queue_observed`)."""

    queue: qt.QueueFingerprint
    child: qt.ChildFingerprint = field(compare=False)

    @property
    def parent(self) -> str:
        """The parent told about this queue last; "" for root, which has none."""
        return self.child[0]


def _marks(obj: envelopes.Obj) -> _Marks:
    return _Marks(qt.queue_fingerprint(obj), qt.child_fingerprint(obj))


QUEUES = index.OwnerRules(
    ref=qt.queue_ref,
    fingerprint=_marks,
    observed=qt.queue_observed,
    observed_signal=queue_signals.SIGNAL_QUEUE_OBSERVED,
    deleted=lambda uid: queue_signals.QueueDeleted(uid=uid),
    deleted_signal=queue_signals.SIGNAL_QUEUE_DELETED,
)


@dataclass(frozen=True)
class _GroupSeen:
    queue: str  # the canonical id of the queue it is counted in
    ref: queue_signals.PodGroupRef


def _child(parent: str, payload: queue_signals.ChildQueueObserved, start: bool) -> envelopes.Signal:
    target = envelopes.QueueRef(parent)
    return envelopes.Signal(target, queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED, payload, start=start)


class QueueRouter:
    """Queue and PodGroup events → messages to QueueWorkflows."""

    def __init__(self, deleted_capacity: int = index.DELETED_REMEMBERED) -> None:
        self._queues = index.Owners(QUEUES, deleted_capacity)
        self._live: dict[str, str] = {}  # Queue name → uid of the queue holding it now
        self._groups: dict[str, _GroupSeen] = {}  # by PodGroup uid
        # Canonical queue id (a Queue's name, a NamespaceQueue's <ns>/<name>) → PodGroup uids,
        # ordered.
        self._members: dict[str, dict[str, None]] = {}
        self._namespaced: dict[str, envelopes.NamespaceQueueRef] = {}  # live, by canonical id
        # The live queues that name worker clusters (`extendClusters`), by name: their jobs go
        # to DispatchWorkflows. Empty on a cluster without any, which then pays nothing more.
        self._dispatching: dict[str, DispatchSettings] = {}

    def queue_deleted(self, uid: str) -> bool:
        """Was this Queue uid seen deleted (within the remembered window)?"""
        return self._queues.deleted(uid)

    def dispatching(self, name: str) -> DispatchSettings | None:
        """The live queue's dispatch settings; None: its jobs run here (or it is not live)."""
        return self._dispatching.get(name) if self._dispatching else None

    def _index(self, name: str, obj: envelopes.Obj) -> None:
        settings = qt.dispatch_settings(obj)
        if settings is not None:
            self._dispatching[name] = settings
        else:
            self._dispatching.pop(name, None)

    # --- Queues ---------------------------------------------------------------------------

    def queue(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        uid, ref = translate.uid(obj), qt.queue_ref(obj)
        if type_ == "DELETED":
            seen = self._queues.forget(uid)
            up = qt.parent(obj)
            parents = {up.name} if up is not None else set()
            if seen is not None and seen.last.parent:
                parents.add(seen.last.parent)
            return self._gone(uid, ref, parents)
        if self._queues.refused(uid, ref):
            return []
        appeared = self._live.get(ref.name) != uid
        self._live[ref.name] = uid
        self._index(ref.name, obj)
        return self._observed(uid, obj, force, appeared)

    def queues_relisted(self, objects: Sequence[envelopes.Obj]) -> list[envelopes.Outbound]:
        """Deletions for queues that vanished unseen, then every listed queue as if added.

        All listed names are made live before any is handled, so a child listed before its
        parent still starts the parent's workflow with its `child_queue_observed`.
        """
        listed = {translate.uid(o) for o in objects}
        out: list[envelopes.Outbound] = []
        for uid, seen in self._queues.forget_unlisted(listed):
            out += self._gone(uid, seen.ref, {seen.last.parent} - {""})
        fresh = [o for o in objects if not self._queues.refused(translate.uid(o), qt.queue_ref(o))]
        appeared: dict[str, bool] = {}
        for obj in fresh:
            uid, name = translate.uid(obj), qt.queue_ref(obj).name
            appeared[uid] = self._live.get(name) != uid
            self._live[name] = uid
            self._index(name, obj)
        for obj in fresh:
            uid = translate.uid(obj)
            out += self._observed(uid, obj, True, appeared[uid])
        return out

    def _observed(
        self, uid: str, obj: envelopes.Obj, force: bool, appeared: bool
    ) -> list[envelopes.Outbound]:
        ref, up, child = qt.queue_ref(obj), qt.parent(obj), qt.child_fingerprint(obj)
        seen, out = self._queues.observe(uid, ref, obj, force)
        if up is not None and seen is not None and seen.last.parent not in ("", up.name):
            out.append(_child(seen.last.parent, qt.child_deleted(ref.name), start=False))
        if up is not None and (force or seen is None or seen.last.child != child):
            # Only a live parent is started: a missing one has no queue to run for.
            out.append(_child(up.name, qt.child_observed(obj), start=up.name in self._live))
        if appeared:
            out += [envelopes.GroupRefUpdate(ref, self._groups[g].ref) for g in self._in(ref.name)]
        return out

    def _gone(
        self, uid: str, ref: envelopes.QueueRef, parents: Set[str]
    ) -> list[envelopes.Outbound]:
        if self._live.get(ref.name) == uid:
            del self._live[ref.name]
            self._dispatching.pop(ref.name, None)
        out: list[envelopes.Outbound] = [self._queues.gone(uid, ref)]
        out += [_child(p, qt.child_deleted(ref.name), start=False) for p in sorted(parents)]
        return out

    # --- PodGroups ------------------------------------------------------------------------

    def pod_group(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool
    ) -> list[envelopes.Outbound]:
        """Volcano's handlers react to add, phase change and delete. A change of `spec.queue`
        (which Volcano ignores) moves the ref: the old queue hears it deleted."""
        uid, queue = translate.uid(obj), qt.pod_group_queue(obj)
        seen = self._forget(uid)
        if type_ == "DELETED":
            return self._ref(queue, qt.pod_group_ref(obj, deleted=True)) if queue else []
        out: list[envelopes.Outbound] = []
        moved = seen is not None and seen.queue != queue
        if seen is not None and moved:
            out += self._ref(seen.queue, seen.ref.model_copy(update={"deleted": True}))
        if queue is None:
            return out  # it names no queue: counted in none
        ref = qt.pod_group_ref(obj)
        self._groups[uid] = _GroupSeen(queue, ref)
        self._members.setdefault(queue, {})[uid] = None
        if not moved and not force and seen is not None and seen.ref.phase == ref.phase:
            return []
        return out + self._ref(queue, ref)

    def pod_groups_listed(self, objects: Sequence[envelopes.Obj]) -> list[envelopes.Outbound]:
        """After a full list of PodGroups, every live queue hears which of its PodGroups exist:
        one deleted while no forwarder led is in no list and no watch."""
        keys: dict[str, list[str]] = {name: [] for name in sorted(self._live)}
        keys.update({key: [] for key in sorted(self._namespaced)})
        for obj in objects:
            queue = qt.pod_group_queue(obj)
            if queue in keys:
                keys[queue].append(qt.pod_group_ref(obj).key)
        return [
            envelopes.Signal(
                self._target(queue),
                queue_signals.SIGNAL_POD_GROUPS_LISTED,
                queue_signals.PodGroupsListed(keys=listed),
            )
            for queue, listed in keys.items()
        ]

    # --- NamespaceQueues (their PodGroups; `namespace_queues` routes the rest) ---------------

    def namespace_queue_live(self, ref: envelopes.NamespaceQueueRef) -> list[envelopes.Outbound]:
        """A NamespaceQueue seen: its PodGroups go to its workflow from now on, and those
        already seen go now (after its first signal, as a Queue's do)."""
        if ref.key in self._namespaced:
            return []
        self._namespaced[ref.key] = ref
        return [envelopes.GroupRefUpdate(ref, self._groups[g].ref) for g in self._in(ref.key)]

    def namespace_queue_gone(self, ref: envelopes.NamespaceQueueRef) -> None:
        self._namespaced.pop(ref.key, None)

    def _target(self, queue: str) -> envelopes.QueueRef | envelopes.NamespaceQueueRef:
        """A live queue's ref, by canonical id."""
        return self._namespaced.get(queue) or envelopes.QueueRef(queue)

    def pod_groups_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        """Deleted refs for PodGroups that went away while the watch was down."""
        out: list[envelopes.Outbound] = []
        for uid in sorted(self._groups.keys() - listed):
            seen = self._groups[uid]
            self._forget(uid)
            out += self._ref(seen.queue, seen.ref.model_copy(update={"deleted": True}))
        return out

    def _forget(self, uid: str) -> _GroupSeen | None:
        seen = self._groups.pop(uid, None)
        if seen is not None:
            members = self._members[seen.queue]
            del members[uid]
            if not members:
                del self._members[seen.queue]
        return seen

    def _in(self, queue: str) -> list[str]:
        return list(self._members.get(queue, {}))

    def _ref(self, queue: str, ref: queue_signals.PodGroupRef) -> list[envelopes.Outbound]:
        """Nothing for a queue that is not live: its workflow would not be there to hear it,
        and the ref is sent with the others if the queue appears later."""
        if queue not in self._live and queue not in self._namespaced:
            return []
        return [envelopes.GroupRefUpdate(self._target(queue), ref)]

"""What the router remembers per object uid, in the two shapes every kind of object takes.

- An owner has a workflow of its own (a Volcano Job, a batch/v1 Job, a Queue): its first
  sight, or a change of its fingerprint, is an `observed` signal-with-start; its deletion is a
  `deleted` signal, and its uid is remembered so a late event never starts a new run.
- A member is reported to its owner's workflow (a pod, a Job's PodGroup): a new snapshot is
  sent unless it is the same as the last one, and a deletion sends the snapshot marked deleted.

After a 410 Gone the watch restarts from a full list, and what was deleted in the gap produces
no DELETED event: comparing the list with the index yields those, so every workflow still hears
of them. `OwnerRules` and `MemberRules` carry what differs between kinds: how an object is
read, what makes an update news, and the signals sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from forwarder.routing import bounded, envelopes, logs, translate
from models.signals import common as common_signals

logger = logging.getLogger(__name__)

DELETED_REMEMBERED = 10_000  # deleted owner uids refused, per kind

R = TypeVar(
    "R",
    envelopes.JobRef,
    envelopes.BatchJobRef,
    envelopes.QueueRef,
    envelopes.FlowRef,
    envelopes.CronJobRef,
    envelopes.DispatchRef,
    envelopes.NamespaceQueueRef,
)
F = TypeVar("F")  # an owner's fingerprint
S = TypeVar("S", bound=BaseModel)  # a member's snapshot; it has a `deleted` flag


@dataclass(frozen=True)
class Seen(Generic[R, F]):
    """Whose it is, and what was seen of it last (an owner's fingerprint, a member's snapshot)."""

    ref: R
    last: F


def always(obj: envelopes.Obj) -> bool:
    return True


@dataclass(frozen=True)
class OwnerRules(Generic[R, F]):
    """How one kind of owner is read, and the signals its workflow hears."""

    ref: Callable[[envelopes.Obj], R]
    fingerprint: Callable[[envelopes.Obj], F]  # what an update must change to be news
    observed: Callable[[envelopes.Obj], common_signals.Payload]
    observed_signal: str
    deleted: Callable[[str], common_signals.Payload]  # from the uid: a vanished owner has no object
    deleted_signal: str
    ours: Callable[[envelopes.Obj], bool] = always  # False: another controller's, ignored


@dataclass(frozen=True)
class MemberRules(Generic[R, S]):
    """How one kind of member is read, and the message that carries it to its owner."""

    owner: Callable[[envelopes.Obj], R | None]  # None: not a member of anything ours
    snapshot: Callable[[envelopes.Obj, bool], S]  # (object, deleted)
    message: Callable[[R, S], envelopes.Outbound]
    same: Callable[[S, S], bool]  # True: not worth a message
    forget_unowned: bool = False  # True: a member whose owner is unknown is forgotten
    # True: a first sight its owner already knows, having just made it (sent only on a relist).
    echo: Callable[[S], bool] = lambda snapshot: False


def same_but_version(a: BaseModel, b: BaseModel) -> bool:
    """Equal in everything the workflow reads: a bare resourceVersion bump is not news."""
    return a.model_copy(update={"resource_version": ""}) == b.model_copy(
        update={"resource_version": ""}
    )


class Owners(Generic[R, F]):
    """Owners of one kind by uid, and the bounded set of those seen deleted."""

    def __init__(self, rules: OwnerRules[R, F], deleted_capacity: int) -> None:
        self._rules: OwnerRules[R, F] = rules
        self._seen: dict[str, Seen[R, F]] = {}
        self._deleted = bounded.BoundedSet(deleted_capacity)

    def deleted(self, uid: str) -> bool:
        """Was this uid seen deleted (within the remembered window)?"""
        return uid in self._deleted

    def refs(self) -> list[R]:
        """Every live owner, in uid order."""
        return [self._seen[uid].ref for uid in sorted(self._seen)]

    def ref(self, uid: str) -> R | None:
        """The live owner with this uid; None: not seen, or deleted since."""
        seen = self._seen.get(uid)
        return seen.ref if seen is not None else None

    def event(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        """One watch event; `force`: send even an unchanged owner (it was added or relisted)."""
        if not self._rules.ours(obj):
            return []
        uid, ref = translate.uid(obj), self._rules.ref(obj)
        if type_ == "DELETED":
            if self.forget(uid) is None and self.deleted(uid):
                return []  # its workflow was told already (its namespace is being deleted)
            return [self.gone(uid, ref)]
        if self.refused(uid, ref):
            return []
        return self.observe(uid, ref, obj, force)[1]

    def vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        """Deletions for the owners missing from a full list."""
        return [self.gone(uid, seen.ref) for uid, seen in self.forget_unlisted(listed)]

    def forget(self, uid: str) -> Seen[R, F] | None:
        return self._seen.pop(uid, None)

    def forget_unlisted(self, listed: Set[str]) -> list[tuple[str, Seen[R, F]]]:
        """Forget every owner missing from a full list; returned in uid order."""
        return [(uid, self._seen.pop(uid)) for uid in sorted(self._seen.keys() - listed)]

    def namespace_gone(self, namespace: str) -> list[envelopes.Outbound]:
        """Deletions for every live owner in a namespace being deleted, at once: all its objects
        go, so their workflows need not wait for each one's own DELETED event (which then
        sends nothing). Cluster-scoped owners have no namespace and are never in one."""
        gone = sorted(
            uid
            for uid, seen in self._seen.items()
            if getattr(seen.ref, "namespace", None) == namespace
        )
        return [self.gone(uid, self._seen.pop(uid).ref) for uid in gone]

    def refused(self, uid: str, ref: R) -> bool:
        """A late event of a deleted owner must never signal-with-start a new run."""
        if uid not in self._deleted:
            return False
        logs.for_target(logger, ref).debug("late event dropped uid=%s", uid)
        return True

    def gone(self, uid: str, ref: R) -> envelopes.Signal:
        """Remember the uid as deleted; the signal telling its workflow."""
        self._deleted.add(uid)
        return envelopes.Signal(ref, self._rules.deleted_signal, self._rules.deleted(uid))

    def observe(
        self, uid: str, ref: R, obj: envelopes.Obj, force: bool
    ) -> tuple[Seen[R, F] | None, list[envelopes.Outbound]]:
        """Remember the owner; what was seen of it before, and the signal-with-start if news."""
        fingerprint = self._rules.fingerprint(obj)
        seen = self._seen.get(uid)
        self._seen[uid] = Seen(ref, fingerprint)
        if not force and seen is not None and seen.last == fingerprint:
            return seen, []
        payload = self._rules.observed(obj)
        return seen, [envelopes.Signal(ref, self._rules.observed_signal, payload, start=True)]


class Members(Generic[R, S]):
    """Members of one kind by uid, with their owner and last snapshot."""

    def __init__(self, rules: MemberRules[R, S]) -> None:
        self._rules: MemberRules[R, S] = rules
        self._seen: dict[str, Seen[R, S]] = {}

    def event(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        """One watch event; `force`: send even an unchanged snapshot (added or relisted);
        `relisted`: from a full list, where even an echo is sent (what changed unseen)."""
        rules = self._rules
        uid, owner = translate.uid(obj), rules.owner(obj)
        if owner is None:
            if rules.forget_unowned:
                self._seen.pop(uid, None)
            return []
        if type_ == "DELETED":
            self._seen.pop(uid, None)
            return [rules.message(owner, rules.snapshot(obj, True))]
        snapshot = rules.snapshot(obj, False)
        seen = self._seen.get(uid)
        self._seen[uid] = Seen(owner, snapshot)
        if not force and seen is not None and rules.same(seen.last, snapshot):
            return []
        if not relisted and seen is None and rules.echo(snapshot):
            return []
        return [rules.message(owner, snapshot)]

    def vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        """The last snapshot, marked deleted, of every member missing from a full list."""
        out: list[envelopes.Outbound] = []
        for uid in sorted(self._seen.keys() - listed):
            seen = self._seen.pop(uid)
            gone = seen.last.model_copy(update={"deleted": True})
            out.append(self._rules.message(seen.ref, gone))
        return out

"""Admission of NamespaceQueues, and of what names or holds one: the webhook's part of Volcano's
NamespaceQueue design (docs/design/namespace-queue.md, "Admission Webhook").

- NamespaceQueue CREATE and UPDATE: `spec.parent` follows the one grammar
  (`models.queue_refs.parent`); when the parent is new or changed and is a cluster Queue, that
  queue exists, its `allowedNamespaces` authorise the namespace, and no other NamespaceQueue of
  the namespace already hangs directly under it (one subtree per namespace per cluster Queue);
  and for each resource two of its lists name, guarantee ≤ deserved ≤ capability.
- NamespaceQueue DELETE: no other NamespaceQueue of the namespace names it as parent, and no
  PodGroup of the namespace that is not Completed names it.
- Queue UPDATE of `spec.allowedNamespaces`, Queue DELETE: no NamespaceQueue attached to the
  queue would be left unauthorised, or under nothing.
- Job and PodGroup CREATE naming `namespace/<name>`: the NamespaceQueue exists in the
  workload's namespace, is Open and not found unauthorised (and, for a Job, is a leaf), as the
  cluster Queue's checks in `admission.rules` say for `<name>`.

Best effort, as the design says: the NamespaceQueue controller re-checks authorisation and the
hierarchy continuously, and the scheduler makes the final call. What a local parent is (its
existence, a cycle, its limits) is the controller's to report, so a tenant may create a
hierarchy in any order. A refusal is confirmed on a fresh read first (the watch may lag).
Pure: reads go through `reads.Lookup`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from admission import queueresources, reads
from admission.reads import NamespaceQueueInfo
from models import queue_refs
from models.scheduling import PodGroupPhase, QueueState

OPEN: Final = QueueState.OPEN.value
SHOWN: Final = 10  # names listed in a message before "and N more"


def problems(
    namespace: str,
    name: str,
    obj: Mapping[str, object],
    old: Mapping[str, object] | None,
    lookup: reads.Lookup,
) -> list[str]:
    """A NamespaceQueue's CREATE (`old` None) or UPDATE."""
    new = reads.namespace_queue_info(obj)
    found = queueresources.stated_problems(new.shares)
    try:
        target = queue_refs.parent(namespace, new.parent)
    except queue_refs.BadReference as e:
        return [f"spec.parent: {e}", *found]
    if target.namespaced and target.name == name:
        return ["spec.parent: a NamespaceQueue cannot use itself as parent", *found]
    moved = old is None or _effective(reads.text(old, "spec", "parent")) != target.reference
    if moved and not target.namespaced:
        found = [*_cluster_parent_problems(namespace, name, target.name, lookup), *found]
    return found


def _effective(parent: str) -> str:
    return parent or queue_refs.DEFAULT_PARENT


def _cluster_parent_problems(
    namespace: str, name: str, queue_name: str, lookup: reads.Lookup
) -> list[str]:
    queue = lookup.get_queue(queue_name)
    if queue is not None and not queue_refs.authorizes(queue.allowed_namespaces, namespace):
        # Confirmed on a fresh read: the watch may not hold the namespace just allowed.
        queue = next((q for q in lookup.list_queues(fresh=True) if q.name == queue_name), None)
    if queue is None:
        return [f'spec.parent: queue "{queue_name}" does not exist']
    if not queue_refs.authorizes(queue.allowed_namespaces, namespace):
        allowed = list(queue.allowed_namespaces)
        return [
            f'spec.parent: queue "{queue_name}" does not allow NamespaceQueues of namespace '
            f'"{namespace}" (its spec.allowedNamespaces: {allowed})'
        ]

    def attached(queues: Sequence[NamespaceQueueInfo]) -> list[str]:
        return sorted(
            q.name for q in queues if q.name != name and _hangs_under(q, queue_name) is True
        )

    others = _confirmed(attached, lambda fresh: lookup.list_namespace_queues(namespace, fresh))
    if not others:
        return []
    return [
        f'spec.parent: NamespaceQueue "{namespace}/{others[0]}" already attaches namespace '
        f'"{namespace}" to queue "{queue_name}", and a namespace has one NamespaceQueue '
        f"directly under a cluster Queue: hang this one below it (spec.parent: {others[0]})"
    ]


def _hangs_under(queue: NamespaceQueueInfo, cluster_queue: str) -> bool | None:
    """Whether the NamespaceQueue's parent is the cluster Queue; None: a malformed parent."""
    try:
        target = queue_refs.parent(queue.namespace, queue.parent)
    except queue_refs.BadReference:
        return None
    return target == queue_refs.cluster(cluster_queue)


def deletion_problems(namespace: str, name: str, lookup: reads.Lookup) -> list[str]:
    """Volcano's design: a NamespaceQueue stays while child queues name it or workloads that
    have not completed use it (the controller re-checks after admission)."""

    def children(queues: Sequence[NamespaceQueueInfo]) -> list[str]:
        local = queue_refs.QueueTarget(queue_refs.Scope.NAMESPACE, name, namespace)
        return sorted(q.name for q in queues if _parent_target(q) == local)

    found = []
    kids = _confirmed(children, lambda fresh: lookup.list_namespace_queues(namespace, fresh))
    if kids:
        found.append(
            f'metadata.name: NamespaceQueue "{namespace}/{name}" can not be deleted because it '
            f"has {len(kids)} child NamespaceQueues: {_names(kids)}"
        )
    me = queue_refs.namespace_queue_id(namespace, name)
    users = sorted(
        pg.name
        for pg in lookup.list_podgroups(namespace)
        if pg.phase != PodGroupPhase.COMPLETED and queue_refs.workload_id(namespace, pg.queue) == me
    )
    if users:
        found.append(
            f'metadata.name: NamespaceQueue "{namespace}/{name}" can not be deleted because '
            f"{len(users)} PodGroups that have not completed use it: {_names(users)}"
        )
    return found


def _parent_target(queue: NamespaceQueueInfo) -> queue_refs.QueueTarget | None:
    try:
        return queue_refs.parent(queue.namespace, queue.parent)
    except queue_refs.BadReference:
        return None


def attached_problems(
    queue_name: str, before: Sequence[str], after: Sequence[str] | None, lookup: reads.Lookup
) -> list[str]:
    """The NamespaceQueues directly under the cluster Queue that `before` authorised and
    `after` would not (None: the queue is being deleted, and none may stay under it)."""

    def lost(queue: NamespaceQueueInfo) -> bool:
        if after is None:
            return True
        return queue_refs.authorizes(before, queue.namespace) and not queue_refs.authorizes(
            after, queue.namespace
        )

    def stranded(queues: Sequence[NamespaceQueueInfo]) -> list[str]:
        return sorted(
            queue_refs.namespace_queue_id(q.namespace, q.name)
            for q in queues
            if _hangs_under(q, queue_name) and lost(q)
        )

    left = _confirmed(stranded, lambda fresh: lookup.list_namespace_queues(None, fresh))
    if not left:
        return []
    if after is None:
        return [
            f'metadata.name: queue "{queue_name}" can not be deleted because {len(left)} '
            f"NamespaceQueues hang under it: {_names(left)}"
        ]
    return [
        f"spec.allowedNamespaces: {list(after)} would leave {len(left)} NamespaceQueues "
        f'under queue "{queue_name}" unauthorised: {_names(left)}; give each another parent '
        "or delete it first"
    ]


def workload_problems(
    target: queue_refs.QueueTarget, what: str, lookup: reads.Lookup, leaf: bool
) -> list[str]:
    """A Job's or PodGroup's `namespace/<name>`: the NamespaceQueue exists in the workload's
    namespace, is Open (no state yet counts as Open) and not found unauthorised; `leaf`: it
    has no child NamespaceQueues (Volcano's job webhook takes jobs into leaf queues only)."""
    queue = lookup.get_namespace_queue(target.namespace, target.name)
    if queue is None:
        return [
            f'spec.queue: NamespaceQueue "{target.name}" does not exist in namespace '
            f'"{target.namespace}"'
        ]
    found = []
    state = queue.state or OPEN
    if state != OPEN:
        found.append(
            f"spec.queue: can only submit {what} to queue with state {OPEN}, "
            f'NamespaceQueue "{target.id}" status is "{state}"'
        )
    if queue.unauthorized is not None:
        reason = queue.unauthorized
        found.append(f'spec.queue: NamespaceQueue "{target.id}" is not authorized: {reason}')
    if leaf:

        def children(queues: Sequence[NamespaceQueueInfo]) -> list[str]:
            return sorted(q.name for q in queues if _parent_target(q) == target)

        kids = _confirmed(
            children, lambda fresh: lookup.list_namespace_queues(target.namespace, fresh)
        )
        if kids:
            found.append(
                f"spec.queue: can only submit {what} to leaf queue, NamespaceQueue "
                f'"{target.id}" has {len(kids)} child queues: {_names(kids)}'
            )
    return found


def _confirmed(
    check: Callable[[Sequence[NamespaceQueueInfo]], list[str]],
    listed: Callable[[bool], Sequence[NamespaceQueueInfo]],
) -> list[str]:
    """What `check` finds in the cached list, confirmed on a fresh one before it refuses."""
    found = check(listed(False))
    return check(listed(True)) if found else found


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f'"{n}"' for n in names[:SHOWN])
    more = len(names) - SHOWN
    return f"{shown} and {more} more" if more > 0 else shown

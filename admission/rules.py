"""Admission decisions for Jobs, PodGroups, Queues and NamespaceQueues that the CRDs' schemas
cannot make: those that depend on the queues in the cluster, and a Job's pod templates.

Pure: `review` reads an AdmissionReview `request` and asks a `Lookup` for queues; it never
imports a Kubernetes client or HTTP code, so every rule is tested with an in-memory lookup.
The HTTP shell is `admission.server`.

Rules (the queue checks of Volcano's validating webhooks for Jobs, PodGroups and Queues):

- Job CREATE: every task's pod template passes `admission.templates` and its spec
  `admission.jobspec` (dependsOn a DAG, known plugins); `spec.queue` (empty = `default`)
  exists, is Open (no `status.state` = Open, as the queue controller has not reconciled it
  yet), is not `root` and is a leaf.
- Job UPDATE: only what `admission.jobspec` lets change; the queue is not looked at, so a
  running job is never stopped by its queue being closed later.
- PodGroup CREATE: its queue exists and is Open (a `subGroupPolicy` entry's tier limits are the
  CRD's CEL rule).
- Job and PodGroup CREATE: an sla waiting time annotation is a duration above zero (Volcano's
  scheduler would drop it silently; `admission.annotation_values`).
- Job CREATE: its task-topology annotations name its own tasks (`admission.tasktopology`).
- Queue CREATE and UPDATE: guarantee ≤ deserved ≤ capability (`admission.queueresources`);
  when the parent is new or changed, a parent other than root exists, the parent chain reaches
  root without passing through the queue itself, and neither the queue nor its descendants end
  up deeper than `max_depth` below root; when the parent or a resource list changed, the
  hierarchy's resource rules.
- Queue CREATE and UPDATE: its hierarchical drf annotations (`models.hierarchy`): path and
  weights of one length, weights above zero, no other queue's path below its own.
- Queue CREATE and UPDATE: its dispatch timings (`caldera.dev/lost-after`,
  `caldera.dev/stale-copy-deadline`) are seconds or a Go duration above zero, lost-after at
  least 10 s, and `caldera.dev/on-drain` is Stay or Move (`admission.annotation_values`).
- Queue DELETE: the queue has no children.
- NamespaceQueues, what names them (`namespace/<name>` in a Job or PodGroup) and what they hang
  under (a Queue's `allowedNamespaces`, its deletion): `admission.namespacequeues`.
- JobFlow CREATE and UPDATE: its entries form a DAG (`admission.jobflows`).
- CronJob CREATE and UPDATE: schedule, timeZone, name, and the Job its template makes
  (`admission.cronjobs`).

Several problems with one object are reported together, joined by "; ", as Volcano does.
Every message names the object and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from admission import (
    annotation_values,
    cronjobs,
    jobflows,
    jobspec,
    namespacequeues,
    queueresources,
    reads,
    tasktopology,
    templates,
)
from models import cronjob, jobflow, namespacequeue, queue_refs, scheduling, vcjob
from models import hierarchy as hierarchy_annotations

JOBS: Final = (vcjob.GROUP, "jobs")
PODGROUPS: Final = (scheduling.GROUP, "podgroups")
QUEUES: Final = (scheduling.GROUP, "queues")
NAMESPACE_QUEUES: Final = (scheduling.GROUP, namespacequeue.PLURAL)
JOBFLOWS: Final = (jobflow.GROUP, "jobflows")
CRONJOBS: Final = (vcjob.GROUP, cronjob.PLURAL)
DEFAULT_QUEUE: Final = scheduling.DEFAULT_QUEUE
ROOT_QUEUE: Final = scheduling.ROOT_QUEUE
OPEN: Final = scheduling.QueueState.OPEN.value
DEFAULT_MAX_DEPTH: Final = 5  # Volcano's --max-queue-depth


# The read model lives in `admission.reads`; these names are how callers have always known it.
QueueInfo = reads.QueueInfo
Lookup = reads.Lookup


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    message: str = ""  # empty when allowed


ALLOW: Final = Verdict(allowed=True)


def queue_info(obj: Mapping[str, object]) -> QueueInfo:
    """A stored Queue object reduced to name, parent and state (absent fields stay None)."""
    parent = _text(obj, "spec", "parent")
    state = _text(obj, "status", "state")
    return QueueInfo(
        name=_text(obj, "metadata", "name"),
        parent=parent or None,
        state=state or None,
        shares=queueresources.shares(_mapping(obj, "spec")),
        hierarchy=_hierarchy(obj)[0],
        allowed_namespaces=reads.allowed_namespaces(_mapping(obj, "spec")),
    )


def _hierarchy(obj: Mapping[str, object]) -> tuple[str, str]:
    """The queue's hierarchical drf annotations, path and weights, as Volcano stores them."""
    annotations = _mapping(obj, "metadata", "annotations")
    return hierarchy_annotations.normalized(
        _text(annotations, hierarchy_annotations.HIERARCHY),
        _text(annotations, hierarchy_annotations.WEIGHTS),
    )


def _hierarchy_problems(name: str, obj: Mapping[str, object], lookup: Lookup) -> list[str]:
    """Volcano's queue webhook on the drf hierarchy annotations: path and weights of one
    length, weights numbers above zero, and no other queue's path below this one's."""
    path, weights = _hierarchy(obj)
    problems = hierarchy_annotations.problems(path, weights)
    if problems or not path:
        return problems

    def below(queues: Sequence[QueueInfo]) -> list[str]:
        return [
            f"metadata.annotations[{hierarchy_annotations.HIERARCHY}]: {path!r} is not allowed "
            f"to be a prefix of {q.hierarchy!r} of queue {q.name}"
            for q in queues
            if q.name != name and hierarchy_annotations.under(path, q.hierarchy)
        ][:1]

    return _confirmed(below, lookup)


def review(
    request: Mapping[str, object], lookup: Lookup, max_depth: int = DEFAULT_MAX_DEPTH
) -> Verdict:
    """Decide one AdmissionReview request; resources and operations without a rule are allowed."""
    if _text(request, "subResource"):
        return ALLOW  # status writes are the controllers' business, never the user's submission
    kind = (_text(request, "resource", "group"), _text(request, "resource", "resource"))
    operation = _text(request, "operation")
    obj = _mapping(request, "object")
    if kind == JOBS and operation == "CREATE":
        problems = [
            *templates.problems(obj),
            *jobspec.create_problems(obj),
            *_job_problems(obj, _namespace(request, obj), lookup),
            *annotation_values.sla_problems(obj),
            *tasktopology.problems(obj),
        ]
        return _deny_if(f"job {_object_name(request, obj)}", problems)
    if kind == JOBS and operation == "UPDATE":
        problems = jobspec.update_problems(_mapping(request, "oldObject"), obj)
        return _deny_if(f"job {_object_name(request, obj)}", problems)
    if kind == PODGROUPS and operation == "CREATE":
        problems = [
            *_podgroup_problems(obj, _namespace(request, obj), lookup),
            *annotation_values.sla_problems(obj),
        ]
        return _deny_if(f"podgroup {_object_name(request, obj)}", problems)
    if kind == QUEUES and operation in ("CREATE", "UPDATE"):
        old = _mapping(request, "oldObject") if operation == "UPDATE" else None
        name = _text(obj, "metadata", "name") or _text(request, "name")
        problems = [
            *_queue_problems(name, obj, old, lookup, max_depth),
            *annotation_values.dispatch_problems(obj),
        ]
        return _deny_if(f"queue {name or _text(obj, 'metadata', 'generateName')}", problems)
    if kind == NAMESPACE_QUEUES and operation in ("CREATE", "UPDATE"):
        old = _mapping(request, "oldObject") if operation == "UPDATE" else None
        name = _text(obj, "metadata", "name") or _text(request, "name")
        problems = namespacequeues.problems(_namespace(request, obj), name, obj, old, lookup)
        return _deny_if(f"namespacequeue {_object_name(request, obj)}", problems)
    if kind == NAMESPACE_QUEUES and operation == "DELETE":
        namespace, name = _text(request, "namespace"), _text(request, "name")
        problems = namespacequeues.deletion_problems(namespace, name, lookup)
        return _deny_if(f"namespacequeue {namespace}/{name}", problems)
    if kind == JOBFLOWS and operation in ("CREATE", "UPDATE"):
        return _deny_if(f"jobflow {_object_name(request, obj)}", jobflows.problems(obj))
    if kind == CRONJOBS and operation in ("CREATE", "UPDATE"):
        return _deny_if(f"cronjob {_object_name(request, obj)}", cronjobs.problems(obj))
    if kind == QUEUES and operation == "DELETE":
        name = _text(request, "name")
        problems = [
            *_deletion_problems(name, lookup),
            *namespacequeues.attached_problems(name, (), None, lookup),
        ]
        return _deny_if(f"queue {name}", problems)
    return ALLOW


def _job_problems(job: Mapping[str, object], namespace: str, lookup: Lookup) -> list[str]:
    """Volcano's job webhook: the queue exists and is Open, is not root, and is a leaf; a
    NamespaceQueue (`namespace/<name>`) likewise (`admission.namespacequeues`)."""
    try:
        target = queue_refs.workload(namespace, _text(job, "spec", "queue"))
    except queue_refs.BadReference as e:
        return [f"spec.queue: {e}"]
    if target.namespaced:
        return namespacequeues.workload_problems(target, "job", lookup, leaf=True)
    name = target.name
    queue = lookup.get_queue(name)
    if queue is None:
        return [_missing(name)]
    problems = _closed(queue, "job")
    if name == ROOT_QUEUE:
        return [*problems, f'spec.queue: can not submit job to the root queue "{ROOT_QUEUE}"']
    children = _confirmed(lambda queues: _children(name, queues), lookup)
    if children:
        listed = ", ".join(f'"{c}"' for c in children)
        problems.append(
            f'spec.queue: can only submit job to leaf queue, queue "{name}" has '
            f"{len(children)} child queues: {listed}"
        )
    return problems


def _podgroup_problems(podgroup: Mapping[str, object], namespace: str, lookup: Lookup) -> list[str]:
    """Volcano's PodGroup webhook: the queue (a NamespaceQueue likewise) exists and is Open. Its
    other check, at most one tier limit in `networkTopology` and in each `subGroupPolicy`
    entry's, is the CRD's CEL rule on every network topology
    (`models.scheduling.NetworkTopologySpec`)."""
    try:
        target = queue_refs.workload(namespace, _text(podgroup, "spec", "queue"))
    except queue_refs.BadReference as e:
        return [f"spec.queue: {e}"]
    if target.namespaced:
        return namespacequeues.workload_problems(target, "PodGroup", lookup, leaf=False)
    name = target.name
    queue = lookup.get_queue(name)
    return [_missing(name)] if queue is None else _closed(queue, "PodGroup")


def _missing(name: str) -> str:
    return f'spec.queue: queue "{name}" does not exist'


def _closed(queue: QueueInfo, what: str) -> list[str]:
    """Only an Open queue takes new work; a queue with no state yet counts as Open."""
    state = queue.state or OPEN
    if state == OPEN:
        return []
    return [
        f"spec.queue: can only submit {what} to queue with state {OPEN}, "
        f'queue "{queue.name}" status is "{state}"'
    ]


def _queue_problems(
    name: str,
    obj: Mapping[str, object],
    old: Mapping[str, object] | None,
    lookup: Lookup,
    max_depth: int,
) -> list[str]:
    """The queue's own resource rules; the parent chain when the parent is new or changed;
    the hierarchy's resource rules when the parent or any of the three lists changed."""
    parent = _text(obj, "spec", "parent")
    new = queue_info(obj)
    problems = [*_hierarchy_problems(name, obj, lookup), *queueresources.own_problems(new.shares)]
    before = queue_info(old).allowed_namespaces if old is not None else new.allowed_namespaces
    if before != new.allowed_namespaces:  # a NamespaceQueue under it must not lose its right
        problems += namespacequeues.attached_problems(name, before, new.allowed_namespaces, lookup)
    moved = old is None or _text(old, "spec", "parent") != parent
    if moved:
        problems += _parent_problems(name, parent, lookup, max_depth)
    resized = old is None or queue_info(old).shares != new.shares
    if problems or not (moved or resized):
        return problems
    me = _member(replace(new, name=name))
    return _confirmed(
        lambda queues: queueresources.hierarchy_problems(me, [_member(q) for q in queues]), lookup
    )


def _children(name: str, queues: Sequence[QueueInfo]) -> list[str]:
    return sorted(q.name for q in queues if q.parent == name)


def _confirmed(check: Callable[[Sequence[QueueInfo]], list[str]], lookup: Lookup) -> list[str]:
    """What `check` finds in the queues, confirmed on a fresh list before it refuses anything:
    the watch behind the lookup may still hold a child or sibling deleted a moment ago."""
    found = check(lookup.list_queues())
    return check(lookup.list_queues(fresh=True)) if found else found


def _member(queue: QueueInfo) -> queueresources.Member:
    return queueresources.Member(
        name=queue.name, parent=queue.parent or ROOT_QUEUE, shares=queue.shares
    )


def _deletion_problems(name: str, lookup: Lookup) -> list[str]:
    """Volcano's rule: a queue with children stays (they would hang under nothing)."""
    children = _confirmed(lambda queues: _children(name, queues), lookup)
    if not children:
        return []
    return [
        f'metadata.name: queue "{name}" can not be deleted because it has {len(children)} '
        f"child queues: {', '.join(children)}"
    ]


def _parent_problems(name: str, parent: str, lookup: Lookup, max_depth: int) -> list[str]:
    """Walk the parent chain up to root: it exists, has no cycle, and stays within max_depth."""
    if parent == "" or (parent == ROOT_QUEUE and name != ROOT_QUEUE):
        return []  # directly under root (or root itself without a parent): nothing to look up
    if parent == name:
        return ["spec.parent: queue cannot use itself as parent"]
    depth = 1  # the queue itself, one level below its parent
    seen: set[str] = set()
    current = parent
    while True:
        if current == name:
            return [
                f'spec.parent: queue "{name}" is an ancestor of "{parent}": '
                "parent cycles are not allowed"
            ]
        if current == ROOT_QUEUE:
            break
        if current in seen:
            return [
                f'spec.parent: the ancestors of queue "{parent}" form a cycle through '
                f'"{current}": parent cycles are not allowed'
            ]
        queue = lookup.get_queue(current)
        if queue is None:
            if current == parent:
                return [f'spec.parent: parent queue "{parent}" does not exist']
            return [f'spec.parent: queue "{current}", an ancestor of "{parent}", does not exist']
        seen.add(current)
        depth += 1
        if depth > max_depth:  # too deep already: nothing further up can change the answer
            return [
                f'spec.parent: queue "{name}" would be {depth} or more levels below root, '
                f"more than the maximum queue depth {max_depth}"
            ]
        current = queue.parent or ROOT_QUEUE
    deepest = depth + _height(name, lookup.list_queues())
    if deepest > max_depth:
        return [
            f'spec.parent: queue "{name}" would be {depth} levels below root and its '
            f"descendants {deepest}, more than the maximum queue depth {max_depth}"
        ]
    return []


def _height(name: str, queues: Sequence[QueueInfo]) -> int:
    """Levels of descendants below `name` (0 for a leaf); a queue moves with its subtree."""
    children: dict[str, list[str]] = {}
    for q in queues:
        children.setdefault(q.parent or ROOT_QUEUE, []).append(q.name)
    height, level, seen = 0, [name], {name}
    while True:
        level = [c for p in level for c in children.get(p, []) if c not in seen]
        if not level:
            return height
        seen.update(level)
        height += 1


def _deny_if(subject: str, problems: Sequence[str]) -> Verdict:
    if not problems:
        return ALLOW
    return Verdict(allowed=False, message=f"{subject}: {'; '.join(problems)}")


def _namespace(request: Mapping[str, object], obj: Mapping[str, object]) -> str:
    return _text(obj, "metadata", "namespace") or _text(request, "namespace")


def _object_name(request: Mapping[str, object], obj: Mapping[str, object]) -> str:
    """`namespace/name`; a generateName object has no name yet, so its prefix stands in."""
    name = _text(obj, "metadata", "name") or _text(request, "name")
    return f"{_namespace(request, obj)}/{name or _text(obj, 'metadata', 'generateName')}"


_text = reads.text
_mapping = reads.mapping

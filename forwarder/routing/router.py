"""Decide what to send for each watch event or full list, given what was seen before.

Every kind is routed in one of the two shapes of `index` (an owner with its own workflow, or a
member reported to its owner's), with Volcano's informer filters as its rules. Three kinds
need more: a PodGroup goes to its Job and to its queue, a Command to whichever it targets,
Queues, which also tell their parents, have `queue_router`, and NamespaceQueues, which also
tell the queues around them, `namespace_queues`. batch/v1 Jobs are Caldera's only
when their `spec.managedBy` says so; the rest, and their pods, are the built-in job
controller's. Pods naming Volcano's scheduler without a PodGroup go to the PodGroupWorkflow of
their gang (`workloads`). JobFlows, the JobTemplates they name and the Volcano Jobs labelled
with a flow go to the flow's workflow (`flows`); a Volcano Job goes to its own workflow too,
a DispatchWorkflow instead of its JobWorkflow when its queue sends it to a worker cluster
(`dispatches`, which Commands aimed at it follow).
No I/O: the pipeline carries out the returned `Outbound`s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence, Set
from typing import Final, TypeVar

from forwarder.routing import batch_translate as bt
from forwarder.routing import (
    cronjobs,
    dispatches,
    envelopes,
    flows,
    index,
    logs,
    namespace_queues,
    queue_router,
    translate,
    workloads,
)
from forwarder.routing import queue_translate as qt
from models.signals import common as common_signals
from models.signals import job as job_signals

logger = logging.getLogger(__name__)

# (type, object, force: send even if unchanged, relisted: from a full list, not the watch)
Handler = Callable[[envelopes.WatchType, envelopes.Obj, bool, bool], list[envelopes.Outbound]]
Vanished = Callable[[Set[str]], list[envelopes.Outbound]]
OwnerRef = TypeVar("OwnerRef", envelopes.JobRef, envelopes.BatchJobRef)


def _job_rules(
    ref: Callable[[envelopes.Obj], index.R],
    fingerprint: Callable[[envelopes.Obj], index.F],
    ours: Callable[[envelopes.Obj], bool] = index.always,
) -> index.OwnerRules[index.R, index.F]:
    """A Job of either API: its workflow hears `job_observed` and `job_deleted`."""
    return index.OwnerRules(
        ref=ref,
        fingerprint=fingerprint,
        observed=translate.job_observed,
        observed_signal=job_signals.SIGNAL_JOB_OBSERVED,
        deleted=lambda uid: common_signals.JobDeleted(uid=uid),
        deleted_signal=job_signals.SIGNAL_JOB_DELETED,
        ours=ours,
    )


VOLCANO_JOBS = _job_rules(translate.job_ref, translate.job_fingerprint)
BATCH_JOBS = _job_rules(bt.job_ref, translate.job_fingerprint, ours=bt.managed)


def _group_observed(
    job: envelopes.JobRef, group: job_signals.PodGroupObserved
) -> envelopes.Outbound:
    return envelopes.Signal(job, job_signals.SIGNAL_POD_GROUP_OBSERVED, group)


# Phases past the job's PodGroup gate. The job core reads the phase for the gate (closed while
# it has none or Pending) and for Unknown only, so a move among these changes nothing it decides.
PAST_GATE: Final = frozenset({"Inqueue", "Running", "Completed"})


def _same_phase(a: job_signals.PodGroupObserved, b: job_signals.PodGroupObserved) -> bool:
    """Volcano's updatePodGroup reacts to phase changes only; of those, a move between two
    phases past the gate (the scheduler's Inqueue → Running) is not news to the Job."""
    return a.phase == b.phase or (a.phase in PAST_GATE and b.phase in PAST_GATE)


def _group_echo(group: job_signals.PodGroupObserved) -> bool:
    """A new PodGroup without a phase, or Pending, is the one its Job just created."""
    return group.phase in (None, "", "Pending")


def _same_pod(a: job_signals.PodSnapshot, b: job_signals.PodSnapshot) -> bool:
    """A bare version bump or the binding alone is not news to the Job (the scheduler made
    it); the node still travels with the next change, Running."""
    return index.same_but_version(
        a.model_copy(update={"node_name": None}), b.model_copy(update={"node_name": None})
    )


def _pod_echo(pod: job_signals.PodSnapshot) -> bool:
    """A new pod Pending on no node is one its Job just created and already counts."""
    return pod.phase == "Pending" and pod.node_name is None and not pod.deleting


def _nothing(listed: Set[str]) -> list[envelopes.Outbound]:
    """A vanished Command was consumed by someone: nothing to tell."""
    return []


def _listed(
    owners: list[OwnerRef],
    owner_of: Callable[[envelopes.Obj], OwnerRef | None],
    pods: Sequence[envelopes.Obj],
) -> list[envelopes.Outbound]:
    """After a full list of pods, every Job (with pods or none) hears which of its pods exist:
    a pod that went while no one watched is in no list, and no watch reports it."""
    listed: dict[OwnerRef, job_signals.PodsListed] = {o: job_signals.PodsListed() for o in owners}
    for pod in pods:
        owner = owner_of(pod)
        if owner in listed:
            listed[owner].uids.append(translate.uid(pod))
            listed[owner].names.append(str(translate.metadata(pod).get("name", "")))
    return [envelopes.Signal(o, job_signals.SIGNAL_PODS_LISTED, p) for o, p in listed.items()]


class Router:
    """Inbound watch items → outbound messages, Volcano's informer filters applied."""

    def __init__(self, deleted_capacity: int = index.DELETED_REMEMBERED) -> None:
        self._jobs = index.Owners(VOLCANO_JOBS, deleted_capacity)
        # Members of a deleted Job are news to nobody: its workflow is ending, and a signal
        # arriving while it ends only makes its last workflow task retry.
        self._pods = index.Members(
            index.MemberRules(
                owner=self._live(translate.pod_job),
                snapshot=translate.pod_snapshot,
                message=envelopes.PodUpdate,
                same=_same_pod,
                forget_unowned=True,
                echo=_pod_echo,
            )
        )
        self._groups = index.Members(
            index.MemberRules(
                owner=self._live(translate.pod_group_job),
                snapshot=translate.pod_group_observed,
                message=_group_observed,
                same=_same_phase,
                forget_unowned=True,
                echo=_group_echo,
            )
        )
        self._queues = queue_router.QueueRouter(deleted_capacity)
        self._namespace_queues = namespace_queues.NamespaceQueues(
            self._queues.namespace_queue_live, self._queues.namespace_queue_gone, deleted_capacity
        )
        self._dispatches = dispatches.Dispatches(self._queues.dispatching, deleted_capacity)
        self._batch_jobs = index.Owners(BATCH_JOBS, deleted_capacity)
        self._batch_pods = index.Members(
            index.MemberRules(
                owner=self._batch_job,
                snapshot=bt.pod_snapshot,
                message=envelopes.BatchPodUpdate,
                same=index.same_but_version,
                forget_unowned=True,  # its Job was deleted, or is not one Caldera runs
            )
        )
        self._workload_pods = workloads.WorkloadPods(self._batch_job)
        self._flows = flows.Flows(deleted_capacity)
        self._cron_jobs = cronjobs.CronJobs(deleted_capacity)
        self._kinds: dict[envelopes.Kind, tuple[Handler, Vanished]] = {
            envelopes.Kind.JOB: (self._job, self._jobs_vanished),
            envelopes.Kind.POD: (self._pods.event, self._pods.vanished),
            envelopes.Kind.POD_GROUP: (self._pod_group, self._pod_groups_vanished),
            envelopes.Kind.COMMAND: (self._command, _nothing),
            envelopes.Kind.QUEUE: (self._queue, _nothing),  # relisted by `_queues` itself
            envelopes.Kind.BATCH_JOB: (self._batch_jobs.event, self._batch_jobs.vanished),
            envelopes.Kind.BATCH_POD: (self._batch_pods.event, self._batch_pods.vanished),
            envelopes.Kind.WORKLOAD_POD: (self._workload_pods.event, self._workload_pods.vanished),
            envelopes.Kind.KUBE_POD_GROUP: (
                self._workload_pods.core_group,
                self._workload_pods.core_groups_vanished,
            ),
            envelopes.Kind.JOBFLOW: (self._flows.flow, self._flows.flows_vanished),
            envelopes.Kind.JOBTEMPLATE: (self._flows.template, _nothing),
            envelopes.Kind.CRON_JOB: (self._cron_jobs.cron_job, self._cron_jobs.cron_jobs_vanished),
            envelopes.Kind.NAMESPACE: (self._namespace, _nothing),
            envelopes.Kind.NAMESPACE_QUEUE: (
                self._namespace_queues.event,
                self._namespace_queues.vanished,
            ),
        }

    def job_deleted(self, uid: str) -> bool:
        """Was this Job uid seen deleted (within the remembered window)?"""
        return self._jobs.deleted(uid) or self._dispatches.deleted(uid)

    def queue_deleted(self, uid: str) -> bool:
        """Was this Queue uid seen deleted (within the remembered window)?"""
        return self._queues.queue_deleted(uid)

    def route(self, item: envelopes.Inbound) -> list[envelopes.Outbound]:
        if isinstance(item, envelopes.Relisted):
            return self._relisted(item)
        handle, _ = self._kinds[item.kind]
        return handle(item.type, item.obj, item.type == "ADDED", False)

    def _relisted(self, item: envelopes.Relisted) -> list[envelopes.Outbound]:
        """Deletions for what vanished unseen, then the current state of everything listed."""
        if item.kind is envelopes.Kind.QUEUE:
            return self._queues.queues_relisted(
                item.objects
            ) + self._namespace_queues.queues_relisted(item.objects)
        handle, vanished = self._kinds[item.kind]
        out = vanished({translate.uid(o) for o in item.objects})
        for obj in item.objects:
            out += handle("ADDED", obj, True, True)
        if item.kind is envelopes.Kind.POD:
            out += _listed(self._jobs.refs(), self._live(translate.pod_job), item.objects)
        elif item.kind is envelopes.Kind.BATCH_POD:
            out += _listed(self._batch_jobs.refs(), self._batch_job, item.objects)
        elif item.kind is envelopes.Kind.POD_GROUP:
            out += self._queues.pod_groups_listed(item.objects)
        return out

    def _live(
        self, owner: Callable[[envelopes.Obj], envelopes.JobRef | None]
    ) -> Callable[[envelopes.Obj], envelopes.JobRef | None]:
        """`owner`, unless the Volcano Job controlling the object was seen deleted."""

        def live(obj: envelopes.Obj) -> envelopes.JobRef | None:
            uid = translate.controller_job_uid(obj)
            return None if uid is not None and self._jobs.deleted(uid) else owner(obj)

        return live

    def _job(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool
    ) -> list[envelopes.Outbound]:
        """A Volcano Job goes to its own workflow (its DispatchWorkflow when it is dispatched
        to a worker cluster), and to its flow's or its CronJob's when one made it."""
        if self._dispatches.takes(obj, self._run_here):
            own = self._dispatches.event(type_, obj, force, relisted)
        else:
            own = self._jobs.event(type_, obj, force, relisted)
        return (
            own
            + self._flows.job(type_, obj, force, relisted)
            + self._cron_jobs.job(type_, obj, force, relisted)
        )

    def _queue(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool
    ) -> list[envelopes.Outbound]:
        """A Queue's own workflow and its parent's; the NamespaceQueues hanging under it."""
        return self._queues.queue(type_, obj, force, relisted) + self._namespace_queues.queue(
            type_, obj, force, relisted
        )

    def _run_here(self, uid: str) -> bool:
        """A Job this forwarder routed to its JobWorkflow (live, or seen deleted)."""
        return self._jobs.ref(uid) is not None or self._jobs.deleted(uid)

    def _jobs_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        return (
            self._jobs.vanished(listed)
            + self._dispatches.vanished(listed)
            + self._flows.jobs_vanished(listed)
            + self._cron_jobs.jobs_vanished(listed)
        )

    def _batch_job(self, pod: envelopes.Obj) -> envelopes.BatchJobRef | None:
        """The Caldera-managed Job controlling a pod; None: no Job Caldera runs."""
        owner = bt.owner_uid(pod)
        return self._batch_jobs.ref(owner) if owner is not None else None

    def _pod_group(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool
    ) -> list[envelopes.Outbound]:
        """Every PodGroup counts in its queue; one created by a Job is also the Job's news."""
        return self._groups.event(type_, obj, force, relisted) + self._queues.pod_group(
            type_, obj, force
        )

    def _pod_groups_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        return self._groups.vanished(listed) + self._queues.pod_groups_vanished(listed)

    def _namespace(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool
    ) -> list[envelopes.Outbound]:
        """A namespace being deleted takes every object in it: each workflow of its Volcano
        Jobs (dispatched or not), JobFlows, CronJobs and NamespaceQueues hears its deletion now,
        one notice for the namespace, instead of after the namespace controller reaches its
        object; their members' later events are news to nobody. Not a batch/v1 Job's: its pods
        carry the job-tracking finalizer, which its workflow removes as they terminate, so it
        must live until the Job itself goes (ended early, it left the namespace Terminating for
        good)."""
        meta = translate.metadata(obj)
        if type_ != "DELETED" and meta.get("deletionTimestamp") is None:
            return []
        name = str(meta.get("name", ""))
        return (
            self._jobs.namespace_gone(name)
            + self._dispatches.namespace_gone(name)
            + self._flows.namespace_gone(name)
            + self._cron_jobs.namespace_gone(name)
            + self._namespace_queues.namespace_gone(name)
        )

    def _command(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool
    ) -> list[envelopes.Outbound]:
        """A Command for a Job or a Queue: consumed first, then delivered (at most once)."""
        if type_ != "ADDED":
            return []  # Volcano consumes on add only; the delete we issue comes back as DELETED
        job = translate.command_job(obj)
        target: envelopes.Target | None = (
            (self._dispatches.command_target(job) or job)
            if job
            else qt.command_queue(obj) or namespace_queues.command_target(obj)
        )
        if target is None:
            return []
        issued = translate.command_issued(obj)
        meta = translate.metadata(obj)
        name = str(meta.get("name", ""))
        if issued is None:
            log = logs.for_target(logger, target)
            log.warning("command without action ignored command=%s", name)
            return []
        signal = envelopes.Signal(target, common_signals.SIGNAL_COMMAND_ISSUED, issued)
        ns = str(meta.get("namespace", ""))
        return [envelopes.ConsumeCommand(ns, name, translate.uid(obj), signal)]

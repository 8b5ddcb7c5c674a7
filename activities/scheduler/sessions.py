"""One scheduling session (the SchedulerWorkflow's activity): bind what the last session
placed, or wait for work; read the cluster, decide with
`scheduling.actions.registry.run_session`, write what the scheduler owns, return the placements.

Every decision is pure and lives in `scheduling/`: the placements (`actions`), which PodGroup
statuses, pod conditions and queue totals change (`writes`), where each placement goes and
which volumes it gets (`placements`, `volumes`). This shell reads the cluster cache, parses what
those planners read (`observed`), and performs the writes they plan, in their order, so an idle
cluster costs reads only. Placements are returned, not bound: the SchedulerWorkflow records them
as assumptions and hands them to the next session (or, with volumes to bind, to `bind_session`).
Victims of reclaim and preempt are evicted here (`activities.scheduler.evictions`), after the
statuses are written.
"""

from __future__ import annotations

import collections
import contextvars
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from kubernetes import client
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube, kube_events
from activities.messages import (
    BindSessionInput,
    JobPlacements,
    RecordEventInput,
    SessionInput,
    SessionReport,
    Unschedulable,
)
from activities.scheduler import (
    backlogs,
    binding,
    evictions,
    extender,
    informer,
    scheduler_conf,
    session_metrics,
)
from models import kube_gangs, namespacequeue, scheduling
from models.keys import JobKey
from scheduling.actions.registry import run_session
from scheduling.api.devices import DeviceWorld
from scheduling.api.job_facts import FactMemo
from scheduling.api.result import Placement
from scheduling.cache import placements, writes
from scheduling.cache.objects import snapshot_from_objects
from scheduling.cache.observed import ObservedGroup, ObservedPod, ObservedQueue
from scheduling.cache.tasks import ParseMemo, Versioned
from scheduling.cache.volumes import Storage
from scheduling.cache.writes import (
    GroupStatusWrite,
    JobNotice,
    KubeGroupWrite,
    PodScheduledWrite,
    QueueAllocatedWrite,
)
from service import metrics, worker_registry

_G, _V = scheduling.GROUP, scheduling.VERSION
T = TypeVar("T")


BIND_VOLUME_TIMEOUT: Final = BindSessionInput.model_fields["volume_timeout_seconds"].default

# Binds the last session's placements beside the session (one at a time: sessions are too).
_BINDING: Final = ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-binding")

# One per scheduler: its SchedulerWorkflow runs its sessions one at a time.
_PARSED: Final[collections.defaultdict[str, ParseMemo]] = collections.defaultdict(ParseMemo)
_FACTS: Final[collections.defaultdict[str, FactMemo]] = collections.defaultdict(FactMemo)
_SEEN_PODS: Final[collections.defaultdict[str, Versioned[ObservedPod]]] = collections.defaultdict(
    Versioned
)
_SEEN_GROUPS: Final[collections.defaultdict[str, Versioned[ObservedGroup]]] = (
    collections.defaultdict(Versioned)
)


def _observed(
    memo: Versioned[T], objects: list[dict[str, Any]], parse: Callable[[dict[str, Any]], T]
) -> list[T]:
    """`parse` of each object, made again only for objects changed since the last session."""
    memo.begin()
    return [memo.get(o, None, functools.partial(parse, o)) for o in objects]


def _cache() -> informer.ClusterCache:
    cache = informer.cluster()
    missing = cache.wait_synced(informer.SYNC_TIMEOUT)
    if missing:
        raise ApplicationError(f"cluster cache not synced yet: {', '.join(missing)}")
    return cache


def _side_by_side(write: Callable[[T], None], items: list[T]) -> None:
    """Hundreds of objects can change in one session: write them in parallel, each thread in
    a copy of this activity's context (Events and logs read the activity's info from it)."""
    jobs = [(contextvars.copy_context(), item) for item in items]
    with ThreadPoolExecutor(max_workers=16) as pool:
        for _ in pool.map(lambda job: job[0].run(write, job[1]), jobs):
            activity.heartbeat()  # the SDK sends at most one per 0.8 x the timeout


def _write_pod_group(write: GroupStatusWrite) -> None:
    _tell_job(write.notice)
    with errors.kube_call(f"write status of podgroup {write.key}", ok=errors.GONE_OK):
        written = kube.custom().patch_namespaced_custom_object_status(
            _G,
            _V,
            write.namespace,
            "podgroups",
            write.name,
            {"status": write.status()},
            _content_type="application/merge-patch+json",
            _preload_content=False,
        )
        kube.unread(written)


def _write_kube_group(write: KubeGroupWrite) -> None:
    """Best effort: the gang is placed whatever this condition says, so a write the apiserver
    refuses is logged and the session goes on."""
    what = f"write PodGroupInitiallyScheduled of {kube_gangs.API_VERSION} podgroup {write.name}"
    try:
        with errors.kube_call(what, ok=errors.GONE_OK):
            written = client.SchedulingV1beta1Api(kube.api()).patch_namespaced_pod_group_status(
                write.name,
                write.namespace,
                write.status(),
                _content_type="application/strategic-merge-patch+json",
                _preload_content=False,
            )
            kube.unread(written)
    except ApplicationError as e:
        activity.logger.warning(
            "condition not written podgroup=%s/%s error=%s", write.namespace, write.name, e
        )


def _write_pod_scheduled(write: PodScheduledWrite) -> None:
    entry = Unschedulable(
        pod=write.pod,
        reason=write.reason,
        message=write.message,
        nominated_node=write.nominated_node,
    )
    binding.write_pod_scheduled(write.namespace, entry)


def _write_queue_allocated(write: QueueAllocatedWrite) -> None:
    """Only `allocated`, through the status subresource: a NamespaceQueue's state, conditions
    and counters are its controller's (Volcano's design §3.2.6)."""
    body = {"status": {"allocated": dict(write.allocated)}}
    with errors.kube_call(f"write allocated of queue {write.queue}", ok=errors.GONE_OK):
        if write.namespace:
            written = kube.custom().patch_namespaced_custom_object_status(
                _G,
                _V,
                write.namespace,
                namespacequeue.PLURAL,
                write.name,
                body,
                _content_type="application/merge-patch+json",
                _preload_content=False,
            )
        else:
            written = kube.custom().patch_cluster_custom_object_status(
                _G,
                _V,
                "queues",
                write.queue,
                body,
                _content_type="application/merge-patch+json",
                _preload_content=False,
            )
        kube.unread(written)


def _tell_job(notice: JobNotice | None) -> None:
    """A new Unschedulable message also goes on the Volcano Job, where users look first."""
    if notice is None:
        return
    event = RecordEventInput(
        namespace=notice.namespace,
        name=notice.job,
        uid=notice.uid,
        type="Warning",
        reason="Unschedulable",
        message=notice.message,
    )
    kube_events.try_event(event)  # best effort: the PodGroup condition says it too


class _Clock:
    """Where a session's time went, for its log line."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._laps: list[tuple[str, float]] = []

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self._laps.append((name, now - self._last))
        self._last = now
        activity.heartbeat()  # a phase done: the session's worker is alive

    def __str__(self) -> str:
        return " ".join(f"{name}={took:.2f}s" for name, took in self._laps)


def _waited() -> float:
    """Seconds between the session being scheduled and this attempt starting."""
    info = activity.info()
    return (info.started_time - info.current_attempt_scheduled_time).total_seconds()


def _held(
    placed: Sequence[Placement],
    binding_now: Sequence[JobPlacements],
    groups: Mapping[JobKey, ObservedGroup],
    gangs: Sequence[placements.GangPlacements],
) -> set[JobKey]:
    """PodGroups of the gangs placed now (bound by the next session) or being bound now: their
    status waits for the session that sees the pods bound, which writes the Scheduled
    condition and Running at once (one write, not two a session apart)."""
    with_volumes = {g.job_workflow_id for g in gangs if any(p.binds_volumes for p in g.placements)}
    by_workflow = {placements.job_workflow(g): key for key, g in groups.items()}
    held = {
        p.job
        for p in placed
        if (g := groups.get(p.job)) is not None and placements.job_workflow(g) not in with_volumes
    }
    return held | {
        by_workflow[j.job_workflow_id] for j in binding_now if j.job_workflow_id in by_workflow
    }


@activity.defn(name="schedule_session")
def schedule_session(request: SessionInput) -> SessionReport:
    """One session, counted and timed (caldera_scheduling_session_duration_seconds)."""
    with worker_registry.session_timer(metrics.activity_meter(), request.scheduler_name):
        return _session(request)


def _session(request: SessionInput) -> SessionReport:
    clock = _Clock()
    cache = _cache()
    binder: Future[tuple[int, dict[str, str]]] | None = None
    if request.bind:
        # The previous session's placements (assumed since it returned) are bound while this
        # session reads, decides and writes: it counts them on their nodes meanwhile.
        context = contextvars.copy_context()  # heartbeats and logs from the binding thread
        binder = _BINDING.submit(context.run, binding.bind_gangs, request.bind, BIND_VOLUME_TIMEOUT)
    elif request.wait_seconds > 0:
        cache.wait_for_work(
            request.scheduler_name, request.since, request.wait_seconds, activity.heartbeat
        )
        clock.lap("wait")
    arrived = cache.arrivals(request.scheduler_name)  # before the read: later ones wake the next
    world = cache.read()
    clock.lap("read")
    storage = Storage.parse(
        world["pvcs"], world["pvs"], world["classes"], world["nodes"], world["csinodes"]
    )
    devices = DeviceWorld.parse(
        world.get("slices", []),
        world.get("deviceclasses", []),
        world.get("resourceclaims", []),
        placements.in_flight(request.assumed_claims),
    )
    snapshot = snapshot_from_objects(
        world["nodes"],
        world["pods"],
        world["podgroups"],
        world["queues"],
        world["priority"],
        scheduler_names=(request.scheduler_name,),
        assumed=request.assumed,
        memo=_PARSED[request.scheduler_name],
        storage=storage,
        hyper_nodes=world["hypernodes"],
        devices=devices,
        now=datetime.now(UTC),
        pdbs=world.get("pdbs", []),
        resource_quotas=world.get("resourcequotas", []),
        namespace_queues=world.get("namespacequeues", []),
    )
    clock.lap("snapshot")
    settings = scheduler_conf.session_config()
    port = extender.port(settings.extender)
    result = run_session(snapshot, settings, port, _FACTS[request.scheduler_name])
    # Volcano's volcano_queue_* gauges, and each line's estimated wait
    session_metrics.publish(result.queues, result.backlog, snapshot.now)
    clock.lap("decide")
    name = request.scheduler_name
    groups = {
        g.key: g for g in _observed(_SEEN_GROUPS[name], world["podgroups"], ObservedGroup.parse)
    }
    pods = {p.key: p for p in _observed(_SEEN_PODS[name], world["pods"], ObservedPod.parse)}
    listed = [*world["queues"], *world.get("namespacequeues", [])]
    queues = {q.name: q for q in map(ObservedQueue.parse, listed)}
    session = request.session
    gangs = placements.by_job_workflow(result.placements, groups, pods, storage)
    held = _held(result.placements, request.bind, groups, gangs) if request.bind_next else set()
    statuses = [
        w
        for w in writes.group_writes(result.phase_updates, result.conditions, groups, session)
        if w.key not in held
    ]
    _side_by_side(_write_pod_group, statuses)
    kube_groups = writes.kube_group_writes(statuses, groups, snapshot.now or datetime.now(UTC))
    _side_by_side(_write_kube_group, kube_groups)
    session_metrics.observe(snapshot, result, {w.key for w in statuses})  # the latencies
    _side_by_side(_write_pod_scheduled, writes.pod_scheduled_writes(result.pod_conditions, pods))
    for write in writes.queue_allocated_writes(result.queue_allocated, queues):
        _write_queue_allocated(write)
    raw_groups = {
        f"{g['metadata']['namespace']}/{g['metadata']['name']}": g for g in world["podgroups"]
    }
    evictions.evict(result.evictions, raw_groups)  # reclaim/preempt victims, after the statuses
    clock.lap("write")
    bound = placements.confirmed(request.assumed, pods, request.assumed_claims, devices)
    bind_failed: dict[str, str] = {}
    if binder is not None:
        _, bind_failed = binder.result()  # a pod not bound is placed again by the next session
        clock.lap("bind")
    pending = placements.still_pending(snapshot, result)
    clock.lap("placements")
    activity.logger.info(
        "session done session=%d placed=%d pending=%d bound=%d evicted=%d waited=%.2fs %s",
        session,
        len(result.placements),
        pending,
        len(bound),
        len(result.evictions),
        _waited(),
        clock,
    )
    jobs = [
        JobPlacements(
            job_workflow_id=g.job_workflow_id, namespace=g.namespace, placements=[*g.placements]
        )
        for g in gangs
    ]
    return SessionReport(
        jobs=jobs,
        bound=bound,
        pending=max(pending, 0),
        bind_failed=bind_failed,
        arrivals=arrived,
        backlog=backlogs.report(request, arrived, result.backlog, groups),
    )

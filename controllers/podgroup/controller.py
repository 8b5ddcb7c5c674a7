"""The PodGroup controller's decisions for one gang of pods Caldera did not create. Pure.

A pod arrives (`WorkloadPodSeen`); the owners' annotations are read (`ReadOwners`, unless a
reading younger than `FRESH` is at hand), and once they are back (`OwnersRead`) the PodGroup
is built from the newest pod and applied when it differs from what this run applied last,
together with the group-name annotation on every pod still waiting (`ApplyPodGroup`).

Volcano creates the PodGroup on a pod's arrival and updates it when the ReplicaSet or
StatefulSet changes; Caldera watches neither, so the owner is read again with the next new pod
once the last reading is older than `FRESH`, and a change is applied then. A write that gave
up is tried again after `RETRY`, as Volcano requeues it rate-limited. An owner that cannot be
read counts as one without annotations, as Volcano logs it and builds the PodGroup anyway.

A gang of pods that name a Kubernetes PodGroup (`models.kube_gangs`) waits for that PodGroup
(`CoreGroupSeen`, or with the pod when the forwarder has seen it already), as kube-scheduler
holds such pods until it exists; its Workload is read as the first owner, and a change of the
PodGroup (its minCount may change) is applied like a new pod.

The workflow ends when no pod has come for `IDLE`: the PodGroup stays, owned by the pods'
owner (or the pod), and goes with it through garbage collection; a later pod starts a new run,
which finds the PodGroup and updates what differs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.outcomes import ActionFailed, AnyOutcome, BindOutcome, PodsAbsent, TimerFired
from controllers.podgroup import build
from controllers.podgroup import effects as pg_fx
from controllers.podgroup.state import PodGroupRecord
from models.signals import podgroup as podgroup_signals

IDLE: Final = timedelta(minutes=10)
FRESH: Final = timedelta(seconds=30)
RETRY: Final = timedelta(seconds=30)
IDLE_TIMER: Final = "idle"
RETRY_TIMER: Final = "retry"


class OwnersRead(BaseModel):
    """What `ReadOwners` found: the annotations the PodGroup reads, first owner first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["OwnersRead"] = "OwnersRead"
    annotations: dict[str, str]


class PodsAnnotated(BaseModel):
    """Pods `ApplyPodGroup` annotated, or found gone (nothing left to annotate)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["PodsAnnotated"] = "PodsAnnotated"
    uids: list[str]


Input = (
    podgroup_signals.WorkloadPodSeen | podgroup_signals.CoreGroupSeen | OwnersRead | PodsAnnotated
)


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: PodGroupRecord
    effects: tuple[pg_fx.AnyEffect, ...] = ()


def decide(state: PodGroupRecord, item: Input | AnyOutcome, now: datetime) -> Decision:
    match item:
        case podgroup_signals.WorkloadPodSeen():
            return _seen(state.model_copy(update={"core": item.core or state.core}), item.pod, now)
        case podgroup_signals.CoreGroupSeen():
            return _core_seen(
                state.model_copy(update={"basis": state.basis or item.pod}), item.group, now
            )
        case OwnersRead():
            return _sync(state.model_copy(update={"upper": item.annotations, "read_at": now}), now)
        case PodsAnnotated():
            done = set(item.uids)
            waiting = {u: p for u, p in state.waiting.items() if u not in done}
            annotated = state.annotated + len(state.waiting) - len(waiting)
            return Decision(
                state=state.model_copy(update={"waiting": waiting, "annotated": annotated})
            )
        case TimerFired():
            return _timer(state, item, now)
        case ActionFailed():
            return _failed(state, item, now)
        case BindOutcome() | PodsAbsent():
            return Decision(state=state)  # this workflow binds nothing and creates no pod


def restored_timers(state: PodGroupRecord) -> list[fx.StartTimer]:
    """The timers a run that continued as new re-arms, for the time they have left."""
    out = []
    if state.idle_until is not None:
        out.append(_idle_timer(state.timer, state.idle_until))
    if state.retry_at is not None:
        out.append(_retry_timer(state.retry_at))
    return out


def _seen(state: PodGroupRecord, pod: podgroup_signals.WorkloadPod, now: datetime) -> Decision:
    state = state.model_copy(
        update={
            "namespace": pod.namespace,
            "name": build.group_name(pod, state.core),
            "basis": pod,
            "waiting": {**state.waiting, pod.uid: pod},
        }
    )
    if state.retry_at is not None:
        return Decision(state=state)  # the retry applies for this pod too
    fresh = state.read_at is not None and now - state.read_at < FRESH
    return _sync(state, now) if fresh and state.upper is not None else _read(state, now)


def _core_seen(state: PodGroupRecord, group: podgroup_signals.CoreGroup, now: datetime) -> Decision:
    """The Kubernetes PodGroup the gang mirrors, new or changed: read again and apply."""
    name = build.group_name(state.basis, group) if state.basis is not None else state.name
    state = state.model_copy(update={"core": group, "namespace": group.namespace, "name": name})
    if state.basis is None:
        return _idle(state, now)  # no pod yet: the first one applies it
    if state.retry_at is not None:
        return Decision(state=state)  # the retry applies it
    return _read(state, now)


def _read(state: PodGroupRecord, now: datetime) -> Decision:
    if state.basis is None:
        return Decision(state=state)
    if state.basis.scheduling_group and state.core is None:
        return _idle(state, now)  # the Kubernetes PodGroup is not there yet: wait for it
    owners = list(state.basis.owner_references)
    if state.core is not None and state.core.workload:  # the Workload's annotations come first
        owners.insert(0, build.workload_reference(state.core))
    if not owners:  # a bare pod: no owner to read
        return _sync(state.model_copy(update={"upper": {}, "read_at": now}), now)
    return Decision(
        state=state, effects=(pg_fx.ReadOwners(namespace=state.namespace, owners=owners),)
    )


def _sync(state: PodGroupRecord, now: datetime) -> Decision:
    """Apply the PodGroup if it changed, annotate who waits, and arm the idle timer anew."""
    if state.basis is None:
        return Decision(state=state)
    if state.basis.scheduling_group and state.core is None:
        return _idle(state, now)  # the Kubernetes PodGroup is not there yet: wait for it
    group = build.pod_group(state.basis, state.upper or {}, state.core)
    changed = group != state.applied
    effects: list[pg_fx.AnyEffect] = []
    if changed or state.waiting:
        pods = {p.name: uid for uid, p in state.waiting.items()}
        effects.append(
            pg_fx.ApplyPodGroup(
                group=group if changed else None,
                group_name=state.name,
                namespace=state.namespace,
                pods=pods,
            )
        )
    idle = _idle(state.model_copy(update={"applied": group}), now)
    return Decision(state=idle.state, effects=(*effects, *idle.effects))


def _idle(state: PodGroupRecord, now: datetime) -> Decision:
    """Arm the idle timer anew: the run ends IDLE from now unless something comes."""
    number, until = state.timer + 1, now + IDLE
    return Decision(
        state=state.model_copy(update={"timer": number, "idle_until": until}),
        effects=(_idle_timer(number, until),),
    )


def _timer(state: PodGroupRecord, fired: TimerFired, now: datetime) -> Decision:
    if fired.key == RETRY_TIMER:
        return _read(state.model_copy(update={"retry_at": None}), now)
    if fired.key != IDLE_TIMER or fired.timer != state.timer or state.idle_until is None:
        return Decision(state=state)  # an idle timer armed again since
    if state.retry_at is not None:
        return Decision(state=state)  # the retry re-arms it
    if state.waiting:
        return _read(state, now)  # pods the last write left unannotated: try them again
    done = state.model_copy(update={"idle_until": None})
    return Decision(state=done, effects=(fx.Finish(),))


def _failed(state: PodGroupRecord, failed: ActionFailed, now: datetime) -> Decision:
    if failed.namespace_gone:
        return Decision(state=state, effects=(fx.Finish(),))  # so are the pods and their owner
    if failed.effect == "ReadOwners":
        return _sync(state.model_copy(update={"upper": {}, "read_at": now}), now)
    # The PodGroup or some annotations may not be written: apply everything again later.
    until = now + RETRY
    retry = state.model_copy(update={"applied": None, "retry_at": until})
    return Decision(state=retry, effects=(_retry_timer(until),))


def _idle_timer(number: int, until: datetime) -> fx.StartTimer:
    return fx.StartTimer(
        key=IDLE_TIMER, fires_at=until, summary=f"end: no new pod for {IDLE}", timer=number
    )


def _retry_timer(until: datetime) -> fx.StartTimer:
    return fx.StartTimer(key=RETRY_TIMER, fires_at=until, summary="apply the PodGroup again")

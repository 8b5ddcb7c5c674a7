"""What the Volcano Job core does with a run of requests, from policy to plan: each goes
through delayed-action cleanup and applyPolicies, then either arms a durable timer (a delayed
action) or runs the state table's rule now as syncJob or killJob/killTarget, pure plans over
the workflow's pod table. Runs of plain syncs within one batch are merged into one sync, which
Volcano's level-triggered sync makes safe. `controller` turns each input into requests.

A plan returns the next state and the effects that make the cluster match it. Pods created
or deleted by the plan are recorded at once (created ones as Pending, deleted ones as
terminating), the way Volcano counts them right after its API calls. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.job import clock, delays, markers, naming
from controllers.job import effects as job_fx
from controllers.job import status as st
from controllers.job.policies import SYNC, Request, Resolution, apply_policies
from controllers.job.state import JobRecord, PodRecord
from controllers.job.transitions import JOB_ACTIONS, Operation, Retain, Rule, rule_for
from models import labels
from models.bus import Action
from models.vcjob import Job, JobPhase, JobSpec, JobStatus, TaskSpec

_RETAINED_SOFT = ("Succeeded", "Failed")


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: JobRecord
    effects: tuple[job_fx.AnyEffect, ...] = ()


class Target(StrEnum):
    """What a targeted kill removes (RestartTask, RestartPod, RestartPartition)."""

    TASK = "task"
    POD = "pod"
    PARTITION = "partition"


_TARGETS = {
    Action.RESTART_TASK: Target.TASK,
    Action.RESTART_POD: Target.POD,
    Action.RESTART_PARTITION: Target.PARTITION,
}


def _story(request: Request, resolution: Resolution) -> str:
    """'RestartJob: PodEvicted on pod j-w-1 (task worker), job policy PodEvicted → RestartJob'."""
    subject = f" on pod {request.pod} (task {request.task})" if request.pod else ""
    source = request.reason or resolution.policy
    tail = f", {source}" if source else ""
    return f"{resolution.action}: {request.event}{subject}{tail}"


def _execute(state: JobRecord, action: Action, request: Request, now: datetime, why: str) -> Plan:
    rule = rule_for(state.phase, action)
    if rule.operation == Operation.SYNC:
        return sync_job(state, rule, now, why)
    target = _TARGETS.get(action) if rule.operation == Operation.KILL_TARGET else None
    return kill(state, rule, request, now, why, target)


def _cancel(state: JobRecord, keys: Sequence[str]) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    if not keys:
        return state, []
    delayed = {k: v for k, v in state.delayed.items() if k not in keys}
    return state.model_copy(update={"delayed": delayed}), [fx.CancelTimer(key=k) for k in keys]


def act(
    state: JobRecord, request: Request, resolution: Resolution, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    """Run one resolved action now, then clean up delayed actions of its type."""
    out: list[job_fx.AnyEffect] = []
    why = _story(request, resolution)
    if resolution.action != Action.SYNC_JOB:
        out.append(
            fx.RecordEvent(
                reason="ExecuteAction",
                message=f"Start to execute action {why}",
            )
        )
    plan = _execute(state, resolution.action, request, now, why)
    state = plan.state
    out += plan.effects
    state, cancelled = _cancel(state, delays.cleanup(state.delayed, resolution.action, request))
    return state, out + cancelled


def handle(
    state: JobRecord, requests: Sequence[Request], now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    out: list[job_fx.AnyEffect] = []
    sync_due: Request | None = None
    for request in requests:
        state, cancelled = _cancel(state, delays.recovered(state.delayed, request))
        out += cancelled
        if state.job is None:
            continue
        resolution = apply_policies(state.job, state.status.version or 0, request)
        if resolution.action not in JOB_ACTIONS:
            out.append(
                fx.RecordEvent(
                    type="Warning",
                    reason="InvalidAction",
                    message=f"action {resolution.action} does not apply to a Job; ignored",
                )
            )
            continue
        if resolution == SYNC:
            sync_due = sync_due or request
            continue
        if sync_due is not None:
            state, done = act(state, sync_due, SYNC, now)
            out += done
            sync_due = None
        if resolution.delay:
            state, armed = _arm(state, request, resolution, resolution.delay, now)
            out += armed
        else:
            state, done = act(state, request, resolution, now)
            out += done
    if sync_due is not None:
        state, done = act(state, sync_due, SYNC, now)
        out += done
    return state, out


def _arm(
    state: JobRecord, request: Request, resolution: Resolution, delay: timedelta, now: datetime
) -> tuple[JobRecord, list[job_fx.AnyEffect]]:
    entry, replaced = delays.register(
        state.delayed, request, resolution.action, delay, now, state.timer_seq + 1
    )
    if entry is None:
        return state, []
    out: list[job_fx.AnyEffect] = []
    if replaced is not None:
        out.append(fx.CancelTimer(key=replaced))
    delayed = {**state.delayed, entry.key: entry}
    state = state.model_copy(update={"delayed": delayed, "timer_seq": entry.timer})
    story = _story(request, resolution).partition(": ")[2]
    out += [
        fx.RecordEvent(
            reason="ExecuteAction",
            message=f"Execute action {resolution.action} after {clock.go_duration(delay)}: {story}",
        ),
        clock.delayed_timer(entry, f"in {clock.go_duration(delay)}"),
    ]
    return state, out


def _dependencies_ready(
    task: TaskSpec, spec: JobSpec, job: Job, pods: dict[str, PodRecord]
) -> bool:
    deps = task.depends_on.name if task.depends_on and task.depends_on.name else []
    if not deps:
        return True

    def ready(dep: str) -> bool:
        dep_task = next((t for t in spec.tasks if t.name == dep), None)
        if dep_task is None or dep_task.min_available is None:
            return True
        up = 0
        for i in range(dep_task.replicas or 0):
            pod = pods.get(naming.pod_name(job, dep, i))
            if pod is not None and (
                (pod.phase == "Running" and pod.ready) or pod.phase == "Succeeded"
            ):
                up += 1
        return up >= dep_task.min_available

    iteration = task.depends_on.iteration if task.depends_on else None
    if iteration == "any" and len(deps) > 1:
        return any(ready(d) for d in deps)
    return all(ready(d) for d in deps)


def _settle(
    state: JobRecord,
    rule: Rule,
    status: JobStatus,
    counts: st.Counts,
    now: datetime,
    why: str,
) -> tuple[JobStatus, list[job_fx.AnyEffect]]:
    """Apply the rule's status function; name the reason when the phase changes."""
    assert state.job is not None
    spec = state.job.spec
    before = state.phase
    after = st.next_phase(rule.status, rule.target, spec, status, counts)
    if after is None or after == before:
        return status, []
    reason, message = st.reason(rule.status, after, spec, status, counts, why)
    status = st.transition(status, after, now, reason, message)
    return status, [fx.PhaseChanged(phase=after, previous=before, reason=f"{reason}: {message}")]


def _write(state: JobRecord, status: JobStatus) -> list[job_fx.AnyEffect]:
    return [job_fx.WriteStatus(status=status)] if status != state.status else []


def sync_job(state: JobRecord, rule: Rule, now: datetime, why: str) -> Plan:
    """Reconcile pods with the spec behind the PodGroup gate, then apply the status function."""
    job = state.job
    if job is None or job.metadata.deletion_timestamp is not None:
        return Plan(state=state)
    spec = job.spec
    status = state.status.model_copy(update={"min_available": spec.min_available or 0})
    status = markers.marked(state, status)
    out: list[job_fx.AnyEffect] = []
    if state.phase is None:
        status = st.transition(status, JobPhase.PENDING, now, "Created", "job accepted")
        out.append(fx.PhaseChanged(phase=JobPhase.PENDING, previous=None, reason="Created"))
    generation = job.metadata.generation or 0
    update: dict[str, object] = {}
    if spec.plugins and state.plugins_generation != generation:
        out.append(job_fx.EnsurePlugins(job=job))
        update["plugins_generation"] = generation
    if spec.volumes and state.phase is None and not state.job_io:
        out.append(job_fx.EnsureVolumes(job=job))  # a run from before the volumes step waited
    if markers.volumes_due(state):
        # Volcano's initiateJob: the claims before the PodGroup, so no pod is made that would
        # mount a claim not named yet (or missing); the job says Pending meanwhile.
        state = state.model_copy(update=update)
        status, changed = _settle(state, rule, status, st.counts_of(status), now, why)
        return Plan(
            state=state.model_copy(update={"status": status}),
            effects=(*out, *_write(state, status), *changed, job_fx.EnsureVolumes(job=job)),
        )
    if not state.pod_group_exists or state.pod_group_generation != generation:
        out.append(job_fx.EnsurePodGroup(job=job, look_up=state.ran_before))
        update.update(pod_group_exists=True, pod_group_generation=generation)
    state = state.model_copy(update=update)

    gate_open = state.settings.scheduler_override is not None or naming.gate_phase(state) not in (
        None,
        "",
        "Pending",
    )
    if not gate_open:
        status, changed = _settle(state, rule, status, st.counts_of(status), now, why)
        return Plan(
            state=state.model_copy(update={"status": status}),
            effects=(*out, *_write(state, status), *changed),
        )

    pods = dict(state.pods)
    create: list[tuple[str, int]] = []
    delete: list[str] = []
    live: list[tuple[str, str]] = []
    terminating = 0
    for task in spec.tasks:
        name = task.name or labels.DEFAULT_TASK_SPEC
        replicas = task.replicas or 0
        deps_ready = _dependencies_ready(task, spec, job, pods)
        for index in range(replicas):
            pod = pods.get(naming.pod_name(job, name, index))
            if pod is None:
                if deps_ready:
                    create.append((name, index))
                    live.append((name, "Pending"))
            elif pod.deleting:
                terminating += 1
            elif pod.out_of_sync:
                delete.append(pod.name)
            else:
                live.append((name, pod.phase))
        for pod in pods.values():
            beyond = pod.index is None or pod.index >= replicas
            if pod.task == name and beyond and not pod.deleting:
                delete.append(pod.name)
    terminating += len(delete)
    for task_name, index in create:
        name = naming.pod_name(job, task_name, index)
        pods[name] = PodRecord(
            name=name, task=task_name, index=index, job_version=status.version or 0
        )
    for name in delete:
        pods[name] = pods[name].model_copy(update={"deleting": True})
    if create:
        out.append(
            job_fx.CreatePods(
                job=job,
                version=status.version or 0,
                retry_count=status.retry_count or 0,
                pods=create,
                scheduler_override=state.settings.scheduler_override,
                pod_group=naming.legacy_pod_group_name(job)
                if naming.on_legacy_pod_group(state)
                else None,
            )
        )
    if delete:
        out.append(job_fx.DeletePods(names=sorted(delete), why="out of sync or beyond replicas"))
    counts = st.Counts.of(live, terminating)
    recounted = st.with_counts(status, counts, spec)
    settled, changed = _settle(state, rule, recounted, counts, now, why)
    if not changed and settled != state.status:
        settled = st.touch(settled, now)
    written = _write(state, settled)
    state = state.model_copy(update={"pods": pods, "status": settled})
    return Plan(state=state, effects=(*out, *written, *changed))


def _selected(state: JobRecord, request: Request, target: Target | None) -> list[PodRecord]:
    pods = state.pods.values()
    match target:
        case None:
            return list(pods)
        case Target.POD:
            return [p for p in pods if p.name == request.pod]
        case Target.TASK:
            return [p for p in pods if p.task == request.task]
        case Target.PARTITION:
            if not request.partition:
                return []  # a pod without partition: nothing to restart
            return [p for p in pods if p.task == request.task and p.partition == request.partition]


def kill(
    state: JobRecord, rule: Rule, request: Request, now: datetime, why: str, target: Target | None
) -> Plan:
    """killJob (target None: every pod, version bumped, PodGroup deleted) or killTarget."""
    full = target is None
    job = state.job
    if job is None or job.metadata.deletion_timestamp is not None:
        return Plan(state=state)
    spec = job.spec
    if full and state.plugins_generation is not None:
        # Volcano's pluginOnJobDelete precedes the status write: the plugins' markers go too.
        state = state.model_copy(update={"controlled": markers.without_plugins(state)})
    status = markers.marked(state, state.status)
    retry = status.retry_count or 0
    soft = rule.retain == Retain.SOFT or retry >= (spec.max_retry or 0) - 1
    selected = _selected(state, request, target)
    pods = dict(state.pods)
    delete: list[str] = []
    kept: list[tuple[str, str]] = []
    terminating = 0
    for pod in sorted(selected, key=lambda p: p.name):
        if pod.deleting:
            terminating += 1
        elif full and soft and pod.phase in _RETAINED_SOFT:
            # Kept for inspection, and counted: a Completed job says how many pods succeeded
            # (Volcano's master stopped counting them and reports 0, its issue #4616).
            kept.append((pod.task, pod.phase))
        else:
            delete.append(pod.name)
            pods[pod.name] = pod.model_copy(update={"deleting": True, "out_of_sync": True})
            terminating += 1
    counts = st.Counts.of(kept, terminating)
    status = st.with_counts(status, counts, spec)
    update: dict[str, object] = {}
    if full:
        update["version"] = (status.version or 0) + 1
    if rule.retry:
        update["retry_count"] = retry + 1
    status = status.model_copy(update=update)
    status, changed = _settle(state, rule, status, counts, now, why)
    if (
        status.state is not None
        and status.state.last_transition_time
        and job.metadata.creation_timestamp
    ):
        ran = status.state.last_transition_time - job.metadata.creation_timestamp
        status = status.model_copy(update={"running_duration": clock.go_duration(ran)})
    out: list[job_fx.AnyEffect] = []
    if delete:
        out.append(job_fx.DeletePods(names=delete, why=why))
    next_state = state.model_copy(update={"pods": pods, "status": status})
    if full and state.plugins_generation is not None:
        out.append(job_fx.RemovePlugins(job=job))
        next_state = next_state.model_copy(update={"plugins_generation": None})
    out.append(job_fx.WriteStatus(status=status))
    if full and state.pod_group_exists:
        out.append(job_fx.DeletePodGroup(name=naming.pod_group_in_use(state, job)))
        next_state = next_state.model_copy(
            update={
                "pod_group_exists": False,
                "pod_group_phase": None,
                "pod_group_generation": None,
                "legacy_pod_group_exists": False,
                "legacy_pod_group_phase": None,
            }
        )
    return Plan(state=next_state, effects=(*out, *changed))

"""syncJob and killJob/killTarget as pure plans over the workflow's pod table.

A plan returns the next state and the effects that make the cluster match it. Pods created
or deleted by the plan are recorded at once (created ones as Pending, deleted ones as
terminating), the way Volcano counts them right after its API calls.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from controllers import effects as fx
from controllers.job import effects as job_fx
from controllers.job import markers
from controllers.job import status as st
from controllers.job.policies import Request
from controllers.job.state import JobRecord, PodRecord
from controllers.job.transitions import FINISHED, Retain, Rule, StatusFn
from models import labels
from models.signals import job as job_signals
from models.vcjob import Job, JobPhase, JobSpec, JobStatus, TaskSpec

_RETAINED_SOFT = ("Succeeded", "Failed")


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: JobRecord
    effects: tuple[job_fx.AnyEffect, ...] = ()


def pod_name(job: Job, task: str, index: int) -> str:
    return f"{job.metadata.name}-{task}-{index}"


def pod_group_name(job: Job) -> str:
    return f"{job.metadata.name}-{job.metadata.uid}"


def legacy_pod_group_name(job: Job) -> str:
    """The name Volcano gave a job's PodGroup before 1.5."""
    return job.metadata.name or ""


def asks_legacy(state: JobRecord, item: object) -> bool:
    """Whether the shell asks the `caldera-legacy-pod-group` patch before deciding `item`: at
    a PodGroup named as the job itself (only jobs from before Volcano 1.5 have one), so no
    other job's history records the marker."""
    return (
        not state.legacy_pod_groups
        and state.job is not None
        and isinstance(item, job_signals.PodGroupObserved)
        and item.name == legacy_pod_group_name(state.job)
    )


def on_legacy_pod_group(state: JobRecord) -> bool:
    """The job's gang is a PodGroup from before Volcano 1.5: its own was never made (the
    PodGroup step found the old one and kept it, as Volcano's lookup does)."""
    return state.legacy_pod_group_exists and state.pod_group_phase is None


def pod_group_in_use(state: JobRecord, job: Job) -> str:
    return legacy_pod_group_name(job) if on_legacy_pod_group(state) else pod_group_name(job)


def gate_phase(state: JobRecord) -> str | None:
    """The phase of the PodGroup the job waits on (None: none, or none with a phase yet)."""
    return state.legacy_pod_group_phase if on_legacy_pod_group(state) else state.pod_group_phase


def go_duration(delta: timedelta) -> str:
    """metav1.Duration's text form ("1h2m3.5s") for status.runningDuration."""
    total = delta.total_seconds()
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{int(hours)}h" if hours else ""
    out += f"{int(minutes)}m" if hours or minutes else ""
    return out + f"{seconds:g}s"


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
            pod = pods.get(pod_name(job, dep, i))
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
    reason, message = _reason(rule.status, after, spec, status, counts, why)
    status = st.transition(status, after, now, reason, message)
    return status, [fx.PhaseChanged(phase=after, previous=before, reason=f"{reason}: {message}")]


def _reason(
    fn: StatusFn,
    after: JobPhase,
    spec: JobSpec,
    status: JobStatus,
    c: st.Counts,
    why: str,
) -> tuple[str, str]:
    if fn == StatusFn.TO:
        action, _, story = why.partition(": ")
        return action, story
    if fn == StatusFn.PENDING:
        return "MinAvailableReached", (
            f"{c.running + c.succeeded + c.failed} pods running or finished, "
            f"minAvailable {spec.min_available}"
        )
    if fn == StatusFn.RESTARTING and after == JobPhase.FAILED:
        return "MaxRetryExceeded", f"ran {status.retry_count} times, maxRetry {spec.max_retry}"
    if fn == StatusFn.RESTARTING:
        return "Restarted", f"retry {status.retry_count} of {spec.max_retry}"
    if fn == StatusFn.RUNNING and after == JobPhase.PENDING:
        return "GangLost", f"{c.pending} pods pending, minAvailable {spec.min_available}"
    if fn == StatusFn.RUNNING:
        return after.value, (
            f"succeeded {c.succeeded}, failed {c.failed} of {spec.total_replicas} pods "
            f"(minAvailable {spec.min_available}, minSuccess {spec.min_success})"
        )
    return after.value, f"no pod left running after {why}"


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

    gate_open = state.settings.scheduler_override is not None or gate_phase(state) not in (
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
            pod = pods.get(pod_name(job, name, index))
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
        name = pod_name(job, task_name, index)
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
                pod_group=legacy_pod_group_name(job) if on_legacy_pod_group(state) else None,
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


class Target(StrEnum):
    """What a targeted kill removes (RestartTask, RestartPod, RestartPartition)."""

    TASK = "task"
    POD = "pod"
    PARTITION = "partition"


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
        status = status.model_copy(update={"running_duration": go_duration(ran)})
    out: list[job_fx.AnyEffect] = []
    if delete:
        out.append(job_fx.DeletePods(names=delete, why=why))
    next_state = state.model_copy(update={"pods": pods, "status": status})
    if full and state.plugins_generation is not None:
        out.append(job_fx.RemovePlugins(job=job))
        next_state = next_state.model_copy(update={"plugins_generation": None})
    out.append(job_fx.WriteStatus(status=status))
    if full and state.pod_group_exists:
        out.append(job_fx.DeletePodGroup(name=pod_group_in_use(state, job)))
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


def finished(phase: JobPhase | None) -> bool:
    return phase in FINISHED

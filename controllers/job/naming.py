"""The names Volcano gives a job's pods and PodGroup, and which PodGroup the job's gang is:
its own (Volcano 1.5 on) or one named as the job, from before 1.5. Pure."""

from __future__ import annotations

from controllers.job.state import JobRecord
from models.signals import job as job_signals
from models.vcjob import Job


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

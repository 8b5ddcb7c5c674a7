"""What users see of a job's workflow: its status view and why a command cannot apply now.

Pure: the update validators and the `status` query call these on the workflow's state.
"""

from __future__ import annotations

from controllers.job import naming
from controllers.job.state import JobRecord
from controllers.job.transitions import FINISHED
from models.bus import Action
from models.signals import job as job_signals
from models.vcjob import JobPhase


def refusal(state: JobRecord, action: Action) -> str | None:
    """Why a user command cannot apply now (None: it can), for the update validators."""
    job = state.job
    if job is None:
        return "the job has not been observed yet"
    name = f"job {job.metadata.namespace}/{job.metadata.name}"
    phase = state.phase or JobPhase.PENDING
    if state.deleted or job.metadata.deletion_timestamp is not None:
        return f"{name} is being deleted"
    if action == Action.RESUME_JOB:
        if phase not in (JobPhase.ABORTING, JobPhase.ABORTED):
            return f"{name} is {phase}: only an Aborting or Aborted job can be resumed"
        return None
    if phase in FINISHED or phase == JobPhase.ABORTED:
        return f"{name} is {phase}: {action} does not apply to a finished job"
    if phase in (JobPhase.ABORTING, JobPhase.COMPLETING, JobPhase.TERMINATING):
        return f"{name} is {phase}: wait until it settles before {action}"
    if phase == JobPhase.RESTARTING:
        return f"{name} is Restarting: {action} would be ignored until it is Pending again"
    return None


def view(state: JobRecord) -> job_signals.JobView:
    job = state.job
    meta = job.metadata if job else None
    tasks = []
    for task in job.spec.tasks if job else []:
        counts = (state.status.task_status_count or {}).get(task.name or "")
        tasks.append(
            job_signals.TaskView(
                name=task.name or "",
                replicas=task.replicas or 0,
                phases=dict(counts.phase or {}) if counts else {},
            )
        )
    return job_signals.JobView(
        namespace=(meta.namespace if meta else None) or "",
        name=(meta.name if meta else None) or "",
        uid=(meta.uid if meta else None) or "",
        phase=str(state.phase or "Pending"),
        version=state.status.version or 0,
        retry_count=state.status.retry_count or 0,
        queue=(job.spec.queue if job else None) or "",
        pod_group_phase=naming.gate_phase(state),
        tasks=tasks,
        delayed=[
            job_signals.DelayedActionView(
                key=d.key,
                action=d.action,
                event=d.event,
                task=d.task,
                pod=d.pod,
                fires_at=d.fires_at.isoformat(),
            )
            for _, d in sorted(state.delayed.items())
        ],
    )

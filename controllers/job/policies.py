"""applyPolicies: which action a request leads to, and after what delay.

Task-level policies before job-level ones, first match wins; `*` matches any event; the exit
code is the first container's; PodPending only matches a policy with a timeout; stale-version
and foreign-UID requests are downgraded to a sync, as are internal events.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict

from models.bus import Action, Event
from models.vcjob import Job, LifecyclePolicy

INTERNAL_EVENTS = frozenset({Event.OUT_OF_SYNC, Event.COMMAND_ISSUED, Event.POD_RUNNING})


class Request(BaseModel):
    """One unit of work for the job, as Volcano's request: what happened, to which pod."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event: Event = Event.OUT_OF_SYNC
    action: Action | None = None  # None: decided by the policies (commands set it)
    task: str = ""
    pod: str = ""
    pod_uid: str = ""
    job_uid: str = ""  # "" : not tied to a Job UID (commands, timers)
    job_version: int | None = None  # None: not from a pod
    exit_code: int = 0
    partition: str = ""
    reason: str = ""  # free text for the story (a command's reason)


class Resolution(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Action
    delay: timedelta | None = None  # None: act now
    policy: str = ""  # which policy matched, for the story ("" when none did)


SYNC = Resolution(action=Action.SYNC_JOB)


def _matches(policy: LifecyclePolicy, request: Request) -> bool:
    events = policy.all_events
    if events and (request.event in events or Event.ANY in events):
        # PodPending only means something together with a timeout ("pending for too long").
        return request.event != Event.POD_PENDING or policy.timeout is not None
    return policy.exit_code is not None and policy.exit_code == request.exit_code


def _describe(policy: LifecyclePolicy, level: str) -> str:
    trigger = ",".join(policy.all_events) if policy.all_events else f"exitCode {policy.exit_code}"
    return f"{level} policy {trigger} → {policy.action}"


def apply_policies(job: Job, version: int, request: Request) -> Resolution:
    """The action for `request` against `job` whose status.version is `version`."""
    if request.action is not None:
        return Resolution(action=request.action)
    if request.event in INTERNAL_EVENTS:
        return SYNC
    if request.job_uid and request.job_uid != job.metadata.uid:
        return SYNC  # an event of an earlier Job with the same name
    if request.job_version is not None and request.job_version < version:
        return SYNC  # a pod of an earlier run of this job
    if request.task:
        task = next((t for t in job.spec.tasks if t.name == request.task), None)
        for policy in (task.policies or []) if task else []:
            if _matches(policy, request):
                return Resolution(
                    action=Action(policy.action),
                    delay=policy.delay,
                    policy=_describe(policy, f"task {request.task}"),
                )
    for policy in job.spec.policies or []:
        if _matches(policy, request):
            return Resolution(
                action=Action(policy.action), delay=policy.delay, policy=_describe(policy, "job")
            )
    return SYNC

"""trackJobStatusAndRemoveFinalizers and enactJobFinished of the built-in job controller. Pure.

Finished pods that still carry the job-tracking finalizer are added to
`status.uncountedTerminatedPods`, the status is written (with the interim FailureTarget or
SuccessCriteriaMet condition) and only then are their finalizers removed; once removed they
move to the counters, and Failed or Complete is written when nothing is uncounted and no pod
is terminating. `sync` calls `track` at the end of every sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict

from controllers.batchjob import accounting, conditions, indexes
from controllers.batchjob import effects as fx
from controllers.batchjob.state import BatchJobRecord, PodRecord
from models.batchv1 import BatchJob, BatchJobStatus, ConditionType, JobCondition
from models.batchv1 import UncountedTerminatedPods as Uncounted

MAX_UNCOUNTED: Final = 500  # MaxUncountedPods


class Tracked(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: BatchJobRecord
    effects: tuple[fx.AnyEffect, ...] = ()


def _can_remove(
    job: BatchJob,
    pod: PodRecord,
    failed: bool,
    finishing: JobCondition | None,
    delayed: dict[int, PodRecord],
) -> bool:
    """canRemoveFinalizer: the Job is going or finishing, the pod succeeded, or it failed and
    is not the pod an index keeps until its replacement inherits its failure count."""
    if job.metadata.deletion_timestamp is not None or finishing is not None:
        return True
    if pod.phase == "Succeeded":
        return True
    if not failed:
        return False
    if job.spec.backoff_limit_per_index is not None and pod.index is not None:
        kept = delayed.get(pod.index)
        if kept is not None and kept.uid == pod.uid:
            return False
    return True


def _count_uncounted(status: BatchJobStatus, with_finalizer: set[str]) -> BatchJobStatus:
    """cleanUncountedPodsWithoutFinalizers: uncounted pods whose finalizer is gone count now."""
    uncounted = status.uncounted_terminated_pods or Uncounted()
    succeeded = list(uncounted.succeeded or [])
    failed = list(uncounted.failed or [])
    keep_s = [u for u in succeeded if u in with_finalizer]
    keep_f = [u for u in failed if u in with_finalizer]
    if len(keep_s) == len(succeeded) and len(keep_f) == len(failed):
        return status
    return status.model_copy(
        update={
            "succeeded": (status.succeeded or 0) + len(succeeded) - len(keep_s),
            "failed": (status.failed or 0) + len(failed) - len(keep_f),
            "uncounted_terminated_pods": Uncounted(succeeded=keep_s or None, failed=keep_f or None),
        }
    )


def track(
    state: BatchJobRecord,
    seen: Sequence[PodRecord],
    job: BatchJob,
    status: BatchJobStatus,
    finishing: JobCondition | None,
    prev_indexes: indexes.Intervals,
    succeeded_ix: indexes.Intervals,
    failed_ix: indexes.Intervals | None,
    delayed: dict[int, PodRecord],
    now: datetime,
) -> Tracked:
    """`seen` is the pod table as the sync found it: pods it deleted just now are judged as
    they were (a pod stopped because the Job succeeded is not a failure)."""
    spec = job.spec
    listed = list(seen)
    if spec.indexed:
        listed.sort(key=lambda p: (-1 if p.index is None else p.index, p.name))
    removing = set(state.removing)
    with_finalizer = {p.uid for p in listed if p.uid and p.finalizer and p.uid not in removing}
    status = _count_uncounted(status, with_finalizer)
    if status.uncounted_terminated_pods is None:
        status = status.model_copy(update={"uncounted_terminated_pods": Uncounted()})
    uncounted = status.uncounted_terminated_pods or Uncounted()
    unc_succeeded = list(uncounted.succeeded or [])
    unc_failed = list(uncounted.failed or [])
    failing = finishing is not None and finishing.type != ConditionType.SUCCESS_CRITERIA_MET
    remove: dict[str, str] = {}
    new_indexes: list[int] = []
    full = False
    for pod in listed:
        uid = pod.uid or ""
        if not pod.finalizer or uid in removing:
            continue
        failed = accounting.is_failed(pod, job)
        if not _can_remove(job, pod, failed, finishing, delayed):
            continue
        remove[pod.name] = uid
        valid = accounting.valid_index(pod, job)
        if pod.phase == "Succeeded" and uid not in unc_failed:
            if spec.indexed:
                ix = pod.index
                if valid and ix is not None and not indexes.has(prev_indexes, ix):
                    new_indexes.append(ix)
            elif uid not in unc_succeeded:
                unc_succeeded.append(uid)
        elif (
            (failed or failing)  # a failing Job counts every unfinished pod as failed
            and uid not in unc_failed
            and valid
            and accounting.policy_match(job, pod).counts
        ):
            unc_failed.append(uid)
        if len(new_indexes) + len(unc_succeeded) + len(unc_failed) >= MAX_UNCOUNTED:
            full = True
            break
    update: dict[str, object] = {
        "uncounted_terminated_pods": Uncounted(
            succeeded=unc_succeeded or None, failed=unc_failed or None
        )
    }
    if spec.indexed:
        done = indexes.with_indexes(succeeded_ix, new_indexes)
        update["succeeded"] = indexes.total(done)
        update["completed_indexes"] = indexes.text(done) or None
        update["failed_indexes"] = None if failed_ix is None else indexes.text(failed_ix)
    conds = list(status.conditions or [])
    final: JobCondition | None = None
    if finishing is not None and finishing.type == ConditionType.FAILURE_TARGET:
        conds.append(finishing)
        final = conditions.new(
            ConditionType.FAILED, finishing.reason or "", finishing.message or "", now
        )
    elif finishing is not None and finishing.type == ConditionType.SUCCESS_CRITERIA_MET:
        if not status.is_true(ConditionType.SUCCESS_CRITERIA_MET):
            conds.append(finishing)
        final = conditions.new(
            ConditionType.COMPLETE, finishing.reason or "", finishing.message or "", now
        )
    elif finishing is not None:
        final = finishing  # Failed, carried over from an earlier FailureTarget
    update["conditions"] = conds or None
    status = status.model_copy(update=update)
    out: list[fx.AnyEffect] = []
    if remove:
        # Write what is uncounted (and the interim condition) before any finalizer goes.
        out += _write(state, status, "count finished pods")
        out.append(fx.RemoveFinalizers(pods=remove, why="finished pods counted"))
        state = state.model_copy(
            update={
                "status": status,
                "written": status,
                "removing": (*state.removing, *remove.values()),
            }
        )
        return Tracked(state=state, effects=tuple(out))
    events: list[fx.AnyEffect] = []
    if final is not None and not full:
        status, finished = _enact(status, final, now)
        if finished:
            events = _finish_events(job, status, final)
    out += _write(state, status, _summary(status))
    state = state.model_copy(update={"status": status, "written": status})
    return Tracked(state=state, effects=(*out, *events))


def _enact(
    status: BatchJobStatus, final: JobCondition, now: datetime
) -> tuple[BatchJobStatus, bool]:
    """enactJobFinished: Failed or Complete once nothing is uncounted or terminating."""
    uncounted = status.uncounted_terminated_pods or Uncounted()
    if uncounted.succeeded or uncounted.failed or (status.terminating or 0) > 0:
        return status, False
    conds, _ = conditions.ensure(
        list(status.conditions or []),
        final.type,
        "True",
        final.reason or "",
        final.message or "",
        now,
    )
    update: dict[str, object] = {"conditions": conds}
    if final.type == ConditionType.COMPLETE:
        found = next(c for c in conds if c.type == ConditionType.COMPLETE)
        update["completion_time"] = found.last_transition_time
    return status.model_copy(update=update), True


def _finish_events(
    job: BatchJob, status: BatchJobStatus, final: JobCondition
) -> list[fx.AnyEffect]:
    if final.type == ConditionType.COMPLETE:
        out: list[fx.AnyEffect] = []
        completions = job.spec.completions
        if completions is not None and (status.succeeded or 0) > completions:
            out.append(
                fx.RecordEvent(
                    type="Warning",
                    reason="TooManySucceededPods",
                    message="Too many succeeded pods running after completion count reached",
                )
            )
        return [*out, fx.RecordEvent(reason="Completed", message="Job completed")]
    return [fx.RecordEvent(type="Warning", reason=final.reason or "", message=final.message or "")]


def _write(state: BatchJobRecord, status: BatchJobStatus, why: str) -> list[fx.AnyEffect]:
    if state.written == status:
        return []
    return [fx.WriteStatus(status=status.dump(), summary=why)]


def _summary(status: BatchJobStatus) -> str:
    return (
        f"{phase(status)}: active {status.active or 0}, succeeded {status.succeeded or 0}, "
        f"failed {status.failed or 0}"
    )


def phase(status: BatchJobStatus) -> str:
    """One word for the conditions, for the search attribute and the UI: Complete, Failed,
    Suspended, Running (started) or Pending."""
    for type_ in (ConditionType.COMPLETE, ConditionType.FAILED):
        if status.is_true(type_):
            return str(type_)
    if status.is_true(ConditionType.FAILURE_TARGET):
        return "Failing"
    if status.is_true(ConditionType.SUCCESS_CRITERIA_MET):
        return "Completing"
    if status.is_true(ConditionType.SUSPENDED):
        return "Suspended"
    return "Running" if status.start_time is not None else "Pending"

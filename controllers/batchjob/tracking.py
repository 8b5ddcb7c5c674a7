"""trackJobStatusAndRemoveFinalizers and enactJobFinished of the built-in job controller. Pure.

Finished pods that still carry the job-tracking finalizer are added to
`status.uncountedTerminatedPods`, the status is written (with the interim FailureTarget or
SuccessCriteriaMet condition) and only then are their finalizers removed; once removed they
move to the counters, and Failed or Complete is written when nothing is uncounted and no pod
is terminating. `sync` calls `track` at the end of every sync, then `effects`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from controllers import effects as fx
from controllers.batchjob import conditions, indexes
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.census import Census, IndexCount, Judged
from models.batchv1 import BatchJob, BatchJobStatus, ConditionType, JobCondition
from models.batchv1 import UncountedTerminatedPods as Uncounted

MAX_UNCOUNTED: Final = 500  # MaxUncountedPods


class Tracked(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: BatchJobStatus  # what the Job should say now
    remove: dict[str, str] = Field(default_factory=dict)  # name → uid, once status is written
    removing: tuple[str, ...] = ()  # every finalizer removal issued and not seen done
    events: tuple[fx.RecordEvent, ...] = ()  # the Job finished: Completed, or why it failed


class _Picked(BaseModel):
    """The finished pods whose finalizers go now, and where each is counted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    remove: dict[str, str]  # name → uid
    succeeded: tuple[str, ...]  # uncountedTerminatedPods.succeeded, these pods added
    failed: tuple[str, ...]  # uncountedTerminatedPods.failed, likewise
    new_indexes: tuple[int, ...]  # an Indexed Job counts succeeded indexes instead
    full: bool  # MaxUncountedPods reached: enactJobFinished waits for the next sync


def track(
    job: BatchJob,
    status: BatchJobStatus,
    finishing: JobCondition | None,
    counted: Census,
    now: datetime,
) -> Tracked:
    """`counted.listed` holds the pods as the sync found them: pods it deleted just now are
    judged as they were (a pod stopped because the Job succeeded is not a failure)."""
    status = _count_uncounted(status, _holding(counted))
    picked = _pick(job, status, finishing, counted)
    status = _record(status, picked, counted.indexes if job.spec.indexed else None, finishing)
    removing = (*counted.removing, *picked.remove.values())
    if picked.remove:
        return Tracked(status=status, remove=picked.remove, removing=removing)
    final = _final(finishing, now)
    if final is None or picked.full:
        return Tracked(status=status, removing=removing)
    status, finished = _enact(status, final, now)
    events = _finish_events(job.spec.completions, status, final) if finished else ()
    return Tracked(status=status, removing=removing, events=events)


def effects(written: BatchJobStatus | None, tracked: Tracked) -> list[batch_fx.AnyEffect]:
    """Write what is uncounted (and the interim condition) before any finalizer goes; the
    finish events follow the status that finished the Job."""
    if tracked.remove:
        return [
            *_write(written, tracked.status, "count finished pods"),
            batch_fx.RemoveFinalizers(pods=tracked.remove, why="finished pods counted"),
        ]
    return [*_write(written, tracked.status, _summary(tracked.status)), *tracked.events]


def _holding(counted: Census) -> set[str]:
    """Uids of pods that still carry the finalizer, their removal not yet issued."""
    removing = set(counted.removing)
    return {
        uid
        for j in counted.listed
        if (uid := j.pod.uid) and j.pod.finalizer and uid not in removing
    }


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


def _in_order(job: BatchJob, counted: Census) -> list[Judged]:
    if not job.spec.indexed:
        return list(counted.listed)
    return sorted(
        counted.listed, key=lambda j: (-1 if j.pod.index is None else j.pod.index, j.pod.name)
    )


def _pick(
    job: BatchJob, status: BatchJobStatus, finishing: JobCondition | None, counted: Census
) -> _Picked:
    """The pods whose finalizers can go, each added to uncounted (or to the indexes) once."""
    uncounted = status.uncounted_terminated_pods or Uncounted()
    succeeded, failed = list(uncounted.succeeded or []), list(uncounted.failed or [])
    remove: dict[str, str] = {}
    new_indexes: list[int] = []
    failing = finishing is not None and finishing.type != ConditionType.SUCCESS_CRITERIA_MET
    going = job.metadata.deletion_timestamp is not None or finishing is not None
    removing = set(counted.removing)
    full = False
    for seen in _in_order(job, counted):
        pod, uid = seen.pod, seen.pod.uid or ""
        if not pod.finalizer or uid in removing or not _can_remove(seen, going, counted):
            continue
        remove[pod.name] = uid
        if pod.phase == "Succeeded" and uid not in failed:
            ix = pod.index
            if not job.spec.indexed:
                if uid not in succeeded:
                    succeeded.append(uid)
            elif seen.valid and ix is not None and not indexes.has(counted.indexes.recorded, ix):
                new_indexes.append(ix)
        elif (seen.failed or failing) and uid not in failed and seen.valid and seen.policy.counts:
            failed.append(uid)  # a failing Job counts every unfinished pod as failed
        if len(new_indexes) + len(succeeded) + len(failed) >= MAX_UNCOUNTED:
            full = True
            break
    return _Picked(
        remove=remove,
        succeeded=tuple(succeeded),
        failed=tuple(failed),
        new_indexes=tuple(new_indexes),
        full=full,
    )


def _can_remove(seen: Judged, going: bool, counted: Census) -> bool:
    """canRemoveFinalizer: the Job is going or finishing, the pod succeeded, or it failed and
    is not the pod an index keeps until its replacement inherits its failure count."""
    if going or seen.pod.phase == "Succeeded":
        return True
    if not seen.failed:
        return False
    kept = None if seen.pod.index is None else counted.indexes.delayed.get(seen.pod.index)
    return kept is None or kept.uid != seen.pod.uid


def _record(
    status: BatchJobStatus,
    picked: _Picked,
    counted: IndexCount | None,
    finishing: JobCondition | None,
) -> BatchJobStatus:
    """The status with the picked pods uncounted (`counted`: an Indexed Job's indexes, whose
    succeeded count and index fields it sets) and the interim condition."""
    succeeded, failed = list(picked.succeeded) or None, list(picked.failed) or None
    update: dict[str, object] = {
        "uncounted_terminated_pods": Uncounted(succeeded=succeeded, failed=failed)
    }
    if counted is not None:
        done = indexes.with_indexes(counted.succeeded, picked.new_indexes)
        update["succeeded"] = indexes.total(done)
        update["completed_indexes"] = indexes.text(done) or None
        update["failed_indexes"] = None if counted.failed is None else indexes.text(counted.failed)
    conds = list(status.conditions or [])
    if finishing is not None and _interim(status, finishing):
        conds.append(finishing)
    update["conditions"] = conds or None
    return status.model_copy(update=update)


def _interim(status: BatchJobStatus, finishing: JobCondition) -> bool:
    """A new FailureTarget, or a SuccessCriteriaMet not yet in the status, is written first."""
    if finishing.type == ConditionType.FAILURE_TARGET:
        return True
    success = ConditionType.SUCCESS_CRITERIA_MET
    return finishing.type == success and not status.is_true(success)


def _final(finishing: JobCondition | None, now: datetime) -> JobCondition | None:
    """The condition enactJobFinished writes: Failed after FailureTarget, Complete after
    SuccessCriteriaMet, a Failed carried over from an earlier FailureTarget as it is."""
    if finishing is None:
        return None
    reason, message = finishing.reason or "", finishing.message or ""
    if finishing.type == ConditionType.FAILURE_TARGET:
        return conditions.new(ConditionType.FAILED, reason, message, now)
    if finishing.type == ConditionType.SUCCESS_CRITERIA_MET:
        return conditions.new(ConditionType.COMPLETE, reason, message, now)
    return finishing


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
    completions: int | None, status: BatchJobStatus, final: JobCondition
) -> tuple[fx.RecordEvent, ...]:
    if final.type != ConditionType.COMPLETE:
        reason, message = final.reason or "", final.message or ""
        return (fx.RecordEvent(type="Warning", reason=reason, message=message),)
    completed = fx.RecordEvent(reason="Completed", message="Job completed")
    if completions is None or (status.succeeded or 0) <= completions:
        return (completed,)
    too_many = fx.RecordEvent(
        type="Warning",
        reason="TooManySucceededPods",
        message="Too many succeeded pods running after completion count reached",
    )
    return (too_many, completed)


def _write(
    written: BatchJobStatus | None, status: BatchJobStatus, why: str
) -> list[batch_fx.AnyEffect]:
    if written == status:
        return []
    return [batch_fx.WriteStatus(status=status, summary=why)]


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

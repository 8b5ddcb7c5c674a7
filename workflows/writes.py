"""Short Kubernetes writes as the entity shell carries them out: each alone, or the consecutive
ones of one decision together, by one local activity (`activities.controllers.writes.apply_writes`),
so the history holds one marker per decision instead of one per write.

The kind says which of its effects are such writes (`Batches`); the shell stays kind-agnostic
and hands each failure back as it always did, one `ActionFailed` per failed effect, whichever
way the effect ran. The kind asks the patch (`ONE_WRITE`) once per run, where the first batch
would form, and keeps a yes in what the run carries on (`ControllerSettings`); runs started by
the forwarder are told so in their input and never ask. A history recorded before the patch
replays with a local activity per write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities import kube_events, options
    from activities.controllers import writes
    from activities.messages import (
        NAMESPACE_GONE,
        RecordEventInput,
        StepOutcome,
        WritesFailed,
        WritesInput,
        WriteStep,
    )
    from activities.options import ActivityOptions
    from workflows import activity_call

ONE_WRITE: Final = "caldera-one-write-per-decision"
SEPARATOR: Final = " · "  # between the steps' summaries in the batch's summary


@dataclass(frozen=True)
class Write:
    """One effect as a short write: the step of a batch it is, and the call of its own it is
    otherwise (the activity, its options, what the UI's timeline says of it)."""

    effect: str  # the effect's kind, as its failure is handed back (`ActionFailed.effect`)
    step: WriteStep
    activity: Callable[[Any], Any]
    options: ActivityOptions
    summary: str

    async def alone(self) -> Any:
        return await activity_call.run(self.activity, self.step.input, self.options, self.summary)


@runtime_checkable
class Batches(Protocol):
    """A kind whose consecutive short writes of one decision may be carried out together."""

    def batch_writes(self, effects: Sequence[object]) -> Sequence[Write]:
        """The leading effects as writes to carry out together, in order; fewer than two:
        none (the first effect is carried out alone)."""
        ...


@dataclass(frozen=True)
class Failed:
    """An effect that failed, as the core hears of it."""

    effect: str
    error: str
    namespace_gone: bool


def failed(effect: str, e: ActivityError) -> Failed:
    """An activity that gave up: its cause's text, and whether the namespace is going."""
    cause = str(e.cause) if e.cause is not None else str(e)
    gone = isinstance(e.cause, ApplicationError) and e.cause.type == NAMESPACE_GONE
    return Failed(effect=effect, error=cause, namespace_gone=gone)


async def together(batch: Sequence[Write]) -> tuple[int, list[Failed]]:
    """Carry out the writes by one local activity: how many of them it settled (done or
    failed; the shell goes on after them), and the failures among them, in order."""
    chosen = max((w.options for w in batch), key=lambda o: o.start_to_close)
    steps = WritesInput(steps=[w.step for w in batch])
    try:
        result = await activity_call.run(writes.apply_writes, steps, chosen, summary(batch))
    except ActivityError as e:
        at, before = _failed_at(e, len(batch))
        return at + 1, [*_failures(batch, before), failed(batch[at].effect, e)]
    return len(result.outcomes), _failures(batch, result.outcomes)


async def record(note: RecordEventInput) -> None:
    """An Event, best effort: one that cannot be written is logged, and the story goes on."""
    try:
        await activity_call.run(
            kube_events.record_event,
            note,
            options.KUBE_EVENT,
            f"event {note.reason}: {note.message}",
        )
    except ActivityError:
        workflow.logger.warning(
            "event not recorded object=%s/%s reason=%s", note.namespace, note.name, note.reason
        )


def summary(batch: Sequence[Write]) -> str:
    """The steps, as the timeline shows them ("ensure PodGroup · write status Pending")."""
    return activity_call.fit(SEPARATOR.join(w.summary for w in batch))


def _failures(batch: Sequence[Write], outcomes: Sequence[StepOutcome]) -> list[Failed]:
    return [
        Failed(effect=w.effect, error=o.error, namespace_gone=o.namespace_gone)
        for w, o in zip(batch, outcomes, strict=False)
        if o.error
    ]


def _failed_at(e: ActivityError, count: int) -> tuple[int, list[StepOutcome]]:
    """The step whose retryable error used the attempts up, and the outcomes before it, from
    the failure's details; without them (a timeout): the first step, nothing before it. The
    steps after it are then tried again, which is safe: each write is idempotent."""
    cause = e.cause
    if isinstance(cause, ApplicationError) and cause.details:
        try:
            at = WritesFailed.model_validate(cause.details[0])
        except ValidationError:
            return 0, []
        if 0 <= at.step < count:
            return at.step, at.outcomes
    return 0, []

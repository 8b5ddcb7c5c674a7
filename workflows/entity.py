"""The shell every entity workflow (Volcano Job, batch/v1 Job, Queue) runs on.

An entity is one Kubernetes object with a durable memory. Signal and update handlers only
append to the inbox; `run` feeds each input to the kind's pure `decide` and carries out the
returned effects in order. What every kind does the same way lives here: the inbox, durable
timers, continue-as-new, the effects shared by all cores (Events, timers, the phase shown in
the UI, the gang scheduler's placements), a decision's consecutive short writes carried out
together where the kind says they may be (`workflows.writes`), and the handing back of an
activity that gave up.
A kind gives the shell its state, its `decide` and the effects only it has; the shell knows
no kind's types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import pods
    from activities.messages import PodsInput, RecordEventInput
    from controllers import effects as fx
    from controllers.outcomes import ActionFailed, AnyOutcome, BindOutcome, PodsAbsent, TimerFired
    from models.signals import job as job_signals
    from service import metrics, search_attributes
    from workflows import activity_call, binding, visibility, writes
    from workflows.inbox import Inbox, continue_due
    from workflows.timers import Timers

S = TypeVar("S")
I = TypeVar("I")  # noqa: E741 - the kind's inputs from outside (signals, commands)
E = TypeVar("E")  # the kind's own effects
I_contra = TypeVar("I_contra", contravariant=True)
S_co = TypeVar("S_co", covariant=True)
E_co = TypeVar("E_co", covariant=True)
M = TypeVar("M", bound=BaseModel)  # the model a signal's object is parsed into
MADE_AGAIN = "caldera-made-again"
ABANDONED = "caldera-abandoned-on-start-over"
REPLACED = "the object was replaced by a new object under the same name before this was carried out"


class Ref(BaseModel):
    """The object an entity stands for, as Events and logs name it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str  # for a cluster-scoped object: where its Events are written
    name: str
    uid: str
    api_version: str
    kind: str


def parsed(model: type[M], obj: object, signal: str) -> M | None:
    """`obj` validated as `model`; None: it is not one, and the signal is dropped. The SDK drops
    a payload that is not the signal's type; one whose object is not the entity's kind would
    fail every workflow task from then on, so it is dropped here, logged. The core is handed
    what this returns (`controllers.parsed`), so the object is validated once."""
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        workflow.logger.warning("%s dropped: not a %s: %s", signal, model.__name__, e)
        return None


class Decided(Protocol[S_co, E_co]):
    @property
    def state(self) -> S_co: ...
    @property
    def effects(self) -> Sequence[E_co | fx.Shared]: ...


class Kind(Protocol[S, I_contra, E]):
    """What a workflow gives its entity: the kind's pure core and its own effects."""

    def decide(self, state: S, item: I_contra | AnyOutcome, now: datetime) -> Decided[S, E]: ...

    def answer(self, state: S) -> str:
        """What an update reports once its input was carried out (the phase or state)."""
        ...

    def ref(self, state: S) -> Ref: ...

    def decided(self, before: S, after: S) -> None:
        """Called after every decision, before its effects (search attributes)."""
        ...

    async def apply(self, effect: E) -> None:
        """Carry out one of the kind's own effects; an ActivityError goes to the shell."""
        ...

    def carry(
        self, state: S, start_over: job_signals.JobObserved | None, max_history: int
    ) -> object:
        """The next run's input: this state, or a fresh start for a new object (`start_over`)."""
        ...

    def made_again(self, state: S, item: I_contra | AnyOutcome, max_history: int) -> object | None:
        """A fresh run's input if `item`, still in the inbox as this run finishes, observes a
        new object under the same name (deleted and made again while the run ended); None:
        it does not."""
        ...


class Entity(Generic[S, I, E]):
    def __init__(
        self,
        kind: Kind[S, I, E],
        state: S,
        max_history: int,
        report_failures: bool = True,
        progress: Callable[[S], str] | None = None,
    ) -> None:
        """`report_failures`: an activity that gave up becomes an ActionFailed input, handled
        next; otherwise it is logged (a level-triggered kind writes again on its next sync).
        `progress`: the counts the current details show after the phase (None: the details
        are the phase and its reason alone)."""
        self.state = state
        self._progress = progress
        self._headline = ""  # the phase and its reason, as last changed
        self._details = ""
        self.inbox: Inbox[I | AnyOutcome] = Inbox()
        self._kind = kind
        self._timers = Timers[fx.StartTimer](self._timer_fired)
        self._finished = False
        self._start_over: job_signals.JobObserved | None = None
        self._max_history = max_history
        self._report_failures = report_failures
        # The kind's writes of one decision that go together; None: each goes alone.
        self._batch = kind.batch_writes if isinstance(kind, writes.Batches) else None

    def accept(self, item: I) -> int:
        return self.inbox.accept(item)

    async def command(self, item: I) -> tuple[str, str]:
        """Carry out an update's input in arrival order; the answer before and after it."""
        before = self._kind.answer(self.state)
        after = await self.inbox.answer(self.inbox.accept(item))
        return before, after

    async def run(self, restored: Iterable[fx.StartTimer]) -> None:
        """Until the object is gone; continues as new when the history is long enough."""
        for timer in restored:
            self._timers.start(timer)
        while True:
            await workflow.wait_condition(
                lambda: bool(self.inbox) or continue_due(self._max_history)
            )
            while self.inbox and not self._done():
                ticket, item = self.inbox.take()
                await self._process(item)
                self.inbox.done(ticket, self._kind.answer(self.state))
            self._show()
            if self._done() or continue_due(self._max_history):
                if self._start_over is not None and self.inbox and workflow.patched(ABANDONED):
                    self.inbox.abandon(REPLACED)  # the new object's run starts from its own
                # Updates wait for their input to be processed: let them answer first.
                await workflow.wait_condition(workflow.all_handlers_finished)
                if self.inbox and not self._done():
                    continue
                self._timers.cancel_all()
                if self._finished:
                    self._succeed()
                    return
                carried = self._kind.carry(self.state, self._start_over, self._max_history)
                workflow.continue_as_new(carried)

    def _succeed(self) -> None:
        """The object went, and its successor under the same name is already in the inbox: a
        signal that arrives as a run completes is handed to that run, which would drop it, and
        the forwarder has nothing more to say of the new object until it changes. So the new
        object gets a fresh run now (asked as a patch only when it happens)."""
        for item in reversed(self.inbox.pending()):
            fresh = self._kind.made_again(self.state, item, self._max_history)
            if fresh is not None and workflow.patched(MADE_AGAIN):
                workflow.continue_as_new(fresh)

    def _show(self) -> None:
        """The UI's current details: phase and reason, the kind's counts, the next delayed
        action. Set only when they change; they are not part of the history."""
        if self._progress is None:
            return
        parts = [self._headline or self._kind.answer(self.state)]
        if counts := self._progress(self.state):
            parts.append(counts)
        if (timer := self._timers.next()) is not None:
            when = timer.fires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            parts.append(f"next: {timer.summary} at {when}")
        details = " · ".join(parts)
        if details != self._details:
            self._details = details
            workflow.set_current_details(details)

    def _done(self) -> bool:
        return self._finished or self._start_over is not None

    def _timer_fired(self, timer: fx.StartTimer) -> None:
        self.inbox.internal(TimerFired(key=timer.key, timer=timer.timer))

    async def _process(self, item: I | AnyOutcome) -> None:
        before = self.state
        decision = self._kind.decide(before, item, workflow.now())
        self.state = decision.state
        self._kind.decided(before, self.state)
        effects, done = decision.effects, 0
        while done < len(effects):
            batch = self._batch(effects[done:]) if self._batch is not None else ()
            if len(batch) > 1:
                settled, failures = await writes.together(batch)
            else:
                settled, failures = 1, await self._alone(effects[done])
            done += settled
            for f in failures:
                self._failed(f)
            if any(f.namespace_gone for f in failures):
                break  # the namespace is going: the decision's other writes would be too

    async def _alone(self, effect: E | fx.Shared) -> list[writes.Failed]:
        try:
            await self._apply(effect)
        except ActivityError as e:
            return [writes.failed(getattr(effect, "kind", type(effect).__name__), e)]
        return []

    def _failed(self, f: writes.Failed) -> None:
        """Hand the failure to the core, or log it."""
        if self._report_failures:
            # Handled next, before anything else: the core decides what a failure costs.
            failed = ActionFailed(effect=f.effect, error=f.error, namespace_gone=f.namespace_gone)
            self.inbox.internal(failed, first=True)
        else:
            name = self._kind.ref(self.state).name
            workflow.logger.warning(
                "effect failed object=%s effect=%s error=%s", name, f.effect, f.error
            )

    async def _apply(self, effect: E | fx.Shared) -> None:
        match effect:
            case fx.RecordEvent():
                await self._record(effect)
            case fx.StartTimer():
                self._timers.start(effect)
            case fx.CancelTimer():
                self._timers.cancel(effect.key)
            case fx.PhaseChanged():
                self._phase_changed(effect)
            case fx.Finish():
                self._finished = True
            case fx.StartOver():
                self._start_over = effect.observed
            case fx.BindPlacements():
                result = await binding.bind(self._kind.ref(self.state).namespace, effect)
                if result.failed:
                    self.inbox.internal(BindOutcome(failed=result.failed), first=True)
            case fx.MarkUnschedulable():
                await binding.mark_unschedulable(self._kind.ref(self.state).namespace, effect)
            case fx.TellScheduler():
                await binding.tell_scheduler(effect)
            case fx.CheckPods():
                await self._check_pods(effect)
            case _:
                await self._kind.apply(effect)

    async def _check_pods(self, effect: fx.CheckPods) -> None:
        checked = await activity_call.run(
            pods.check_pods,
            PodsInput(namespace=self._kind.ref(self.state).namespace, names=effect.names),
            options.KUBE_WRITE,
            f"check {len(effect.names)} pods no watch reported",
        )
        if checked.absent:
            self.inbox.internal(PodsAbsent(names=checked.absent), first=True)

    def _phase_changed(self, effect: fx.PhaseChanged) -> None:
        visibility.upsert_changed([search_attributes.JOB_PHASE.value_set(effect.phase)])
        self._headline = f"{effect.phase}: {effect.reason}"
        if self._progress is None:
            workflow.set_current_details(self._headline)
        # The workflow meter records nothing on replay: one count per transition.
        metrics.JOB_PHASE_TRANSITIONS.on(workflow.metric_meter()).add(1, {"phase": effect.phase})
        ref = self._kind.ref(self.state)
        workflow.logger.info(
            "phase changed job=%s/%s from=%s to=%s reason=%s",
            ref.namespace,
            ref.name,
            effect.previous,
            effect.phase,
            effect.reason,
        )

    async def _record(self, effect: fx.RecordEvent) -> None:
        ref = self._kind.ref(self.state).model_dump()
        kind, reason, message = effect.type, effect.reason, effect.message
        await writes.record(RecordEventInput(**ref, type=kind, reason=reason, message=message))

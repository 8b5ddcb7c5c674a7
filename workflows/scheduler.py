"""SchedulerWorkflow: one durable gang scheduler per schedulerName (id `scheduler/<name>`).

A session runs every period (1 s by default, backing off while idle) and at once when work
arrives. Each session is one activity next to the cluster cache (snapshot, enqueue, allocate,
PodGroup status); its placements are assumed here, with an expiry, before one more activity
binds them all, so a worker that dies between decision and bind neither loses nor
double-books a node. A pod that could not be bound drops its assumption and is placed again.
Each session also reports, when it changed, which jobs wait in each queue and why: the queries
`pending_jobs` and `job_standing` answer from the last report (`scheduling.api.backlog`).

Patches in force:
- `caldera-session-folds-binding` (asked once per run): one activity per session and nothing
  else. A session binds what the previous one placed (recorded as assumptions when it
  returned), or, with nothing to bind, first waits for work in the worker next to the cluster cache
  (`activities.scheduler.informer`: a pod waiting for a node, a new PodGroup) for up to the period.
  So a session costs one activity and one workflow task: no timer, no `work_arrived` signals, no
  second activity to bind (the binding runs beside the session's own reads and writes, as it ran
  beside the next session before). Gangs with volumes to bind still go to `bind_session` in the
  background (volume binding may wait minutes for a provisioner).
- `caldera-handoffs-in-background` (before: `handoffs-in-background`, still honoured in
  histories that hold it): a session's placements are carried out while the next session
  runs (before it, each session waited for them all).
- `caldera-binds-in-session` (before: `binds-in-session`, likewise): this workflow binds its
  placements itself, in one activity per session (as Volcano's scheduler binds its own).
  Before it, each gang went to its JobWorkflow as a `pods_placed` signal and the job bound it:
  a signal, a workflow task and an activity per job, which made the server's throughput the
  pace of scheduling. Each job's history still shows where its pods went (the `pods_changed`
  that reports them Running names the node).
Both are asked only in runs started before `caldera-session-folds-binding`.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.messages import (
        Arrivals,
        BindSessionInput,
        JobPlacements,
        SessionInput,
        SessionReport,
    )
    from activities.scheduler import binding, sessions
    from controllers.scheduler import session
    from controllers.scheduler.session import SchedulerState
    from models import task_queues
    from models.signals import scheduler as scheduler_signals
    from scheduling.api import backlog
    from scheduling.api.backlog import Backlog, JobStanding, PendingJobs
    from workflows import activity_call
    from workflows.inbox import continue_due


FOLDS_BINDING = "caldera-session-folds-binding"
BINDS_IN_SESSION = "caldera-binds-in-session"
HANDOFFS_IN_BACKGROUND = "caldera-handoffs-in-background"
# The ids these two had before patch ids took the `caldera-` prefix: runs that asked them then
# hold these markers. Asked only when the new id is not in the history (a new run records the
# new id alone; replaying an old run, `patched(new)` is False and `patched(old)` finds its
# marker). Proven by tests/workflows/histories/scheduler_binds_in_session.json.
LEGACY_IDS = {
    BINDS_IN_SESSION: "binds-in-session",
    HANDOFFS_IN_BACKGROUND: "handoffs-in-background",
}


def _patched(patch_id: str) -> bool:
    """`workflow.patched` under the `caldera-` id, or under the id it had before (`LEGACY_IDS`)
    for a run whose history holds that one; the second is not asked once the first is True."""
    return workflow.patched(patch_id) or workflow.patched(LEGACY_IDS[patch_id])


class SchedulerWorkflowInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: SchedulerState = SchedulerState()
    period_ms: int = 1000
    max_history: int = 0  # 0: continue as new when the server suggests it
    to_bind: list[JobPlacements] = []  # placed by the last session, bound by the next
    arrivals: Arrivals | None = None  # where the last session read the arrivals
    backlog: Backlog = Backlog()  # each queue's waiting jobs, as the last session reported


@workflow.defn(name=scheduler_signals.SCHEDULER_WORKFLOW)
class SchedulerWorkflow:
    @workflow.init
    def __init__(self, start: SchedulerWorkflowInput) -> None:
        self._state = start.state
        self._work = False
        self._failed: list[scheduler_signals.BindFailed] = []
        self._period = timedelta(milliseconds=start.period_ms)
        self._max_history = start.max_history
        self._handoffs: set[asyncio.Task[None]] = set()
        self._to_bind = list(start.to_bind)
        self._arrivals = start.arrivals
        self._just_bound = False  # the last session bound pods
        # What the queries `pending_jobs` and `job_standing` answer from: the last digest a
        # session reported (a report without one means unchanged). Not in SchedulerState: only
        # the queries read it.
        self._backlog = start.backlog

    @workflow.signal(name=scheduler_signals.SIGNAL_WORK_ARRIVED)
    def work_arrived(self, work: scheduler_signals.WorkArrived) -> None:
        self._work = True

    @workflow.signal(name=scheduler_signals.SIGNAL_BIND_FAILED)
    def bind_failed(self, failed: scheduler_signals.BindFailed) -> None:
        self._failed.append(failed)
        self._work = True

    @workflow.query
    def assumed(self) -> dict[str, str]:
        return {pod: a.node for pod, a in sorted(self._state.assumed.items())}

    @workflow.query
    def pending_jobs(self, queue: str) -> PendingJobs:
        """The jobs waiting in `queue`, in the order the scheduler tries them, with why."""
        return backlog.pending_jobs(self._backlog, queue)

    @workflow.query
    def job_standing(self, job: str) -> JobStanding | None:
        """Where job `<namespace>/<name>` waits; None: not among the waiting jobs listed."""
        namespace, _, name = job.partition("/")
        return backlog.job_standing(self._backlog, namespace, name)

    @workflow.run
    async def run(self, start: SchedulerWorkflowInput) -> None:
        folds = workflow.patched(FOLDS_BINDING)
        while True:
            if not folds:
                # The period elapsing without work is a regular session.
                with contextlib.suppress(TimeoutError):
                    await workflow.wait_condition(
                        lambda: self._work,
                        timeout=session.period(self._state, self._period),
                        timeout_summary="next session",
                    )
            self._work = False
            for failed in self._failed:
                self._state = session.dropped(self._state, failed)
            self._failed.clear()
            await (self._folded_session() if folds else self._session())
            if continue_due(self._max_history):
                await workflow.wait_condition(
                    lambda: workflow.all_handlers_finished() and not self._handoffs
                )
                workflow.continue_as_new(
                    SchedulerWorkflowInput(
                        state=self._state,
                        period_ms=int(self._period.total_seconds() * 1000),
                        max_history=self._max_history,
                        to_bind=self._to_bind,
                        arrivals=self._arrivals,
                        backlog=self._backlog,
                    ),
                    # Its own task queue: its tasks never wait behind the jobs' (a run started
                    # on the shared queue before moves there here).
                    task_queue=task_queues.SCHEDULER,
                )

    async def _folded_session(self) -> None:
        """One activity: bind the last session's placements (or wait for work), then place."""
        now = workflow.now()
        number = self._state.session
        binding_now, self._to_bind = self._to_bind, []
        pods = sum(len(j.placements) for j in binding_now)
        # Right after a binding, the next session looks at once: it sees those pods bound and
        # writes their PodGroups' status (held until then).
        settle = binding_now or self._just_bound
        wait = 0.0 if settle else session.period(self._state, self._period).total_seconds()
        self._just_bound = bool(binding_now)
        request = SessionInput(
            scheduler_name=self._state.name,
            session=number,
            assumed=session.live(self._state, now),
            assumed_claims=session.claims_in_flight(self._state, now),
            bind=binding_now,
            wait_seconds=wait,
            since=self._arrivals,
            bind_next=True,
        )
        summary = f"session {number}, binding {pods} pods" if pods else f"session {number}"
        result = await self._schedule(request, summary)
        if result is None:
            # What it was to bind may or may not be bound: placed again once the cache says.
            unbound = {
                f"{j.namespace}/{p.pod}": "session failed"
                for j in binding_now
                for p in j.placements
            }
            self._state = session.dropped(self._state, scheduler_signals.BindFailed(pods=unbound))
            self._arrivals = None
            return
        self._arrivals = result.arrivals
        if result.backlog is not None:
            self._backlog = result.backlog
        if result.bind_failed:
            self._state = session.dropped(
                self._state, scheduler_signals.BindFailed(pods=result.bind_failed)
            )
        placements = [(j.job_workflow_id, j.namespace, j.placements) for j in result.jobs]
        self._state, _ = session.after_session(
            self._state, placements, result.bound, result.pending, workflow.now()
        )
        with_volumes = [j for j in result.jobs if j.binds_volumes]
        self._to_bind = [j for j in result.jobs if not j.binds_volumes]
        if with_volumes:
            task = asyncio.create_task(self._bind(number, with_volumes))
            self._handoffs.add(task)
            task.add_done_callback(self._handoffs.discard)

    async def _schedule(self, request: SessionInput, summary: str) -> SessionReport | None:
        """The session activity; None when it failed (the next session is its work)."""
        try:
            return await activity_call.run(
                sessions.schedule_session, request, options.SESSION, summary
            )
        except ActivityError as e:
            workflow.logger.warning(
                "session failed scheduler=%s session=%d error=%s",
                self._state.name,
                request.session,
                e.cause,
            )
            self._state = self._state.model_copy(update={"session": request.session + 1})
            return None

    async def _session(self) -> None:
        now = workflow.now()
        number = self._state.session
        request = SessionInput(
            scheduler_name=self._state.name, session=number, assumed=session.live(self._state, now)
        )
        result = await self._schedule(request, f"session {number}")
        if result is None:
            return
        if result.backlog is not None:
            self._backlog = result.backlog
        placements = [(j.job_workflow_id, j.namespace, j.placements) for j in result.jobs]
        self._state, handoffs = session.after_session(
            self._state, placements, result.bound, result.pending, workflow.now()
        )
        binds = _patched(BINDS_IN_SESSION)
        background = _patched(HANDOFFS_IN_BACKGROUND)  # asked every session, as before
        if binds and not result.jobs:
            return
        work = self._bind(number, result.jobs) if binds else self._hand_over_all(handoffs)
        if background:
            # The assumptions are recorded: the next session may run while these are carried out.
            task = asyncio.create_task(work)
            self._handoffs.add(task)
            task.add_done_callback(self._handoffs.discard)
        else:
            await work

    async def _bind(self, number: int, jobs: list[JobPlacements]) -> None:
        """Bind what session `number` placed; the pods that failed are placed again."""
        pods = sum(len(j.placements) for j in jobs)
        try:
            result = await activity_call.run(
                binding.bind_session,
                BindSessionInput(session=number, jobs=jobs),
                options.SESSION_BINDING,
                f"bind {pods} pods of {len(jobs)} jobs (session {number})",
            )
        except ActivityError as e:
            workflow.logger.warning("binding failed session=%d error=%s", number, e.cause)
            pods_of = {
                f"{j.namespace}/{p.pod}": "binding failed" for j in jobs for p in j.placements
            }
            self._state = session.dropped(self._state, scheduler_signals.BindFailed(pods=pods_of))
            return
        if result.failed:
            self._state = session.dropped(
                self._state, scheduler_signals.BindFailed(pods=result.failed)
            )

    async def _hand_over_all(self, handoffs: list[session.Handoff]) -> None:
        # All gangs are handed over at once: one round trip per session, not one per job.
        outcomes = await asyncio.gather(
            *(self._hand_over(h) for h in handoffs), return_exceptions=False
        )
        for failed in outcomes:
            if failed is not None:
                self._state = session.dropped(self._state, failed)

    async def _hand_over(self, handoff: session.Handoff) -> scheduler_signals.BindFailed | None:
        """Signal one JobWorkflow its placements; None when delivered."""
        job = workflow.get_external_workflow_handle(handoff.job)
        try:
            await job.signal(scheduler_signals.SIGNAL_PODS_PLACED, handoff.placed)
        except Exception as e:
            workflow.logger.info("placement not delivered job=%s error=%s", handoff.job, e)
            pods = handoff.placed.placements
            return scheduler_signals.BindFailed(
                pods={f"{handoff.namespace}/{p.pod}": "job workflow unavailable" for p in pods}
            )
        return None

"""DispatchWorkflow: one durable workflow per Volcano Job dispatched to a worker cluster (id
`dispatch/<namespace>/<name>`, `models.dispatch`), started by the forwarder for a Job whose
queue names `extendClusters`, in place of its JobWorkflow.

It runs on the entity shell (`workflows.entity`) with the dispatch core
(`controllers.dispatch`): the core decides where the job goes, what is mirrored, when it
moves; this shell runs the activities (`activities.dispatch.copies`, `.follow` on the dispatcher's
task queue, `.mirroring` on the manager, local) and keeps one long poll of the current copy
running beside the inbox, so a Command or the Job's deletion never waits for a poll to end.
Each answer goes back to the core as an input; the history is the job's story (where it went,
why it moved, what was cleaned), each step an activity or timer with a summary.

A worker restarted anywhere in between replays to the same state: the state names every copy
by cluster and generation before it is made, and every remote call is idempotent (create if
absent, by name, origin uid and generation; delete fenced by the same and the copy's uid).
The Volcano commands are updates here too (as on a JobWorkflow), passed on to the copy.

Patches in force: `PASS_SPEC` (the manager Job's spec changes passed to the copy; a run that
began before it passes none); `SETTLE_POLLS` (a run ends once its stopped long polls' cancels
are answered); `SPREAD` (the cluster drawn among those that fit, `choose.draw`);
`STALE_DEADLINE` (a stale copy whose cluster stays silent past the queue's deadline is given
up, `following.deleted`).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Final, assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import jobs
    from activities.dispatch import copies, follow, mirroring
    from activities.messages import DeleteJobInput
    from controllers import effects as fx
    from controllers.dispatch import controller, steps
    from controllers.dispatch import effects as dfx
    from controllers.dispatch.results import (
        CommandSent,
        CopyDeleted,
        CopyUpdated,
        Followed,
        Probed,
        Resumed,
    )
    from controllers.dispatch.state import DispatchState
    from controllers.outcomes import ActionFailed, AnyOutcome
    from controllers.parsed import ParsedJob
    from models import dispatch as dispatch_model
    from models import vcjob
    from models.bus import Action
    from models.signals import dispatch as dispatch_signals
    from models.signals import job as job_signals
    from service import search_attributes
    from workflows import activity_call, visibility
    from workflows.commands import VolcanoCommands
    from workflows.entity import Entity, Ref, parsed
    from workflows.handlers import TakesDeletion

PASS_SPEC: Final = "caldera-dispatch-pass-spec"
SETTLE_POLLS: Final = "caldera-dispatch-settle-polls"
SPREAD: Final = "caldera-dispatch-spread"
STALE_DEADLINE: Final = "caldera-dispatch-stale-deadline"


class DispatchInput(BaseModel):
    """Start input and continue-as-new carrier; the forwarder starts runs with
    `models.signals.dispatch.DispatchStart`, whose fields must stay a subset of these."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: DispatchState | None = None  # None: a new dispatch
    observed: dispatch_signals.DispatchObserved | None = None  # None: wait for the forwarder
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


class DispatchView(BaseModel):
    """The `dispatch` query: where the job runs, what it waits for, what is left to clean."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    phase: str
    generation: int
    cluster: str  # "": none
    unreachable: bool
    waiting: str
    stale: list[str]  # "<cluster>/<generation>"
    held_commands: int
    deleted: bool


@workflow.defn(name=dispatch_model.DISPATCH_WORKFLOW)
class DispatchWorkflow(VolcanoCommands, TakesDeletion):
    @workflow.init
    def __init__(self, start: DispatchInput) -> None:
        self._entity = Entity[DispatchState, controller.Input, dfx.Own](
            self, start.state or DispatchState(), start.max_history, progress=_progress
        )
        self._following: asyncio.Task[None] | None = None  # None: no long poll running
        self._stopping: list[asyncio.Task[None]] = []  # polls cancelled, their cancel unanswered
        if start.state is not None:
            self._entity.inbox.internal(Resumed())
        if start.observed is not None:
            self._observe(start.observed)

    @workflow.run
    async def run(self, start: DispatchInput) -> None:
        await self._entity.run(steps.restored(self._entity.state))
        self._stopping = [t for t in self._stopping if not t.done()]
        if self._stopping and workflow.patched(SETTLE_POLLS):
            # A poll's cancel answered after the end would fail the closing task: wait for it.
            await workflow.wait_condition(lambda: all(t.done() for t in self._stopping))

    def local_writes(self) -> bool:
        """Every run of this workflow began with local writes in force: no patch marker."""
        return True

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self, state: DispatchState, item: controller.Input | AnyOutcome, now: datetime
    ) -> controller.Decision:
        return controller.decide(state, item, now)

    def answer(self, state: DispatchState) -> str:
        return state.ended_here or state.phase or "Pending"

    def ref(self, state: DispatchState) -> Ref:
        who = state.identity
        return Ref(**who.model_dump(), api_version=vcjob.API_VERSION, kind=vcjob.KIND)

    def decided(self, before: DispatchState, after: DispatchState) -> None:
        if before.job is None and after.job is not None:
            who = after.identity
            visibility.upsert_changed(
                [
                    search_attributes.NAMESPACE.value_set(who.namespace),
                    search_attributes.JOB_NAME.value_set(who.name),
                    search_attributes.QUEUE.value_set(after.job.spec.queue or ""),
                ]
            )

    def carry(
        self,
        state: DispatchState,
        start_over: job_signals.JobObserved | None,
        max_history: int,
    ) -> DispatchInput:
        fresh = start_over if isinstance(start_over, dispatch_signals.DispatchObserved) else None
        return DispatchInput(
            state=None if start_over else state, observed=fresh, max_history=max_history
        )

    def made_again(
        self, state: DispatchState, item: object, max_history: int
    ) -> DispatchInput | None:
        if not isinstance(item, ParsedJob) or item.job.metadata.uid == state.identity.uid:
            return None
        return self.carry(state, item.signal, max_history)

    # -- inputs -------------------------------------------------------------------------------

    def _observe(self, observed: dispatch_signals.DispatchObserved) -> None:
        job = parsed(vcjob.Job, observed.job, job_signals.SIGNAL_JOB_OBSERVED)
        if job is not None:
            self._entity.accept(ParsedJob(signal=observed, job=job))

    @workflow.signal(name=job_signals.SIGNAL_JOB_OBSERVED)
    def job_observed(self, observed: dispatch_signals.DispatchObserved) -> None:
        self._observe(observed)

    # -- the Volcano commands as updates (`workflows.commands`), as a JobWorkflow has them ------

    def _refuse(self, action: Action) -> None:
        state = self._entity.state
        if state.deleted or state.job is None:
            why = f"job {state.key}: {action} refused: the job is not there"
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)

    @workflow.query(name="dispatch")
    def view(self) -> DispatchView:
        s = self._entity.state
        return DispatchView(
            phase=self.answer(s),
            generation=s.generation,
            cluster=s.current.cluster if s.current else "",
            unreachable=s.unreachable_since is not None,
            waiting=s.waiting,
            stale=[f"{x.target.cluster}/{x.target.generation}" for x in s.stale],
            held_commands=len(s.commands),
            deleted=s.deleted,
        )

    # -- the effects only a dispatch has -------------------------------------------------------

    def _report(self, result: controller.Input) -> None:
        """An activity's answer the core decides on: handled next, before anything else."""
        self._entity.inbox.internal(result, first=True)

    def _copy(self, target: dispatch_model.RemoteCopy) -> dict[str, Any]:
        """Which copy, as every remote activity's input names it (`remote.CopyInput`)."""
        who = self._entity.state.identity
        return {"namespace": who.namespace, "name": who.name, "origin": who.uid, "target": target}

    async def apply(self, effect: dfx.Own) -> None:
        who = self._entity.state.identity
        match effect:
            case dfx.ProbeClusters():
                probed = await self._probe(effect)
                if workflow.patched(SPREAD):
                    probed = probed.model_copy(update={"spread": True})
                self._report(probed)
            case dfx.CreateCopy():
                made = await activity_call.run(
                    copies.create_copy,
                    copies.CreateCopyInput(
                        **self._copy(effect.target),
                        job=effect.job,
                        lease_seconds=effect.lease_seconds,
                    ),
                    options.CREATE_COPY,
                    f"create copy on {steps.described(effect.target)}",
                )
                self._report(made)
            case dfx.UpdateCopy():
                if workflow.patched(PASS_SPEC):
                    self._report(await self._update(effect))
            case dfx.FollowCopy():
                self._stop_following()
                self._following = asyncio.create_task(self._follow(effect))
            case dfx.StopFollowing():
                self._stop_following()
            case dfx.DeleteCopy():
                self._report(await self._delete(effect))
            case dfx.SendCommand():
                self._report(await self._send(effect))
            case dfx.WriteStatus():
                await activity_call.run(
                    mirroring.write_dispatch_status,
                    mirroring.ManagerStatusInput(
                        namespace=who.namespace, name=who.name, status=effect.status
                    ),
                    options.KUBE_WRITE,
                    f"write status: {effect.why}",
                )
            case dfx.MarkDispatched():
                await activity_call.run(
                    mirroring.mark_dispatched,
                    mirroring.MarkInput(**who.model_dump(), cluster=effect.cluster),
                    options.KUBE_WRITE,
                    f"mark dispatched to {effect.cluster or '(none yet)'}",
                )
            case dfx.MarkLeftBehind():
                await activity_call.run(
                    mirroring.mark_left_behind,
                    mirroring.LeftBehindInput(**who.model_dump(), copies=effect.copies),
                    options.KUBE_WRITE,
                    "mark left behind: " + ", ".join(effect.copies),
                )
            case dfx.MirrorEvents():
                await activity_call.run(
                    mirroring.mirror_events,
                    mirroring.MirrorEventsInput(
                        **who.model_dump(), cluster=effect.cluster, events=effect.events
                    ),
                    options.KUBE_EVENT,
                    f"mirror {len(effect.events)} events of {effect.cluster}",
                )
            case fx.DeleteJob():
                await activity_call.run(
                    jobs.delete_job,
                    DeleteJobInput(namespace=effect.namespace, name=effect.name, uid=effect.uid),
                    options.KUBE_WRITE,
                    "delete job: ttlSecondsAfterFinished expired",
                )
            case _:
                assert_never(effect)

    async def _probe(self, effect: dfx.ProbeClusters) -> Probed:
        try:
            return await activity_call.run(
                copies.probe_clusters,
                copies.ProbeInput(clusters=effect.clusters, queue=effect.queue),
                options.REMOTE_CALL,
                "probe clusters " + ", ".join(effect.clusters),
            )
        except ActivityError as e:
            workflow.logger.warning("probe failed job=%s: %s", self._entity.state.key, e)
            return Probed(statuses=[])  # none answered: the core waits and probes again

    async def _delete(self, effect: dfx.DeleteCopy) -> CopyDeleted:
        target = effect.target
        try:
            deleted = await activity_call.run(
                copies.delete_copy,
                copies.DeleteCopyInput(**self._copy(target), why=effect.why),
                options.REMOTE_CALL,
                f"delete copy on {steps.described(target)}: {effect.why}",
            )
        except ActivityError as e:  # tried again later, as a silent cluster is
            error = str(e.cause or e)
            deleted = CopyDeleted(
                cluster=target.cluster, generation=target.generation, reachable=False, error=error
            )
        if not deleted.reachable and workflow.patched(STALE_DEADLINE):
            deleted = deleted.model_copy(update={"deadline": True})
        return deleted

    async def _update(self, effect: dfx.UpdateCopy) -> CopyUpdated:
        target = effect.target
        try:
            return await activity_call.run(
                copies.update_copy,
                copies.UpdateCopyInput(**self._copy(target), job=effect.job),
                options.REMOTE_CALL,
                f"pass the spec change to {steps.described(target)}",
            )
        except ActivityError as e:  # its retries spent: as a silent cluster, tried on reach
            error = str(e.cause or e)
            return CopyUpdated(
                cluster=target.cluster, generation=target.generation, reachable=False, error=error
            )

    async def _send(self, effect: dfx.SendCommand) -> CommandSent:
        target, command = effect.target, effect.command
        try:
            return await activity_call.run(
                copies.send_command,
                copies.SendCommandInput(
                    **self._copy(target), command=command, serial=effect.serial
                ),
                options.REMOTE_CALL,
                f"send {command.action} to {steps.described(target)}",
            )
        except ActivityError as e:  # refused there for good: said on the Job, not held
            failed = ActionFailed(effect="SendCommand", error=f"{command.action}: {e.cause or e}")
            self._entity.inbox.internal(failed, first=True)
            return CommandSent(
                cluster=target.cluster, generation=target.generation, command=command
            )

    async def _follow(self, effect: dfx.FollowCopy) -> None:
        """One long poll, beside the inbox; its answer joins the inbox like a signal."""
        target = effect.target
        renew = ", renew its lease" if effect.renew else ""
        try:
            result = await activity_call.run(
                follow.follow_copy,
                follow.FollowInput(
                    **self._copy(target),
                    known=effect.known,
                    events=effect.events,
                    renew=effect.renew,
                    lease_seconds=effect.lease_seconds,
                    move_on_drain=effect.move_on_drain,
                ),
                options.FOLLOW_COPY,
                f"follow copy on {steps.described(target)}{renew}",
            )
        except ActivityError as e:  # its retries spent: as a cluster that does not answer
            if isinstance(e.cause, CancelledError):
                return  # stopped (`StopFollowing`): nothing waits for its answer
            error = str(e.cause or e)
            result = Followed(
                cluster=target.cluster, generation=target.generation, reachable=False, error=error
            )
        self._entity.inbox.internal(result)

    def _stop_following(self) -> None:
        if self._following is not None and not self._following.done():
            self._following.cancel()
            self._stopping = [*(t for t in self._stopping if not t.done()), self._following]
        self._following = None


def _progress(state: DispatchState) -> str:
    return state.progress()

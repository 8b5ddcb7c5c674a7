"""CronRunWorkflow: one run of a CronJob, started by its Temporal Schedule (id
`cronrun/<namespace>/<name>-<nominal time>`), alive exactly as long as the Job it made.

It reads its nominal time from the schedule's `TemporalScheduledStartTime`, asks the
CronJobWorkflow whether that time is still due (`run_due`; the answer comes back by signal),
creates the Job it is given, reports it (`run_created`), and waits until the CronJobWorkflow
tells it the Job finished or went (`run_finished`). Because it stays open while its Job runs,
the schedule's overlap policy acts on real runs: under Forbid (BufferAll) the next run waits
for this one; under Replace (CancelOther) this one is cancelled, deletes its Job, tells the
CronJob (`run_ended`) and only then closes, so the next run starts after its Job is gone.
Its result says what became of the run, for the UI and `temporal workflow list`.

Patches in force: none yet.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import cronjobs, jobs
    from activities.messages import DeleteJobInput
    from controllers.cronjob.runs import FINISHED
    from models import keys
    from models.signals import cronjob as cronjob_signals
    from workflows import activity_call, messaging

SCHEDULED_START: Final = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
# A CronJob deleted while its run asked gives no answer; a run held that long is late anyway.
ANSWER_WAIT: Final = timedelta(minutes=5)


@workflow.defn(name=cronjob_signals.CRON_RUN_WORKFLOW)
class CronRunWorkflow:
    @workflow.init
    def __init__(self, start: cronjob_signals.CronRunStart) -> None:
        self._answer: cronjob_signals.RunAnswer | None = None  # None: not answered yet
        self._finished: cronjob_signals.RunFinished | None = None  # None: the Job has not ended

    def local_writes(self) -> bool:
        """Every run of this workflow began with local writes in force: no patch marker."""
        return True

    @workflow.signal(name=cronjob_signals.SIGNAL_RUN_ANSWERED)
    def run_answered(self, answer: cronjob_signals.RunAnswer) -> None:
        self._answer = answer

    @workflow.signal(name=cronjob_signals.SIGNAL_RUN_FINISHED)
    def run_finished(self, finished: cronjob_signals.RunFinished) -> None:
        self._finished = finished

    @workflow.run
    async def run(self, start: cronjob_signals.CronRunStart) -> str:
        info = workflow.info()
        owner = keys.cronjob_workflow_id(start.namespace, start.name)
        scheduled = info.typed_search_attributes.get(SCHEDULED_START) or workflow.now()
        due = cronjob_signals.RunDue(workflow_id=info.workflow_id, scheduled=scheduled)
        if not await messaging.tell(owner, cronjob_signals.SIGNAL_RUN_DUE, due):
            return "no Job: the CronJob has no workflow"
        try:
            await workflow.wait_condition(
                lambda: self._answer is not None,
                timeout=ANSWER_WAIT,
                timeout_summary="the CronJob's answer",
            )
        except TimeoutError:
            return "no Job: the CronJob did not answer (it was deleted meanwhile)"
        answer = self._answer
        if answer is None or answer.job is None:
            return f"no Job: {answer.reason if answer else ''}"
        name = answer.job.metadata.name or ""
        created = await self._create(answer, info.workflow_id)
        await messaging.tell(owner, cronjob_signals.SIGNAL_RUN_CREATED, created)
        if created.error or not created.uid or not created.owned or created.phase in FINISHED:
            return f"no Job: {created.error or f'job {name} exists already'}"
        workflow.set_current_details(f"following Job `{name}`")
        try:
            await workflow.wait_condition(lambda: self._finished is not None)
        except asyncio.CancelledError:
            # Replace: the schedule cancelled this run for the next one; its Job goes first.
            await self._replaced(start.namespace, created, owner)
            raise
        phase = self._finished.phase if self._finished else ""
        return f"Job {name}: {phase}"

    async def _create(
        self, answer: cronjob_signals.RunAnswer, workflow_id: str
    ) -> cronjob_signals.RunCreated:
        job = answer.job
        assert job is not None
        name = job.metadata.name or ""
        owner_uid = next((r.uid for r in job.metadata.owner_references or []), "")
        try:
            made = await activity_call.run(
                cronjobs.create_cron_job_run,
                cronjobs.CreateRunJobInput(job=job, owner_uid=owner_uid),
                options.KUBE_WRITE,
                f"create job {name}",
            )
        except ActivityError as e:
            error = f"Failed to create job: {e.cause or e}"
            return cronjob_signals.RunCreated(workflow_id=workflow_id, name=name, error=error)
        return cronjob_signals.RunCreated(
            workflow_id=workflow_id,
            name=name,
            uid=made.uid,
            resource_version=made.resource_version,
            created=made.created,
            owned=made.owned,
            phase=made.phase,
        )

    async def _replaced(
        self, namespace: str, created: cronjob_signals.RunCreated, owner: str
    ) -> None:
        try:
            await activity_call.run(
                jobs.delete_job,
                DeleteJobInput(namespace=namespace, name=created.name, uid=created.uid),
                options.KUBE_WRITE,
                f"delete job {created.name}: replaced by the next run",
            )
        except ActivityError as e:
            workflow.logger.warning("replaced job not deleted job=%s: %s", created.name, e)
        ended = cronjob_signals.RunEnded(workflow_id=workflow.info().workflow_id, name=created.name)
        await messaging.tell(owner, cronjob_signals.SIGNAL_RUN_ENDED, ended)

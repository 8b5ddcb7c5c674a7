"""`caldera job history` follows a job's continue-as-new chain: one story across runs, oldest
first, each run's entries labelled with its run id (time-skipping server, real JobWorkflow)."""

from __future__ import annotations

import uuid

from cli import remote
from cli.clients import Connections
from cli.main import parser
from models.signals import job as job_signals
from tests.builders import make_job
from tests.workflows.harness import UID, Harness, last_run, phase_is, pod, pods_changed, until
from workflows.job import JobWorkflow, JobWorkflowInput


async def test_history_follows_the_continue_as_new_chain(harness: Harness) -> None:
    manifest = make_job("chain", namespace="test").task("worker", replicas=2).manifest()
    manifest["metadata"] |= {"uid": UID, "generation": 1}
    wid = f"vcjob/test/chain-{uuid.uuid4().hex[:8]}"
    client = harness.env.client
    handle = await client.start_workflow(
        JobWorkflow.run,
        JobWorkflowInput(
            settings=job_signals.ControllerSettings(scheduler_override="default-scheduler"),
            max_history=40,
        ),
        id=wid,
        task_queue=harness.task_queue,
        start_signal=job_signals.SIGNAL_JOB_OBSERVED,
        start_signal_args=[job_signals.JobObserved(job=manifest)],
    )
    await pods_changed(handle, pod("chain", "worker", 0), pod("chain", "worker", 1))
    await until(handle, phase_is("Running"), "Running")
    for restarts in range(1, 41):  # noise that makes the history long
        await pods_changed(handle, pod("chain", "worker", 0, restart_count=restarts % 2))
    current = await last_run(client, wid, max_history=40)
    await until(current, phase_is("Running"), "noise carried out")
    latest = (await current.describe()).run_id
    first = handle.result_run_id
    assert latest != first, "the workflow continued as new"

    args = parser().parse_args(["job", "history", "chain", "-n", "test"])
    conn = Connections(args, temporal_client=client)
    entries = await remote.timeline(conn, wid, "read the history")

    runs = [e.run_id for e in entries]
    assert runs[0] == first and runs[-1] == latest
    assert runs == sorted(runs, key=runs.index)  # each run's entries together, in chain order
    assert len(set(runs)) >= 2
    starts = [e.detail for e in entries if e.kind == "started"]
    continued = [e.detail for e in entries if e.kind == "continued as new"]
    assert starts[0] == "JobWorkflow"
    assert len(starts) == len(set(runs)) and len(continued) == len(starts) - 1
    for older, newer in zip(sorted(set(runs), key=runs.index), starts[1:], strict=False):
        assert newer == f"JobWorkflow, continued from run {older}"
    assert continued[-1] == f"next run {latest}"
    assert [e.detail for e in entries if e.kind == "phase"][:2] == ["Pending", "Running"]

    newest = await remote.timeline(conn, wid, "read the history", max_runs=1)
    assert {e.run_id for e in newest} == {latest}
    assert newest[0].detail.startswith("JobWorkflow, continued from run ")

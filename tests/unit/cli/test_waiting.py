"""`caldera queue pending` and `caldera job why`: the flags, the table and its footer, and what
`job why` says of a job that waits, waits beyond the list, does not wait at all, or was
dispatched to a worker cluster (the scheduler's and the job's workflow queries, and the Job's
route, are fakes here)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cli import jobroute, remote, waiting
from cli.clients import CliError, Connections
from cli.main import parser
from models.scheduling import PodGroupPhase
from models.signals import job as job_signals
from scheduling.api.backlog import JobStanding, PendingJob, PendingJobs
from tests.unit.cli.dispatchview import dispatch_view
from workflows.dispatch import DispatchView

pytestmark = pytest.mark.unit

QUOTA = "queue resource quota insufficient: queue research"
NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
LINE = PendingJobs(
    queue="research",
    total=5,
    jobs=(
        PendingJob(
            position=1,
            namespace="team-a",
            name="train",
            phase=PodGroupPhase.INQUEUE,
            reason="",
            estimated_start=NOW + timedelta(minutes=12),
        ),
        PendingJob(
            position=2, namespace="team-b", name="eval", phase=PodGroupPhase.PENDING, reason=QUOTA
        ),
    ),
)
STANDING = JobStanding(
    namespace="team-b",
    name="eval",
    queue="research",
    position=2,
    total=5,
    phase=PodGroupPhase.PENDING,
    reason=QUOTA,
)


def _parse(*argv: str) -> argparse.Namespace:
    return parser().parse_args(list(argv))


def _view(phase: str) -> job_signals.JobView:
    return job_signals.JobView(
        namespace="team-b",
        name="eval",
        uid="uid-1",
        phase=phase,
        version=0,
        retry_count=0,
        queue="research",
        pod_group_phase="Inqueue" if phase == "Pending" else "Running",
        tasks=[],
        delayed=[],
    )


def test_the_flags() -> None:
    args = _parse("queue", "pending", "research", "-o", "json")
    assert (args.name, args.scheduler, args.output) == ("research", "volcano", "json")
    args = _parse("job", "why", "eval", "-n", "team-b", "--scheduler", "gpu")
    assert (args.name, args.namespace, args.scheduler) == ("eval", "team-b", "gpu")


def test_the_table_has_a_footer_when_the_list_is_capped() -> None:
    lines = waiting.render_pending(LINE, NOW).splitlines()
    assert lines[0].split() == ["POSITION", "NAMESPACE", "JOB", "PHASE", "STARTS", "REASON"]
    assert lines[1].split() == ["1", "team-a", "train", "Inqueue", "~12m", "-"]
    assert lines[2].split()[:5] == ["2", "team-b", "eval", "Pending", "-"]
    assert lines[2].endswith(QUOTA)
    assert lines[-1] == "showing the first 2 of 5 jobs waiting in research"
    whole = LINE.model_copy(update={"total": 2})
    assert waiting.pending_footer(whole) is None
    assert len(waiting.render_pending(whole, NOW).splitlines()) == 3


@pytest.mark.parametrize(
    ("at", "runs", "text"),
    [
        (NOW + timedelta(minutes=3), 12, "in ~3m (2026-12-06 12:03 UTC): the jobs ahead"),
        (NOW - timedelta(seconds=5), 12, "any moment (2026-12-06 11:59 UTC)"),
        (None, 0, "no estimate: no job of the queue has finished yet"),
        (None, 12, "not under the queue's current capacity"),
    ],
)
def test_the_estimate_says_what_it_rests_on(at: datetime | None, runs: int, text: str) -> None:
    said = waiting.starts_text(at, NOW, runs, 95.0)
    assert said.startswith(text)
    if at is not None:
        assert "last 12 runs did (median 95s)" in said


def test_why_of_a_listed_job() -> None:
    summary = waiting.why_summary("team-b", "eval", STANDING, None, None)
    assert summary == {
        "namespace": "team-b",
        "name": "eval",
        "waiting": True,
        "queue": "research",
        "position": 2,
        "total": 5,
        "phase": "Pending",
        "reason": QUOTA,
        "estimated_start": None,
        "runs": 0,
        "median_s": None,
    }
    assert waiting.render_why(summary, NOW).splitlines() == [
        "Job:       team-b/eval",
        "Queue:     research",
        "Position:  2 of 5",
        "Phase:     Pending",
        f"Reason:    {QUOTA}",
        "Starts:    no estimate: no job of the queue has finished yet to expect one from",
    ]


@pytest.mark.parametrize(
    ("view", "queue", "note"),
    [
        (_view("Running"), None, "the job is Running: it does not wait in a queue"),
        (_view("Pending"), LINE, "waits in queue research behind the first 2 listed (5 waiting)"),
        (
            _view("Pending"),
            LINE.model_copy(update={"total": 2}),
            "no session has listed it yet (its PodGroup is new, or being admitted)",
        ),
    ],
)
def test_why_of_a_job_not_listed_says_what_it_does(
    view: job_signals.JobView, queue: PendingJobs | None, note: str
) -> None:
    summary = waiting.why_summary("team-b", "eval", None, view, queue)
    assert (summary["waiting"], summary["note"]) == (False, note)
    assert waiting.render_why(summary, NOW).splitlines()[-1] == note


def test_why_of_a_job_without_a_workflow() -> None:
    summary = waiting.why_summary("team-b", "gone", None, "workflow not found", None)
    assert summary["waiting"] is False and summary["note"].endswith(": workflow not found")
    assert waiting.render_why(summary, NOW).splitlines()[0] == "Job:  team-b/gone"


def _dispatch(cluster: str = "", waiting: str = "") -> DispatchView:
    if cluster:
        return dispatch_view(phase="Running", generation=2, cluster=cluster)
    return dispatch_view(waiting=waiting)


@pytest.mark.parametrize(
    ("view", "lines"),
    [
        pytest.param(
            _dispatch(cluster="worker-1"),
            [
                "Job:      team-b/eval",
                "Phase:    Running",
                "Cluster:  worker-1",
                "dispatched to worker cluster worker-1 (generation 2): it waits, if it does, "
                "in that cluster's scheduler",
            ],
            id="placed",
        ),
        pytest.param(
            _dispatch(waiting="no cluster has room: worker-0 lacks 8 cpu"),
            [
                "Job:      team-b/eval",
                "Phase:    Pending",
                "Cluster:  (none)",
                "waits for a worker cluster: no cluster has room: worker-0 lacks 8 cpu",
            ],
            id="waiting-for-a-cluster",
        ),
        pytest.param(
            _dispatch(),
            [
                "Job:      team-b/eval",
                "Phase:    Pending",
                "Cluster:  (none)",
                "waits for a worker cluster: choosing one",
            ],
            id="not-placed-yet",
        ),
    ],
)
def test_why_of_a_dispatched_job_names_its_cluster_or_why_it_has_none(
    view: DispatchView, lines: list[str]
) -> None:
    summary = waiting.why_summary("team-b", "eval", None, view, None)
    assert summary["waiting"] is False
    assert waiting.render_why(summary, NOW).splitlines() == lines


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The workflow queries and the Job's route, faked: the scheduler lists `LINE`, the job
    `far` is dispatched (to worker-1), every other job's workflow is Running."""
    calls: list[str] = []

    def named(conn: Connections, namespace: str, name: str) -> jobroute.JobRoute:
        calls.append(f"route {namespace}/{name}")
        if name == "far":
            return jobroute.JobRoute(f"dispatch/{namespace}/{name}", dispatched=True)
        return jobroute.JobRoute(f"vcjob/{namespace}/{name}", dispatched=False)

    async def dispatch_view(conn: Connections, workflow_id: str, what: str) -> Any:
        calls.append(f"dispatch {workflow_id}")
        return _dispatch(cluster="worker-1")

    async def job_standing(conn: Connections, *args: str) -> JobStanding | None:
        calls.append(f"job_standing {args[1]}/{args[2]}")
        return STANDING if (args[1], args[2]) == ("team-b", "eval") else None

    async def pending_jobs(conn: Connections, scheduler: str, queue: str, what: str) -> Any:
        calls.append(f"pending_jobs {queue}")
        return LINE

    async def job_view(conn: Connections, workflow_id: str, what: str) -> Any:
        calls.append(f"status {workflow_id}")
        if workflow_id.endswith("/gone"):
            raise CliError(f"could not {what}: workflow not found")
        return _view("Running")

    monkeypatch.setattr(remote, "job_standing", job_standing)
    monkeypatch.setattr(remote, "pending_jobs", pending_jobs)
    monkeypatch.setattr(remote, "job_view", job_view)
    monkeypatch.setattr(remote, "dispatch_view", dispatch_view)
    monkeypatch.setattr(jobroute, "named", named)
    return calls


def test_queue_pending_prints_json_for_scripts(
    asked: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parse("queue", "pending", "research", "-o", "json")
    assert args.fn(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["total"] == 5 and [j["name"] for j in printed["jobs"]] == ["train", "eval"]


def test_job_why_asks_the_job_only_when_the_scheduler_does_not_list_it(
    asked: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = _parse("job", "why", "eval", "-n", "team-b")
    assert args.fn(args) == 0
    assert capsys.readouterr().out.splitlines()[2] == "Position:  2 of 5"
    args = _parse("job", "why", "train", "-n", "team-b")
    assert args.fn(args) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "the job is Running: it does not wait in a queue"
    )
    args = _parse("job", "why", "far", "-n", "team-b")
    assert args.fn(args) == 0
    assert capsys.readouterr().out.splitlines()[2] == "Cluster:  worker-1"
    assert asked == [
        "route team-b/eval",
        "job_standing team-b/eval",
        "route team-b/train",
        "job_standing team-b/train",
        "status vcjob/team-b/train",
        "route team-b/far",
        "dispatch dispatch/team-b/far",  # never waits in this cluster's scheduler
    ]

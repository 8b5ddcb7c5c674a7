"""Which workflow the `caldera job` commands address: a dispatched Job's DispatchWorkflow, any
other Job's JobWorkflow (the rule, then the verbs with the apiserver and Temporal faked)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from cli import jobroute, remote
from cli.apiserver import JOBS, QUEUES, Kind, Resources
from cli.clients import Connections
from cli.main import parser
from models.bus import Action
from models.dispatch import DISPATCHED_TO_ANNOTATION, ORIGIN_ANNOTATION, DispatchSettings
from models.keys import QueueName
from models.signals import job as job_signals
from tests.unit.cli import dispatchview
from workflows.dispatch import DispatchView

pytestmark = pytest.mark.unit

MULTI = DispatchSettings(queue=QueueName("multi"), clusters={"worker-0": 1, "worker-1": 1})


def _job(
    name: str = "train", queue: str = "multi", phase: str = "", **notes: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team-a", "uid": f"uid-{name}"}
    if notes:
        meta["annotations"] = notes
    job: dict[str, Any] = {"metadata": meta, "spec": {"queue": queue}}
    if phase:
        job["status"] = {"state": {"phase": phase}}
    return job


DISPATCHED = "dispatch/team-a/train"
HERE = "vcjob/team-a/train"


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        pytest.param(_job(**{DISPATCHED_TO_ANNOTATION: "worker-1"}), DISPATCHED, id="placed"),
        pytest.param(
            _job(phase="Pending", **{DISPATCHED_TO_ANNOTATION: ""}),
            DISPATCHED,
            id="waiting-for-a-cluster",
        ),
        pytest.param(
            _job(queue="plain", phase="Running", **{DISPATCHED_TO_ANNOTATION: "worker-0"}),
            DISPATCHED,
            id="placed-queue-lost-its-clusters",
        ),
        pytest.param(_job(), DISPATCHED, id="new-in-a-dispatching-queue"),
        pytest.param(_job(queue="plain"), HERE, id="new-in-a-plain-queue"),
        pytest.param(_job(phase="Running"), HERE, id="ran-here-before-the-queue-dispatched"),
        pytest.param(_job(**{ORIGIN_ANNOTATION: "uid-m"}), HERE, id="a-copy-on-a-worker"),
    ],
)
def test_route_follows_the_forwarders_rule(job: dict[str, Any], expected: str) -> None:
    asked: list[str] = []

    def settings(queue: str) -> DispatchSettings | None:
        asked.append(queue)
        return MULTI if queue == "multi" else None

    found = jobroute.route(job, settings)
    assert found == jobroute.JobRoute(expected, dispatched=expected == DISPATCHED)
    notes = job["metadata"].get("annotations") or {}
    if notes or "status" in job:  # the Job says enough: no queue is read
        assert asked == []


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """An apiserver with the Queue `multi` (extendClusters) and the Jobs `far` (dispatched to
    worker-1), `fresh` (just made in `multi`) and `near` (run here), and Temporal workflows that
    record what they are asked."""
    calls: list[str] = []
    objects = {
        (QUEUES.plural, "multi"): {
            "metadata": {"name": "multi"},
            "spec": {"extendClusters": [{"name": "worker-1"}]},
        },
        (JOBS.plural, "far"): _job("far", **{DISPATCHED_TO_ANNOTATION: "worker-1"}),
        (JOBS.plural, "fresh"): _job("fresh"),
        (JOBS.plural, "near"): _job("near", queue="default", phase="Running"),
    }

    def find(self: Resources, kind: Kind, name: str, namespace: str = "") -> Any:
        calls.append(f"read {kind.noun} {name}")
        return objects.get((kind.plural, name))

    def get(self: Resources, kind: Kind, name: str, namespace: str = "") -> Any:
        found = find(self, kind, name, namespace)
        assert found is not None
        return found

    async def job_command(
        conn: Connections, wid: str, action: Action, cmd: job_signals.JobCommand, what: str
    ) -> job_signals.JobCommandResult:
        calls.append(f"{action} {wid}")
        return job_signals.JobCommandResult(
            action=action, phase_before="Running", phase_after="Aborting"
        )

    async def dispatch_view(conn: Connections, wid: str, what: str) -> DispatchView:
        calls.append(f"dispatch {wid}")
        return dispatchview.dispatch_view(
            phase="Running", generation=2, cluster="worker-1", stale=["worker-0/1"]
        )

    async def job_view(conn: Connections, wid: str, what: str) -> Any:
        calls.append(f"status {wid}")
        raise AssertionError("not a job run here")

    monkeypatch.setattr(Resources, "find", find)
    monkeypatch.setattr(Resources, "get", get)
    monkeypatch.setattr(remote, "job_command", job_command)
    monkeypatch.setattr(remote, "dispatch_view", dispatch_view)
    monkeypatch.setattr(remote, "job_view", job_view)
    return calls


def _run(*argv: str) -> int:
    args: argparse.Namespace = parser().parse_args(["job", *argv, "-n", "team-a"])
    result: int = args.fn(args)
    return result


def test_commands_to_a_dispatched_job_go_to_its_dispatch_workflow(
    cluster: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("abort", "far") == 0
    assert _run("abort", "fresh") == 0
    assert _run("abort", "near") == 0
    out = capsys.readouterr().out
    assert "dispatch%2Fteam-a%2Ffar" in out and "vcjob%2Fteam-a%2Fnear" in out
    assert cluster == [
        "read job far",
        "AbortJob dispatch/team-a/far",
        "read job fresh",
        "read queue multi",
        "AbortJob dispatch/team-a/fresh",
        "read job near",
        "AbortJob vcjob/team-a/near",
    ]


def test_view_of_a_dispatched_job_shows_the_dispatch(
    cluster: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("view", "far") == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Workflow:      dispatch/team-a/far (phase Running)" in lines
    assert "Cluster:       worker-1 (generation 2)" in lines
    assert "Stale copies:  worker-0/1" in lines
    assert _run("view", "far", "-o", "json") == 0
    shown = json.loads(capsys.readouterr().out)["workflow"]
    assert shown["id"] == "dispatch/team-a/far"
    assert (shown["dispatch"]["cluster"], shown["dispatch"]["generation"]) == ("worker-1", 2)
    assert cluster == ["read job far", "dispatch dispatch/team-a/far"] * 2


def test_history_of_a_dispatched_job_reads_its_dispatch_workflow(
    cluster: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def timeline(conn: Connections, wid: str, what: str, max_runs: int = 0) -> list[Any]:
        cluster.append(f"history {wid}")
        return []

    monkeypatch.setattr(remote, "timeline", timeline)
    assert _run("history", "far") == 0
    assert _run("history", "gone") == 0  # deleted: its JobWorkflow's id, the usual one
    assert cluster == [
        "read job far",
        "history dispatch/team-a/far",
        "read job gone",
        "history vcjob/team-a/gone",
    ]

"""What `job list/view`, `queue list/get` and `job run -f` make of the objects they read."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli import flows, jobs, jobview, output, queues
from cli.clients import CliError
from models import vcjob
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.unit.cli.dispatchview import dispatch_view
from workflows.dispatch import DispatchView

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
URL = "http://ui/namespaces/default/workflows/vcjob%2Fteam-a%2Ftrain"


def _job(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "team-a",
            "uid": "uid-1",
            "creationTimestamp": "2026-03-01T11:55:00Z",
        },
        "spec": {
            "minAvailable": 3,
            "maxRetry": 3,
            "queue": "research",
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob", "timeout": "5m"},
                {"exitCode": 3, "action": "AbortJob"},
            ],
            "tasks": [
                {"name": "master", "replicas": 1},
                {"name": "worker", "replicas": 2, "minAvailable": 2},
            ],
        },
        "status": status,
    }


RUNNING = {
    "state": {"phase": "Running", "reason": "MinAvailableReached", "message": "3 pods running"},
    "running": 3,
    "retryCount": 1,
    "version": 1,
    "taskStatusCount": {"worker": {"phase": {"Running": 2}}},
}
VIEW = job_signals.JobView(
    namespace="team-a",
    name="train",
    uid="uid-1",
    phase="Running",
    version=1,
    retry_count=1,
    queue="research",
    pod_group_phase="Running",
    tasks=[],
    delayed=[
        job_signals.DelayedActionView(
            key="pod/train-worker-1",
            action="RestartJob",
            event="PodEvicted",
            task="worker",
            pod="train-worker-1",
            fires_at="2026-03-01T12:05:00+00:00",
        )
    ],
)


def test_job_list_row() -> None:
    assert jobview.list_row(_job(**RUNNING), NOW, with_namespace=False) == [
        "train",
        "research",
        "Running",
        3,
        0,
        3,
        0,
        0,
        1,
        "5m",
    ]
    fresh = _job()
    del fresh["spec"]["queue"]
    assert jobview.list_row(fresh, NOW, with_namespace=True)[:4] == [
        "team-a",
        "train",
        "default",
        None,
    ]


def test_job_view_shows_spec_status_delayed_actions_and_link() -> None:
    summary = jobview.summary(_job(**RUNNING), "vcjob/team-a/train", VIEW, URL, NOW)
    text = jobview.render(summary)
    lines = text.splitlines()
    assert "Job:           team-a/train" in lines
    assert "Phase:         Running (MinAvailableReached: 3 pods running)" in lines
    assert "Policies:      PodEvicted → RestartJob after 5m; exit 3 → AbortJob" in lines, lines
    assert "Workflow:      vcjob/team-a/train (phase Running, PodGroup Running)" in lines
    assert any(line.split()[:3] == ["worker", "2", "2"] and "Running=2" in line for line in lines)
    assert "Delayed actions:" in lines
    delayed_row = lines[lines.index("Delayed actions:") + 2].split()
    assert delayed_row == [
        "RestartJob",
        "PodEvicted",
        "worker",
        "train-worker-1",
        "2026-03-01T12:05:00+00:00",
    ]
    assert lines[-1] == f"History: {URL}"
    # JSON carries the same facts.
    data = json.loads(output.dump(summary, output.Format.JSON))
    assert data["workflow"]["delayed_actions"][0]["pod"] == "train-worker-1"
    assert data["tasks"][1] == {
        "name": "worker",
        "replicas": 2,
        "min_available": 2,
        "pods": {"Running": 2},
    }
    assert (data["phase"], data["retry_count"], data["url"]) == ("Running", 1, URL)


def test_job_view_without_workflow_still_shows_the_apiserver_half() -> None:
    why = "could not query workflow vcjob/team-a/train: workflow not found"
    summary = jobview.summary(_job(), "vcjob/team-a/train", why, URL, NOW)
    text = jobview.render(summary)
    assert "Phase:         (no status yet)" in text.splitlines()
    assert f"Workflow:      vcjob/team-a/train ({why})" in text.splitlines()
    assert "Delayed actions" not in text
    assert summary["workflow"] == {"id": "vcjob/team-a/train", "error": why}


@pytest.mark.parametrize(
    ("view", "shown", "absent"),
    [
        pytest.param(
            dispatch_view(waiting="no cluster has room for 3 pods"),
            ["Cluster:       (none yet)", "Waiting:       no cluster has room for 3 pods"],
            ["Stale copies", "Commands"],
            id="waiting-for-a-cluster",
        ),
        pytest.param(
            dispatch_view(
                phase="Running",
                generation=2,
                cluster="worker-1",
                unreachable=True,
                stale=["worker-0/1"],
                held_commands=1,
            ),
            [
                "Cluster:       worker-1 (generation 2, not answering)",
                "Stale copies:  worker-0/1",
                "Commands:      1 held for the copy",
            ],
            ["Waiting"],
            id="moved-cluster-silent",
        ),
        pytest.param(
            dispatch_view(generation=2, waiting="worker-1 refused"),
            ["Cluster:       (none now; generation 2 was the last)"],
            [],
            id="between-clusters",
        ),
    ],
)
def test_job_view_of_a_dispatched_job_shows_where_it_runs(
    view: DispatchView, shown: list[str], absent: list[str]
) -> None:
    wid = "dispatch/team-a/train"
    summary = jobview.summary(_job(**RUNNING), wid, view, URL, NOW)
    text = jobview.render(summary)
    lines = text.splitlines()
    assert f"Workflow:      {wid} (phase {view.phase})" in lines
    assert all(line in lines for line in shown), lines
    assert not [line for line in lines if line.split(":")[0] in absent]
    assert "Delayed actions" not in text  # the copy's JobWorkflow keeps them, on its cluster
    assert summary["workflow"] == {
        "id": wid,
        "phase": view.phase,
        "dispatch": view.model_dump(exclude={"phase"}),
    }


def _queue() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research", "creationTimestamp": "2026-02-27T12:00:00Z"},
        "spec": {"weight": 4, "parent": "science", "capability": {"cpu": "8"}},
        "status": {"state": "Closing", "running": 2, "inqueue": 1},
    }


def test_queue_list_row() -> None:
    assert queues.list_row(_queue(), NOW) == [
        "research",
        "Closing",
        4,
        "science",
        0,
        1,
        2,
        0,
        0,
        "2d",
    ]


def test_queue_get_adds_the_workflows_view() -> None:
    view = queue_signals.QueueView(
        name="research",
        state="Closing",
        parent="science",
        closed_by_parent=True,
        pod_groups={"Running": 2, "Inqueue": 1},
        children={"research-a": "Closed"},
    )
    summary = queues.summary(_queue(), view, "http://ui/q", NOW)
    lines = queues.render(summary).splitlines()
    assert "State:        Closing" in lines
    assert "Capability:   cpu=8" in lines
    assert "PodGroups:    pending=0 inqueue=1 running=2 unknown=0 completed=0" in lines
    assert "Workflow:     queue/research (state Closing, closed by its parent)" in lines
    assert "Children:     research-a=Closed" in lines
    assert lines[-1] == "History: http://ui/q"


def _args(namespace: str | None) -> argparse.Namespace:
    return argparse.Namespace(namespace=namespace)


def test_run_reads_every_job_document(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: a}\n---\n"
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: b}\n"
    )
    assert [d["metadata"]["name"] for d in jobs.documents(str(path), vcjob.API_VERSION, "Job")] == [
        "a",
        "b",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no document"),
        ("apiVersion: v1\nkind: Pod\n", "document 1 is not a batch.volcano.sh/v1alpha1 Job"),
        ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Queue\n", "document 1 is a Queue"),
        ("a: [1\n", "is not YAML"),
    ],
)
def test_run_refuses_what_is_not_a_job(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(CliError, match=message):
        jobs.documents(str(path), vcjob.API_VERSION, "Job")


def test_run_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CliError, match=r"cannot read .*nope.yaml: No such file"):
        jobs.documents(str(tmp_path / "nope.yaml"), vcjob.API_VERSION, "Job")


def test_run_namespace_from_file_must_agree_with_flag() -> None:
    meta = {"name": "a", "namespace": "team-a"}
    assert jobs.document_namespace(_args(None), None, meta, "job") == "team-a"
    assert jobs.document_namespace(_args("team-a"), None, meta, "job") == "team-a"
    with pytest.raises(CliError, match="the file says namespace team-a, -n says team-b"):
        jobs.document_namespace(_args("team-b"), None, meta, "job")
    unset: dict[str, Any] = {"name": "a"}
    assert jobs.document_namespace(_args("team-c"), None, unset, "job") == "team-c"
    assert unset["namespace"] == "team-c"


def _flow(**status: Any) -> dict[str, Any]:
    meta = {"name": "pipeline", "namespace": "team-a", "creationTimestamp": "2026-03-01T09:00:00Z"}
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": meta} | (
        {"status": status} if status else {}
    )


def test_jobflow_rows_are_vcctls_columns() -> None:
    assert flows.FLOW_HEADERS == ("NAME", "NAMESPACE", "PHASE", "AGE")
    running = _flow(state={"phase": "Running"}, runningJobs=["pipeline-a"])
    assert flows.flow_row(running, NOW) == ["pipeline", "team-a", "Running", "3h"]
    assert flows.flow_row(_flow(), NOW)[2] == "Pending"  # not reconciled yet, as Volcano reads it
    template = {"metadata": {"name": "a", "namespace": "team-a"}, "spec": {"tasks": []}}
    assert flows.TEMPLATE_HEADERS == ("NAME", "NAMESPACE")
    assert flows.template_row(template, NOW) == ["a", "team-a"]


def test_jobflow_get_is_the_row_and_the_workflows_link() -> None:
    row = flows.flow_row(_flow(state={"phase": "Succeed"}), NOW)
    url = "http://ui/namespaces/default/workflows/jobflow%2Fteam-a%2Fpipeline"
    assert flows.render(flows.FLOW_HEADERS, row, url, output.Format.TABLE).splitlines() == [
        "NAME       NAMESPACE   PHASE     AGE",
        "pipeline   team-a      Succeed   3h",
        f"History: {url}",
    ]
    assert json.loads(flows.render(flows.FLOW_HEADERS, row, url, output.Format.JSON)) == {
        "name": "pipeline",
        "namespace": "team-a",
        "phase": "Succeed",
        "age": "3h",
        "history": url,
    }
    template = flows.render(flows.TEMPLATE_HEADERS, ["a", "team-a"], None, output.Format.TABLE)
    assert template.splitlines() == ["NAME   NAMESPACE", "a      team-a"]  # no workflow


def test_queue_update_prints_each_field_before_and_after() -> None:
    before = {"spec": {"weight": 1, "capability": {"cpu": "4"}}}
    after = {
        "spec": {
            "weight": 4,
            "capability": {"cpu": "8", "memory": "32Gi"},
            "guarantee": {"resource": {"cpu": "2"}},
            "reclaimable": False,
        }
    }
    operations = [
        {"op": "add", "path": f"/spec/{field}", "value": None}
        for field in ("weight", "capability", "guarantee", "reclaimable")
    ]
    assert queues.changes(before, after, operations) == (
        "weight 1 → 4, capability cpu=4 → cpu=8,memory=32Gi, guarantee - → cpu=2, "
        "reclaimable true → false"
    )
    unset = [{"op": "add", "path": "/spec/weight", "value": 2}]
    assert queues.changes({"spec": {}}, {"spec": {"weight": 2}}, unset) == "weight 1 → 2"

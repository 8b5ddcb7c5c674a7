"""`caldera pod list`: which pods vcctl shows, and each pod's READY, STATUS and RESTARTS as
`kubectl get pods` words them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cli import output, pods
from cli.clients import CliError

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _pod(
    name: str = "train-worker-0",
    namespace: str = "team-a",
    phase: str = "Running",
    containers: list[dict[str, Any]] | None = None,
    inits: list[dict[str, Any]] | None = None,
    spec_inits: list[dict[str, Any]] | None = None,
    conditions: tuple[str, ...] = ("Initialized", "Ready"),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    statuses = containers if containers is not None else [_running()]
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": "2026-03-01T11:50:00Z",
            "labels": labels
            if labels is not None
            else {"volcano.sh/job-name": "train", "volcano.sh/queue-name": "research"},
            "annotations": annotations or {},
            **meta,
        },
        "spec": {
            "containers": [{"name": f"c{i}"} for i in range(len(statuses))],
            "initContainers": spec_inits or [{"name": c["name"]} for c in inits or []],
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": c, "status": "True"} for c in conditions],
            "containerStatuses": statuses,
            "initContainerStatuses": inits or [],
        },
    }


def _running(ready: bool = True, restarts: int = 0, last: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": "c",
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": "2026-03-01T11:51:00Z"}},
    }
    if last:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": last}}
    return status


def _waiting(reason: str, name: str = "c") -> dict[str, Any]:
    return {
        "name": name,
        "ready": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": reason}},
    }


def _ended(code: int, reason: str = "", name: str = "c", signal: int = 0) -> dict[str, Any]:
    ended: dict[str, Any] = {"exitCode": code, "signal": signal}
    if reason:
        ended["reason"] = reason
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": ended}}


def test_a_running_pod_is_kubectls_row() -> None:
    assert pods.HEADERS == ("NAME", "READY", "STATUS", "RESTARTS", "AGE")
    assert pods.row(_pod(), NOW, with_namespace=False) == [
        "train-worker-0",
        "1/1",
        "Running",
        "0",
        "10m",
    ]
    assert pods.row(_pod(), NOW, with_namespace=True)[:2] == ["team-a", "train-worker-0"]


def test_restarts_carry_the_age_of_the_last_one() -> None:
    pod = _pod(containers=[_running(restarts=2, last="2026-03-01T11:58:30Z"), _running()])
    assert pods.row(pod, NOW, with_namespace=False)[1:4] == ["2/2", "Running", "2 (90s ago)"]


@pytest.mark.parametrize(
    ("pod", "shown"),
    [
        (_pod(phase="Pending", containers=[_waiting("ContainerCreating")]), "ContainerCreating"),
        (_pod(containers=[_waiting("CrashLoopBackOff")]), "CrashLoopBackOff"),
        (_pod(phase="Succeeded", containers=[_ended(0, "Completed")]), "Completed"),
        (_pod(phase="Failed", containers=[_ended(137, "OOMKilled")]), "OOMKilled"),
        (_pod(phase="Failed", containers=[_ended(3)]), "ExitCode:3"),
        (_pod(phase="Failed", containers=[_ended(0, signal=9)]), "Signal:9"),
        (
            _pod(
                phase="Pending",
                containers=[_waiting("PodInitializing")],
                inits=[_ended(0, "Completed", "a"), _waiting("PodInitializing", "b")],
                conditions=(),
            ),
            "Init:1/2",
        ),
        (
            _pod(
                phase="Pending",
                containers=[_waiting("PodInitializing")],
                inits=[_waiting("CrashLoopBackOff", "a")],
                conditions=(),
            ),
            "Init:CrashLoopBackOff",
        ),
        (_pod(deletionTimestamp="2026-03-01T11:59:00Z"), "Terminating"),
        (
            _pod(phase="Succeeded", containers=[_ended(0, "Completed")], deletionTimestamp="x"),
            "Completed",
        ),
        (
            _pod(phase="Pending", containers=[], conditions=())
            | {
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                    ],
                }
            },
            "SchedulingGated",
        ),
        (_pod(phase="Pending", containers=[], conditions=()), "Pending"),
    ],
)
def test_status_is_kubectls_word(pod: dict[str, Any], shown: str) -> None:
    assert pods.status(pod) == shown


def test_a_completed_container_beside_a_running_one_reads_running_or_not_ready() -> None:
    both = [_ended(0, "Completed"), _running()]
    assert pods.status(_pod(containers=both)) == "Running"
    assert pods.status(_pod(containers=both, conditions=("Initialized",))) == "NotReady"


def test_a_started_sidecar_counts_as_a_container() -> None:
    sidecar = {"name": "proxy", "restartPolicy": "Always"}
    started = {"name": "proxy", "ready": True, "started": True, "restartCount": 1, "state": {}}
    pod = _pod(inits=[started], spec_inits=[sidecar])
    assert (pods.ready(pod), pods.status(pod), pods.restarts(pod)) == ("2/2", "Running", (1, None))


def test_the_default_selection_is_every_volcano_job_pod() -> None:
    assert pods.selector(None) == "volcano.sh/job-name"
    assert pods.selector("train") == "volcano.sh/job-name=train"


def test_a_queue_selects_its_jobs_pods_and_other_workloads_annotated_with_it() -> None:
    listed = [
        _pod("b-0", namespace="team-b"),
        _pod("a-0"),
        _pod("other-0", labels={"volcano.sh/job-name": "x", "volcano.sh/queue-name": "q2"}),
        _pod("deploy-0", labels={}, annotations={"scheduling.volcano.sh/queue-name": "research"}),
        _pod("plain-0", labels={}),
    ]
    chosen = pods.select(listed, None, "research")
    names = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in chosen]
    assert names == [("team-a", "a-0"), ("team-a", "deploy-0"), ("team-b", "b-0")]


def test_a_job_in_another_queue_is_refused() -> None:
    listed = [_pod("train-0")]
    assert pods.select(listed, "train", "research") == listed
    with pytest.raises(CliError, match="job train is in queue research, not q2"):
        pods.select(listed, "train", "q2")


def test_rows_as_records() -> None:
    rows = [pods.row(_pod(), NOW, with_namespace=True)]
    (record,) = output.records(("NAMESPACE", *pods.HEADERS), rows)
    assert record == {
        "namespace": "team-a",
        "name": "train-worker-0",
        "ready": "1/1",
        "status": "Running",
        "restarts": "0",
        "age": "10m",
    }

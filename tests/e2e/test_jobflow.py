"""Volcano JobFlows end to end: the example flow (deploy/examples/jobflow/) runs its Jobs in
dependency order and Succeeds; jobRetainPolicy delete removes the Jobs after; a worker killed
mid-flow does not make a finished Job again; a JobTemplate created late is noticed; the
webhook refuses a cycle and an unknown target. Pods run on kwok (the sim annotations)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from temporalio.client import Client, WorkflowExecutionStatus

from cli.devstack import caldera_processes as caldera
from cli.devstack import processes
from models import keys
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")
FLOW = ("flow.volcano.sh", "v1alpha1")
EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "jobflow"


def _custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def _template(name: str, seconds: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "/".join(FLOW),
        "kind": "JobTemplate",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": 1,
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": volcano.template({volcano.RUN: str(seconds)}),
                }
            ],
        },
    }


def _flow(name: str, *entries: str, retain: str = "retain") -> dict[str, Any]:
    """Entries as "b<a,c" (b depends on a and c) or "a"."""
    flows: list[dict[str, Any]] = []
    for text in entries:
        entry, _, targets = text.partition("<")
        flows.append(
            {"name": entry} | ({"dependsOn": {"targets": targets.split(",")}} if targets else {})
        )
    return {
        "apiVersion": "/".join(FLOW),
        "kind": "JobFlow",
        "metadata": {"name": name},
        "spec": {"jobRetainPolicy": retain, "flows": flows},
    }


def _create(api: client.ApiClient, ns: str, doc: dict[str, Any]) -> dict[str, Any]:
    plural = "jobflows" if doc["kind"] == "JobFlow" else "jobtemplates"
    made: dict[str, Any] = _custom(api).create_namespaced_custom_object(*FLOW, ns, plural, doc)
    return made


def _get_flow(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    got: dict[str, Any] = _custom(api).get_namespaced_custom_object(*FLOW, ns, "jobflows", name)
    return got


def _jobs(api: client.ApiClient, ns: str) -> dict[str, dict[str, Any]]:
    listed = _custom(api).list_namespaced_custom_object(*volcano.JOBS, ns, "jobs")
    return {j["metadata"]["name"]: j for j in listed["items"]}


def _phase(job: dict[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def _flow_phase(
    api: client.ApiClient, ns: str, name: str, phase: str, timeout: float = 120
) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        flow = _get_flow(api, ns, name)
        return (
            flow if ((flow.get("status") or {}).get("state") or {}).get("phase") == phase else None
        )

    return eventually(probe, timeout, f"jobflow {ns}/{name} {phase}")


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _completed_at(job: dict[str, Any]) -> datetime:
    return _time(job["status"]["state"]["lastTransitionTime"])


def test_example_flow_runs_in_order_and_succeeds(api: client.ApiClient, namespace: str) -> None:
    for path in ("jobtemplates.yaml", "jobflow.yaml"):
        for doc in yaml.safe_load_all((EXAMPLE / path).read_text()):
            _create(api, namespace, doc)
    first, second = "flow-example-prepare", "flow-example-train"
    # Until the first Job Completes, the second must not exist (read on every poll).
    violations: list[str] = []

    def second_made() -> dict[str, Any] | None:
        jobs = _jobs(api, namespace)
        if second in jobs and _phase(jobs.get(first, {})) != "Completed":
            violations.append(f"{second} exists while {first} is {_phase(jobs.get(first, {}))}")
        return jobs if second in jobs else None

    jobs = eventually(second_made, 120, f"{second} created")
    assert violations == []
    made = _time(jobs[second]["metadata"]["creationTimestamp"])
    assert made >= _completed_at(jobs[first]).replace(microsecond=0)
    labels = jobs[second]["metadata"]["labels"]
    assert labels["volcano.sh/createdByJobFlow"] == f"{namespace}.flow-example"
    assert labels["volcano.sh/createdByJobTemplate"] == f"{namespace}.train"
    [owner] = jobs[second]["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("JobFlow", "flow-example", True)

    status = _flow_phase(api, namespace, "flow-example", "Succeed")["status"]
    assert status["completedJobs"] == [first, second]
    assert [s["name"] for s in status["jobStatusList"]] == [first, second]
    histories = {
        s["name"]: [h["state"] for h in s["runningHistories"]] for s in status["jobStatusList"]
    }
    assert histories[second][-1] == "Completed"
    assert set(status["conditions"]) == {first, second}
    assert set(_jobs(api, namespace)) == {first, second}  # retain: the Jobs stay
    template = _custom(api).get_namespaced_custom_object(
        *FLOW, namespace, "jobtemplates", "prepare"
    )
    assert template["status"]["jobDependsOnList"] == [first]


def test_retain_policy_delete_removes_the_jobs_after_succeed(
    api: client.ApiClient, namespace: str
) -> None:
    for name in ("a", "b"):
        _create(api, namespace, _template(name))
    _create(api, namespace, _flow("gone", "a", "b<a", retain="delete"))
    flow = _flow_phase(api, namespace, "gone", "Succeed")
    assert flow["status"]["completedJobs"] == ["gone-a", "gone-b"]
    eventually(lambda: not _jobs(api, namespace), 60, "the flow's Jobs deleted")
    assert _get_flow(api, namespace, "gone")["status"]["state"]["phase"] == "Succeed"


def test_worker_restart_mid_flow_does_not_remake_a_finished_job(
    api: client.ApiClient,
    namespace: str,
    e2e_stack: E2EStack,
    controllers: list[processes.Process],
) -> None:
    _create(api, namespace, _template("a", seconds=1))
    _create(api, namespace, _template("b", seconds=15))
    _create(api, namespace, _flow("rs", "a", "b<a"))

    def b_running() -> dict[str, dict[str, Any]] | None:
        jobs = _jobs(api, namespace)
        return jobs if _phase(jobs.get("rs-b", {})) == "Running" else None

    jobs = eventually(b_running, 120, "rs-b Running after rs-a Completed")
    finished = jobs["rs-a"]["metadata"]["uid"]
    assert _phase(jobs["rs-a"]) == "Completed"
    worker = next(p for p in controllers if p.name == "worker")
    os.kill(worker.pid, signal.SIGKILL)  # mid-flow: rs-b runs, the flow waits for it
    assert e2e_stack.workdir is not None
    controllers[controllers.index(worker)] = caldera.start_worker(
        e2e_stack.kubeconfig,
        e2e_stack.temporal_address,
        e2e_stack.workdir / "logs",
        caldera.DEFAULT_SCHEDULER_OVERRIDE,
    )
    status = _flow_phase(api, namespace, "rs", "Succeed", timeout=180)["status"]
    assert status["completedJobs"] == ["rs-a", "rs-b"]
    after = _jobs(api, namespace)
    assert after["rs-a"]["metadata"]["uid"] == finished
    assert set(after) == {"rs-a", "rs-b"}


def test_a_template_created_late_is_noticed(api: client.ApiClient, namespace: str) -> None:
    _create(api, namespace, _flow("late", "a"))

    def warned() -> bool:
        events = client.CoreV1Api(api).list_namespaced_event(namespace).items
        return any(
            e.involved_object.name == "late" and e.reason == "SyncJobFlow" and e.type == "Warning"
            for e in events
        )

    eventually(warned, 60, "a Warning Event naming the missing template")
    assert "late-a" not in _jobs(api, namespace)
    _create(api, namespace, _template("a"))
    status = _flow_phase(api, namespace, "late", "Succeed")["status"]
    assert status["completedJobs"] == ["late-a"]


async def test_deleting_the_flow_ends_its_workflow_and_its_jobs_go(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    _create(api, namespace, _template("a"))
    _create(api, namespace, _flow("bye", "a"))
    _flow_phase(api, namespace, "bye", "Succeed")
    _custom(api).delete_namespaced_custom_object(*FLOW, namespace, "jobflows", "bye")
    eventually(lambda: not _jobs(api, namespace), 60, "the flow's Job garbage-collected")
    temporal = await Client.connect(e2e_stack.temporal_address)
    handle = temporal.get_workflow_handle(keys.jobflow_workflow_id(namespace, "bye"))
    deadline = asyncio.get_running_loop().time() + 60
    while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
        assert asyncio.get_running_loop().time() < deadline, "the flow's workflow still runs"
        await asyncio.sleep(0.2)
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        pytest.param(
            ("a<b", "b<a"), "spec.flows: jobflow Flow is not DAG: a -> b -> a", id="cycle"
        ),
        pytest.param(
            ("a", "b<x"),
            "spec.flows[1].dependsOn.targets[0]: jobflow Flow is not DAG: vertex is not defined: x",
            id="unknown-target",
        ),
    ],
)
def test_webhook_refuses_what_is_not_a_dag(
    api: client.ApiClient, namespace: str, entries: tuple[str, ...], message: str
) -> None:
    with pytest.raises(client.ApiException) as err:
        _create(api, namespace, _flow("bad", *entries))
    assert err.value.status == 403, err.value.body
    assert json.loads(err.value.body or "{}")["message"].endswith(
        f"jobflow {namespace}/bad: {message}"
    )

"""`caldera job`, `queue`, `jobflow`, `jobtemplate` and `pod` as an operator types them:
subprocesses against the real apiserver, Temporal dev server, worker and forwarder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from cli.devstack import processes
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually

pytestmark = pytest.mark.usefixtures("controllers")

UI = "http://ui.test:8233"


def _caldera(stack: E2EStack, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "KUBECONFIG": stack.kubeconfig,
        "TEMPORAL_ADDRESS": stack.temporal_address,
        "CALDERA_UI_URL": UI,
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr}"
    return done.stdout


def _failed(done: subprocess.CompletedProcess[str]) -> str:
    """The one-line error of a failed command (no traceback)."""
    assert done.returncode == 1, f"exit {done.returncode}: {done.stdout}"
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr.rstrip("\n")


def _job_file(tmp_path: Path, name: str, **annotations: str) -> Path:
    manifest = make_job(name).task("server", replicas=2, template=volcano.template(annotations))
    doc = manifest.manifest()
    del doc["metadata"]["namespace"]  # as users write them: -n decides
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _link(workflow_id: str) -> str:
    return f"{UI}/namespaces/default/workflows/{workflow_id.replace('/', '%2F')}"


def _table(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines()]


def test_job_run_list_view_abort_resume_history_delete(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, tmp_path: Path
) -> None:
    ns, link = namespace, _link(f"vcjob/{namespace}/svc")
    run = _ok(_caldera(e2e_stack, "job", "run", "-f", str(_job_file(tmp_path, "svc")), "-n", ns))
    assert run.splitlines() == [f"job {ns}/svc created", f"  history: {link}"]
    volcano.phase_becomes(api, ns, "svc", "Running")

    listed = _table(_ok(_caldera(e2e_stack, "job", "list", "-n", ns)))
    assert listed[0] == [
        "NAME",
        "QUEUE",
        "PHASE",
        "MINAVAILABLE",
        "PENDING",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "RETRIES",
        "AGE",
    ]
    assert listed[1][:9] == ["svc", "default", "Running", "2", "0", "2", "0", "0", "0"]
    rows = json.loads(_ok(_caldera(e2e_stack, "job", "list", "-n", ns, "-o", "json")))
    assert [(r["name"], r["phase"], r["running"]) for r in rows] == [("svc", "Running", 2)]
    everywhere = yaml.safe_load(_ok(_caldera(e2e_stack, "job", "list", "-A", "-o", "yaml")))
    assert {"namespace": ns, "name": "svc"}.items() <= next(
        r for r in everywhere if r["namespace"] == ns
    ).items()
    assert (
        _caldera(e2e_stack, "job", "list", "-A", "--queue", "nope", "-o", "json").stdout == "[]\n"
    )

    view = _ok(_caldera(e2e_stack, "job", "view", "svc", "-n", ns)).splitlines()
    assert any(line.startswith("Phase:         Running (MinAvailableReached") for line in view)
    assert any(line.startswith(f"Workflow:      vcjob/{ns}/svc (phase Running") for line in view)
    assert "Delayed actions: none" in view and view[-1] == f"History: {link}"

    refused = _failed(_caldera(e2e_stack, "job", "resume", "svc", "-n", ns))
    assert refused == f"job {ns}/svc is Running: only an Aborting or Aborted job can be resumed"

    # `suspend`: vcctl's name for abort.
    aborted = _ok(_caldera(e2e_stack, "job", "suspend", "svc", "-n", ns, "--reason", "maintenance"))
    assert aborted.splitlines()[0] == f"job {ns}/svc: AbortJob: Running → Aborting"
    volcano.phase_becomes(api, ns, "svc", "Aborted")
    again = _failed(_caldera(e2e_stack, "job", "abort", "svc", "-n", ns))
    assert again == f"job {ns}/svc is Aborted: AbortJob does not apply to a finished job"

    resumed = _ok(_caldera(e2e_stack, "job", "resume", "svc", "-n", ns))
    assert resumed.splitlines()[0] == f"job {ns}/svc: ResumeJob: Aborted → Restarting"
    assert volcano.phase_becomes(api, ns, "svc", "Running")["status"]["retryCount"] == 1

    story = _ok(_caldera(e2e_stack, "job", "history", "svc", "-n", ns))
    assert story.splitlines()[-1] == f"workflow vcjob/{ns}/svc: {link}"
    events = [(kind, detail) for _, kind, detail in _history_rows(story)]
    assert ("update accepted", "abort: maintenance") in events
    assert ("update completed", "abort: Running → Aborting") in events
    assert ("update completed", "resume: Aborted → Restarting") in events
    assert ("signal", "job_observed") in events
    assert any(k == "signal" and d.startswith("pods_changed: svc-server-") for k, d in events)
    # A job started by the forwarder deletes pods by local activity, with the rest of the
    # decision's writes: one marker.
    assert any(
        k == "local activity" and d.startswith("apply_writes: delete ") for k, d in events
    ), events
    phases = [d for k, d in events if k == "phase"]
    assert phases[-5:] == ["Aborting", "Aborted", "Restarting", "Pending", "Running"], phases
    as_json = json.loads(_ok(_caldera(e2e_stack, "job", "history", "svc", "-n", ns, "-o", "json")))
    assert as_json["url"] == link
    assert {e["kind"] for e in as_json["events"]} >= {"started", "signal", "local activity"}

    assert _ok(_caldera(e2e_stack, "job", "delete", "svc", "-n", ns)) == f"job {ns}/svc deleted\n"
    gone = _failed(_caldera(e2e_stack, "job", "view", "svc", "-n", ns))
    assert gone == f"caldera: job {ns}/svc not found"


def _history_rows(stdout: str) -> list[tuple[str, str, str]]:
    """(time, event, detail) from the history table, whose event kinds may hold a space."""
    lines = stdout.split("\n\n")[0].splitlines()
    header = lines[0]
    event_at, detail_at = header.index("EVENT"), header.index("DETAIL")
    return [
        (line[:event_at].strip(), line[event_at:detail_at].strip(), line[detail_at:].strip())
        for line in lines[1:]
    ]


def test_job_commands_via_command_crs(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, tmp_path: Path
) -> None:
    ns = namespace
    _ok(_caldera(e2e_stack, "job", "run", "-f", str(_job_file(tmp_path, "cmd")), "-n", ns))
    volcano.phase_becomes(api, ns, "cmd", "Running")
    out = _ok(_caldera(e2e_stack, "job", "abort", "cmd", "-n", ns, "--via-command"))
    first = out.splitlines()[0]
    assert first.startswith(f"command {ns}/cmd-abortjob-") and first.endswith(
        f"created: AbortJob for job {ns}/cmd"
    )
    volcano.phase_becomes(api, ns, "cmd", "Aborted")
    commands = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", ns, "commands"
    )
    assert commands["items"] == []  # consumed by the forwarder
    _ok(_caldera(e2e_stack, "job", "resume", "cmd", "-n", ns, "--via-command", "--reason", "go"))
    volcano.phase_becomes(api, ns, "cmd", "Running")
    story = _ok(_caldera(e2e_stack, "job", "history", "cmd", "-n", ns))
    command = first.split()[1].split("/")[1]
    assert ("signal", f"command_issued: AbortJob (Command {command})") in [
        (k, d) for _, k, d in _history_rows(story)
    ]
    assert any(
        k == "signal" and d.startswith("command_issued: ResumeJob") and d.endswith(": go")
        for _, k, d in _history_rows(story)
    )


@pytest.fixture
def queue_name(api: client.ApiClient) -> Iterator[str]:
    name = f"cli-{uuid.uuid4().hex[:6]}"
    yield name
    try:
        client.CustomObjectsApi(api).delete_cluster_custom_object(*volcano.QUEUES, name)
    except client.ApiException as e:
        if e.status != 404:
            raise


def test_queue_create_list_get_close_open_delete(
    api: client.ApiClient, e2e_stack: E2EStack, queue_name: str
) -> None:
    q, link = queue_name, _link(f"queue/{queue_name}")
    created = _caldera(
        e2e_stack, "queue", "create", q, "--weight", "3", "--capability", "cpu=4,memory=8Gi"
    )
    assert _ok(created).splitlines() == [f"queue {q} created", f"  history: {link}"]
    volcano.state_becomes(api, q, "Open")

    listed = _table(_ok(_caldera(e2e_stack, "queue", "list")))
    assert listed[0][:7] == ["NAME", "STATE", "WEIGHT", "PARENT", "PENDING", "INQUEUE", "RUNNING"]
    assert next(r for r in listed if r[0] == q)[:3] == [q, "Open", "3"]
    got = _ok(_caldera(e2e_stack, "queue", "get", q)).splitlines()
    assert "Capability:   cpu=4,memory=8Gi" in got
    assert f"Workflow:     queue/{q} (state Open)" in got and got[-1] == f"History: {link}"
    as_json = json.loads(_ok(_caldera(e2e_stack, "queue", "get", q, "-o", "json")))
    assert (as_json["state"], as_json["weight"], as_json["workflow"]["state"]) == (
        "Open",
        3,
        "Open",
    )

    # `update`: vcctl's `queue operate -a update`, with the capability as well.
    updated = _ok(_caldera(e2e_stack, "queue", "update", q, "-w", "5", "--capability", "cpu=8"))
    assert updated.splitlines() == [
        f"queue {q} updated: weight 3 → 5, capability cpu=4,memory=8Gi → cpu=8",
        f"  history: {link}",
    ]
    spec = volcano.queue(api, q)["spec"]
    assert (spec["weight"], spec["capability"]) == (5, {"cpu": "8"})
    assert _failed(_caldera(e2e_stack, "queue", "update", q)).startswith(
        f"caldera: queue update {q}: nothing to change; give one of --weight"
    )
    missing = _failed(_caldera(e2e_stack, "queue", "update", f"{q}-nope", "-w", "2"))
    assert missing == f"caldera: queue {q}-nope not found"

    closed = _ok(_caldera(e2e_stack, "queue", "close", q, "--reason", "quota review"))
    assert closed.splitlines()[0] == f"queue {q}: CloseQueue: Open → Closed"
    volcano.state_becomes(api, q, "Closed")
    assert _failed(_caldera(e2e_stack, "queue", "close", q)) == f"queue {q} is already Closed"

    via = _ok(_caldera(e2e_stack, "queue", "open", q, "--via-command")).splitlines()[0]
    assert via.startswith(f"command default/{q}-openqueue-"), via
    volcano.state_becomes(api, q, "Open")
    story = _history_rows(_ok(_caldera(e2e_stack, "queue", "history", q)))
    events = [(k, d) for _, k, d in story]
    assert ("update accepted", "close: quota review") in events
    assert ("update completed", "close: Open → Closed") in events
    assert any(k == "signal" and d.startswith("command_issued: OpenQueue") for k, d in events)
    assert [d for k, d in events if k == "state"][-2:] == ["Closed", "Open"]

    assert _ok(_caldera(e2e_stack, "queue", "delete", q)) == f"queue {q} deleted\n"
    assert _failed(_caldera(e2e_stack, "queue", "get", q)) == f"caldera: queue {q} not found"


def test_jobflow_jobtemplate_and_pod_list_get_delete(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack, tmp_path: Path
) -> None:
    """vcctl's jobflow, jobtemplate and pod verbs, on a flow of one two-pod Job."""
    ns, flow_api = namespace, ("flow.volcano.sh", "v1alpha1")
    template = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "step"},
        "spec": {
            "minAvailable": 2,
            "tasks": [{"name": "main", "replicas": 2, "template": volcano.template({})}],
        },
    }
    flow = {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "flow"},
        "spec": {"flows": [{"name": "step"}]},
    }
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(*flow_api, ns, "jobtemplates", template)
    custom.create_namespaced_custom_object(*flow_api, ns, "jobflows", flow)

    def made() -> bool:
        jobs = custom.list_namespaced_custom_object(*volcano.JOBS, ns, "jobs")["items"]
        return any(j["metadata"]["name"] == "flow-step" for j in jobs)

    eventually(made, 60, f"job {ns}/flow-step made by the flow")
    volcano.phase_becomes(api, ns, "flow-step", "Running", timeout=120)

    templates = _table(_ok(_caldera(e2e_stack, "jobtemplate", "list", "-n", ns)))
    assert templates == [["NAME", "NAMESPACE"], ["step", ns]]
    got = _table(_ok(_caldera(e2e_stack, "jobtemplate", "get", "step", "-n", ns)))
    assert got == [["NAME", "NAMESPACE"], ["step", ns]]

    def flow_running() -> bool:
        got = custom.get_namespaced_custom_object(*flow_api, ns, "jobflows", "flow")
        return ((got.get("status") or {}).get("state") or {}).get("phase") == "Running"

    eventually(flow_running, 60, f"jobflow {ns}/flow Running")
    flows = _table(_ok(_caldera(e2e_stack, "jobflow", "list", "-n", ns)))
    assert flows[0] == ["NAME", "NAMESPACE", "PHASE", "AGE"]
    assert flows[1][:3] == ["flow", ns, "Running"]
    shown = _ok(_caldera(e2e_stack, "jobflow", "get", "flow", "-n", ns)).splitlines()
    assert shown[-1] == f"History: {_link(f'jobflow/{ns}/flow')}"
    as_json = json.loads(_ok(_caldera(e2e_stack, "jobflow", "get", "flow", "-n", ns, "-o", "json")))
    assert (as_json["name"], as_json["phase"]) == ("flow", "Running")
    everywhere = json.loads(_ok(_caldera(e2e_stack, "jobflow", "list", "-A", "-o", "json")))
    assert {"name": "flow", "namespace": ns}.items() <= next(
        r for r in everywhere if r["namespace"] == ns
    ).items()

    pods = _table(_ok(_caldera(e2e_stack, "pod", "list", "-n", ns)))
    assert pods[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [r[:4] for r in pods[1:]] == [
        ["flow-step-main-0", "1/1", "Running", "0"],
        ["flow-step-main-1", "1/1", "Running", "0"],
    ]
    of_job = _ok(_caldera(e2e_stack, "pod", "list", "-n", ns, "-j", "flow-step", "-q", "default"))
    assert [r[0] for r in _table(of_job)[1:]] == ["flow-step-main-0", "flow-step-main-1"]
    in_queue = json.loads(
        _ok(_caldera(e2e_stack, "pod", "list", "-A", "-q", "default", "-o", "json"))
    )
    assert {r["name"] for r in in_queue if r["namespace"] == ns} == {
        "flow-step-main-0",
        "flow-step-main-1",
    }
    wrong = _failed(_caldera(e2e_stack, "pod", "list", "-n", ns, "-j", "flow-step", "-q", "nope"))
    assert wrong == "caldera: job flow-step is in queue default, not nope"

    assert _ok(_caldera(e2e_stack, "jobflow", "delete", "flow", "-n", ns)) == (
        f"jobflow {ns}/flow deleted\n"
    )
    path = tmp_path / "templates.yaml"
    path.write_text(yaml.safe_dump(template))  # no namespace: -n decides, as for `job run`
    deleted = _ok(_caldera(e2e_stack, "jobtemplate", "delete", "-f", str(path), "-n", ns))
    assert deleted == f"jobtemplate {ns}/step deleted\n"
    gone = _failed(_caldera(e2e_stack, "jobtemplate", "get", "step", "-n", ns))
    assert gone == f"caldera: jobtemplate {ns}/step not found"


def test_unreachable_servers_and_missing_workflows_are_one_clear_line(
    namespace: str, e2e_stack: E2EStack, tmp_path: Path
) -> None:
    port = processes.free_port()  # nothing listens there
    no_temporal = _caldera(
        e2e_stack, "job", "history", "x", "-n", namespace, "--temporal-address", f"127.0.0.1:{port}"
    )
    assert _failed(no_temporal) == (
        f"caldera: cannot reach Temporal at 127.0.0.1:{port} (namespace default): "
        "connection refused"
    )

    kubeconfig = yaml.safe_load(Path(e2e_stack.kubeconfig).read_text())
    kubeconfig["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    closed = tmp_path / "closed-kubeconfig"
    closed.write_text(yaml.safe_dump(kubeconfig))
    no_apiserver = _caldera(e2e_stack, "job", "list", "-n", namespace, KUBECONFIG=str(closed))
    assert _failed(no_apiserver) == (
        f"caldera: cannot reach the apiserver at https://127.0.0.1:{port} "
        f"(kubeconfig {closed}): connection refused"
    )

    missing = _failed(_caldera(e2e_stack, "job", "history", "nosuch", "-n", namespace))
    assert missing.startswith(
        f"caldera: could not read the history of job {namespace}/nosuch: workflow "
        f"vcjob/{namespace}/nosuch in Temporal namespace default at {e2e_stack.temporal_address}: "
    ), missing
    not_found = _failed(_caldera(e2e_stack, "job", "abort", "nosuch", "-n", namespace))
    assert not_found == f"caldera: job {namespace}/nosuch not found"

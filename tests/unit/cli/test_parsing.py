"""`caldera job|queue ...` arguments: what each flag means, the two namespaces kept apart, the
defaults taken from the environment, and the objects built from them (links, Command CRs)."""

from __future__ import annotations

import argparse

import pytest

from cli import bus, jobs, links, queues
from cli.main import parser
from models.bus import Action


def _parse(*argv: str) -> argparse.Namespace:
    return parser().parse_args(list(argv))


def test_job_list_flags() -> None:
    args = _parse("job", "list", "-n", "team-a", "--queue", "research", "-o", "json")
    assert (args.namespace, args.all_namespaces, args.queue) == ("team-a", False, "research")
    assert args.output == "json"
    assert _parse("job", "list", "-A").all_namespaces is True
    assert _parse("job", "list").namespace is None  # the kubeconfig context decides


def test_job_namespace_is_kubernetes_and_temporal_has_its_own_flag() -> None:
    args = _parse("job", "view", "a", "--namespace", "team-a", "--temporal-namespace", "prod")
    assert (args.name, args.namespace, args.temporal_namespace) == ("a", "team-a", "prod")
    assert _parse("job", "view", "a", "-n", "team-b").temporal_namespace == "default"


@pytest.mark.parametrize(("verb", "action"), list(jobs.ACTIONS.items()))
def test_each_job_verb_asks_for_its_volcano_action(verb: str, action: Action) -> None:
    args = _parse("job", verb, "train", "--reason", "maintenance")
    assert (args.name, args.action, args.reason, args.via_command) == (
        "train",
        action,
        "maintenance",
        False,
    )
    assert _parse("job", verb, "train", "--via-command").via_command is True


def test_job_actions_are_the_user_actions_volcano_accepts_in_commands() -> None:
    assert set(jobs.ACTIONS.values()) == {
        Action.ABORT_JOB,
        Action.RESUME_JOB,
        Action.RESTART_JOB,
        Action.TERMINATE_JOB,
        Action.COMPLETE_JOB,
    }


def test_suspend_is_vcctls_name_for_abort() -> None:
    assert _parse("job", "suspend", "train").action is _parse("job", "abort", "train").action
    assert _parse("job", "suspend", "train").action is Action.ABORT_JOB


def test_job_run_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse("job", "run")
    assert exit_.value.code == 2
    assert "-f/--filename" in capsys.readouterr().err


def test_connection_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "temporal.example:7233")
    monkeypatch.setenv("KUBECONFIG", "/etc/kube.conf")
    monkeypatch.setenv(links.UI_ENV, "https://ui.example")
    args = _parse("queue", "list")
    assert (args.temporal_address, args.ui_url) == ("temporal.example:7233", "https://ui.example")
    assert args.kubeconfig is None  # resolved from $KUBECONFIG when the client is built
    monkeypatch.delenv(links.UI_ENV)
    assert _parse("queue", "list").ui_url == "http://localhost:8233"


def test_queue_create_flags() -> None:
    args = _parse(
        "queue",
        "create",
        "research",
        "--weight",
        "4",
        "--parent",
        "science",
        "--capability",
        "cpu=8, memory=32Gi",
    )
    assert queues.manifest(args.name, args.weight, args.parent, args.capability) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 4, "parent": "science", "capability": {"cpu": "8", "memory": "32Gi"}},
    }
    plain = _parse("queue", "create", "q")
    assert queues.manifest(plain.name, plain.weight, plain.parent, plain.capability) == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 1},
    }


@pytest.mark.parametrize("bad", ["cpu", "cpu=", "=4", ","])
def test_queue_capability_must_be_resource_equals_quantity(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse("queue", "create", "q", "--capability", bad)
    assert exit_.value.code == 2
    assert "--capability" in capsys.readouterr().err


def test_queue_open_close_flags() -> None:
    args = _parse("queue", "close", "research", "--reason", "quota", "--via-command")
    assert (args.action, args.reason, args.via_command, args.command_namespace) == (
        Action.CLOSE_QUEUE,
        "quota",
        True,
        "default",
    )
    assert _parse("queue", "open", "research").action == Action.OPEN_QUEUE


def test_workflow_url_encodes_the_whole_id() -> None:
    assert (
        links.workflow_url("http://127.0.0.1:8233/", "default", "vcjob/team-a/train")
        == "http://127.0.0.1:8233/namespaces/default/workflows/vcjob%2Fteam-a%2Ftrain"
    )


def test_job_command_is_shaped_like_vcctls() -> None:
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "team-a", "uid": "uid-1"},
    }
    ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "train",
        "uid": "uid-1",
        "controller": True,
    }
    assert bus.command(job, Action.ABORT_JOB, "team-a", reason="maintenance") == {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "generateName": "train-abortjob-",
            "namespace": "team-a",
            "ownerReferences": [ref],
        },
        "action": "AbortJob",
        "target": ref,
        "reason": "maintenance",
    }


def test_queue_command_targets_the_queue() -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research", "uid": "q-uid"},
    }
    body = bus.command(queue, Action.CLOSE_QUEUE, "default")
    assert body["metadata"]["generateName"] == "research-closequeue-"
    assert body["target"] == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": "research",
        "uid": "q-uid",
        "controller": True,
    }
    assert "reason" not in body and "message" not in body


@pytest.mark.parametrize("noun", ["jobflow", "jobtemplate"])
def test_flow_verbs_are_vcctls_list_get_delete(noun: str) -> None:
    listed = _parse(noun, "list", "-n", "team-a", "-o", "yaml")
    assert (listed.namespace, listed.all_namespaces, listed.output) == ("team-a", False, "yaml")
    assert _parse(noun, "list", "--all-namespaces").all_namespaces is True
    assert _parse(noun, "list").namespace is None  # the kubeconfig context decides
    got = _parse(noun, "get", "flow", "-n", "team-a", "--temporal-namespace", "prod")
    assert (got.name, got.namespace, got.temporal_namespace) == ("flow", "team-a", "prod")
    by_name = _parse(noun, "delete", "flow")
    assert (by_name.name, by_name.filename) == ("flow", None)
    by_file = _parse(noun, "delete", "-f", "flows.yaml")  # vcctl's -f
    assert (by_file.name, by_file.filename) == (None, "flows.yaml")


def test_pod_list_flags_are_vcctls() -> None:
    args = _parse("pod", "list", "-j", "train", "-q", "research", "-n", "team-a")
    assert (args.job, args.queue, args.namespace, args.all_namespaces) == (
        "train",
        "research",
        "team-a",
        False,
    )
    longs = _parse("pod", "list", "--job", "a", "--queue", "q", "--all-namespaces", "-o", "json")
    assert (longs.job, longs.queue, longs.all_namespaces, longs.output) == ("a", "q", True, "json")


def test_queue_update_sets_each_field_given_whole() -> None:
    args = _parse(
        "queue",
        "update",
        "research",
        "-w",
        "4",
        "--capability",
        "cpu=8,memory=32Gi",
        "--guarantee",
        "cpu=2",
        "--reclaimable",
        "false",
    )
    assert queues.update_operations(args) == [
        {"op": "add", "path": "/spec/weight", "value": 4},
        {"op": "add", "path": "/spec/capability", "value": {"cpu": "8", "memory": "32Gi"}},
        {"op": "add", "path": "/spec/guarantee", "value": {"resource": {"cpu": "2"}}},
        {"op": "add", "path": "/spec/reclaimable", "value": False},
    ]
    deserved = _parse("queue", "update", "q", "--deserved", "cpu=1", "--weight", "2")
    assert [op["path"] for op in queues.update_operations(deserved)] == [
        "/spec/weight",
        "/spec/deserved",
    ]
    assert queues.update_operations(_parse("queue", "update", "q")) == []  # refused when run


@pytest.mark.parametrize(
    ("flags", "complaint"),
    [
        (["--weight", "0"], "0 is not between 1 and 65535"),
        (["--weight", "65536"], "65536 is not between 1 and 65535"),
        (["--weight", "heavy"], "'heavy' is not a whole number"),
        (["--capability", "cpu"], "is not resource=quantity"),
        (["--reclaimable", "maybe"], "'maybe' is not true or false"),
    ],
)
def test_queue_update_refuses_bad_values(
    flags: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        _parse("queue", "update", "q", *flags)
    assert exit_.value.code == 2
    assert complaint in capsys.readouterr().err

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

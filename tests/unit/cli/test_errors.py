"""The CLI's one error boundary: each failure a user can meet becomes one line naming what was
tried, a refused command prints the workflow's own reason unchanged, and nothing prints a
traceback."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
import urllib3
from kubernetes import client
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from cli import clients
from cli.clients import CliError, Connections, Refused, guarded
from cli.main import parser

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]
current-context: x
"""


@pytest.fixture
def conn(tmp_path: Path) -> Connections:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    args = parser().parse_args(
        ["job", "list", "--kubeconfig", str(path), "--temporal-address", "127.0.0.1:1"]
    )
    return Connections(args)


def test_context_namespace_is_the_default(conn: Connections, tmp_path: Path) -> None:
    assert conn.default_namespace() == "team-a"
    assert conn.kubeconfig == str(tmp_path / "kubeconfig")


def test_apiserver_404_reads_as_not_found(conn: Connections) -> None:
    with pytest.raises(CliError) as err, conn.kube_call("read job a", missing="job ns/a not found"):
        raise client.ApiException(status=404, reason="Not Found")
    assert str(err.value) == "job ns/a not found"


def test_apiserver_refusal_carries_its_own_message(conn: Connections) -> None:
    refused = client.ApiException(status=400, reason="Bad Request")
    refused.body = json.dumps({"message": 'job ns/a: spec.queue: queue "q" does not exist'})
    with pytest.raises(CliError) as err, conn.kube_call("create job ns/a"):
        raise refused
    assert (
        str(err.value)
        == 'could not create job ns/a: job ns/a: spec.queue: queue "q" does not exist'
    )


def test_unreachable_apiserver_names_address_and_kubeconfig(
    conn: Connections, tmp_path: Path
) -> None:
    refused = urllib3.exceptions.MaxRetryError(
        None,  # type: ignore[arg-type]
        "/apis",
        urllib3.exceptions.NewConnectionError(
            None, "Failed to establish a new connection: [Errno 111] Connection refused"
        ),  # type: ignore[arg-type]
    )
    with pytest.raises(CliError) as err, conn.kube_call("list jobs"):
        raise refused
    assert str(err.value) == (
        f"cannot reach the apiserver at https://127.0.0.1:1 "
        f"(kubeconfig {tmp_path / 'kubeconfig'}): connection refused"
    )


def test_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    args = parser().parse_args(["job", "list", "--kubeconfig", str(tmp_path / "none")])
    with pytest.raises(CliError, match=r"cannot load kubeconfig .*none"):
        _ = Connections(args).api


def test_unreachable_temporal_names_its_address(
    conn: Connections, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Connecting marks the process as one `clients.finish` ends with os._exit; restored after,
    # or a later test calling `cli.main.main` in-process would end pytest itself (exit 0).
    monkeypatch.setattr(clients, "_temporal_opened", False)
    with pytest.raises(CliError) as err:
        asyncio.run(conn.temporal())
    assert str(err.value) == (
        "cannot reach Temporal at 127.0.0.1:1 (namespace default): connection refused"
    )


def test_refused_update_is_the_validators_message(conn: Connections) -> None:
    why = "job ns/a is Running: only an Aborting or Aborted job can be resumed"
    failed = WorkflowUpdateFailedError(ApplicationError(why, type="CommandRefused"))
    with pytest.raises(Refused) as err, conn.temporal_call("resume job ns/a", "vcjob/ns/a"):
        raise failed
    assert str(err.value) == why


def test_missing_workflow_names_id_namespace_and_address(conn: Connections) -> None:
    missing = RPCError("workflow not found for ID: vcjob/ns/a", RPCStatusCode.NOT_FOUND, b"")
    with pytest.raises(CliError) as err, conn.temporal_call("abort job ns/a", "vcjob/ns/a"):
        raise missing
    assert str(err.value) == (
        "could not abort job ns/a: workflow vcjob/ns/a in Temporal namespace default at "
        "127.0.0.1:1: workflow not found for ID: vcjob/ns/a"
    )


def test_silent_worker_is_a_timeout_not_a_hang(conn: Connections) -> None:
    conn.timeout = conn.timeout / 600  # 0.1 s

    async def never() -> None:
        await asyncio.sleep(10)

    async def call() -> None:
        with conn.temporal_call("query workflow vcjob/ns/a", "vcjob/ns/a"):
            await conn.answer(never())

    with pytest.raises(CliError, match=r"no answer from workflow vcjob/ns/a within 0\.1s"):
        asyncio.run(call())


def _failing(error: BaseException) -> argparse.Namespace:
    def fn(args: argparse.Namespace) -> int:
        raise error

    return argparse.Namespace(fn=guarded(fn))


def test_guarded_prints_refusals_as_is_and_errors_prefixed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = _failing(Refused("job ns/a is Aborted: AbortJob does not apply to a finished job"))
    assert args.fn(args) == 1
    assert capsys.readouterr().err == (
        "job ns/a is Aborted: AbortJob does not apply to a finished job\n"
    )
    args = _failing(CliError("job ns/a not found"))
    assert args.fn(args) == 1
    assert capsys.readouterr().err == "caldera: job ns/a not found\n"

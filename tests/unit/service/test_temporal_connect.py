"""The worker and the forwarder wait for a Temporal server that is down instead of exiting."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from service import temporal

pytestmark = pytest.mark.unit


async def test_an_unreachable_server_is_waited_for_with_a_warning_per_attempt(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    attempts: list[str] = []
    connected = object()

    async def connect(options: temporal.TemporalOptions, runtime: Any = None) -> Any:
        attempts.append(options.address)
        if len(attempts) < 3:
            raise RuntimeError("Failed client connect: tcp connect error")
        return connected

    monkeypatch.setattr(temporal, "connect", connect)
    options = temporal.TemporalOptions(address="127.0.0.1:1")
    with caplog.at_level(logging.WARNING, logger=temporal.logger.name):
        client = await temporal.connect_patiently(options, backoff=(0.0, 0.0))
    assert client is connected
    assert len(attempts) == 3
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all(
        "temporal unreachable address=127.0.0.1:1" in w for w in warnings
    )


async def test_a_real_unreachable_address_fails_the_way_that_is_waited_for() -> None:
    # What connect_patiently catches is what the SDK raises for a server that is not there.
    with pytest.raises(RuntimeError, match="connect"):
        await temporal.connect(temporal.TemporalOptions(address="127.0.0.1:1"))


def _rpc(status: RPCStatusCode) -> RPCError:
    return RPCError("Namespace default is not found.", status, b"")


async def test_a_start_up_call_waits_through_a_server_whose_database_is_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The chaos soak's PostgreSQL SIGKILL: the server answered the worker's start of its
    # SchedulerWorkflow "Namespace default is not found", and the worker ended.
    answers: list[RPCError | str] = [_rpc(RPCStatusCode.NOT_FOUND), _rpc(RPCStatusCode.UNAVAILABLE)]
    answers.append("started")

    async def start() -> str:
        answer = answers.pop(0)
        if isinstance(answer, RPCError):
            raise answer
        return answer

    with caplog.at_level(logging.WARNING, logger=temporal.logger.name):
        assert await temporal.call_patiently("scheduler volcano", start, (0.0, 0.0)) == "started"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all("not ready for scheduler volcano" in w for w in warnings)


async def test_a_start_up_call_refused_for_good_is_raised() -> None:
    async def start() -> str:
        raise _rpc(RPCStatusCode.INVALID_ARGUMENT)

    with pytest.raises(RPCError):
        await temporal.call_patiently("scheduler volcano", start, (0.0, 0.0))

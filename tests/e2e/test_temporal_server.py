"""The Temporal server profile itself (`cli/devstack/temporal_server.py`), started here on its
own: the server on PostgreSQL for both stores, with more than one history shard, Caldera's
search attributes in `default`, the UI answering, and a workflow's history kept in PostgreSQL
across a restart of the server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import GetClusterInfoRequest
from temporalio.client import Client

from cli.devstack import processes, temporal_dev, temporal_server
from cli.devstack.temporal_dev import TemporalServer
from service import search_attributes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, TemporalServer]]:
    workdir = tmp_path_factory.mktemp("temporal-server")
    started = temporal_server.start(workdir, processes.free_port(), processes.free_port())
    try:
        yield workdir, started
    finally:
        temporal_dev.stop(started)
        temporal_server.remove_data(workdir)


async def _describe(address: str) -> tuple[str, str, int, set[str]]:
    client = await Client.connect(address)
    info = await client.workflow_service.get_cluster_info(GetClusterInfoRequest())
    attrs = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )
    return (
        info.persistence_store,
        info.visibility_store,
        info.history_shard_count,
        set(attrs.custom_attributes),
    )


def test_postgres_stores_shards_search_attributes_and_ui(
    server: tuple[Path, TemporalServer],
) -> None:
    _, started = server
    persistence, visibility, shards, custom = asyncio.run(_describe(started.address))
    assert persistence == "postgres12"
    assert "postgres12" in visibility
    assert shards == temporal_server.HISTORY_SHARDS > 1
    assert {k.name for k in search_attributes.ALL} <= custom
    assert processes.http_ok(started.ui)
    assert [p.name for p in started.processes] == ["postgres", "temporal-server", "temporal-ui"]


async def _start_and_count(address: str, workflow_id: str) -> int:
    client = await Client.connect(address)
    handle = await client.start_workflow(
        "NobodyRunsThis", id=workflow_id, task_queue=f"none-{workflow_id}"
    )
    return len([e async for e in handle.fetch_history_events()])


async def _history_length(address: str, workflow_id: str) -> int:
    client = await Client.connect(address)
    handle = client.get_workflow_handle(workflow_id)
    return len([e async for e in handle.fetch_history_events()])


def test_history_survives_a_server_restart(server: tuple[Path, TemporalServer]) -> None:
    _, started = server
    workflow_id = f"kept-{uuid.uuid4().hex[:6]}"
    before = asyncio.run(_start_and_count(started.address, workflow_id))
    restarted = processes.restart(started.process)  # SIGKILL: a crash
    try:
        port = int(started.address.rsplit(":", 1)[1])
        processes.wait_until(
            restarted, lambda: not processes.port_free(port), 120, "Temporal listening again"
        )

        async def again() -> int:
            for _ in range(120):
                try:
                    return await _history_length(started.address, workflow_id)
                except Exception:
                    await asyncio.sleep(1)
            raise AssertionError("the restarted server never answered")

        assert before >= 2 and asyncio.run(again()) == before
    finally:
        processes.stop(restarted)  # the fixture stops the rest

"""The Temporal dev server is up with Caldera's search attributes registered."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from service import search_attributes
from tests.e2e.conftest import E2EStack


async def test_search_attributes_are_registered(e2e_stack: E2EStack) -> None:
    client = await Client.connect(e2e_stack.temporal_address)
    resp = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )
    registered = set(resp.custom_attributes)
    assert {k.name for k in search_attributes.ALL} <= registered


def test_history_is_kept_in_a_write_ahead_log(e2e_stack: E2EStack) -> None:
    """Committed history survives the server process crashing, at one append per commit."""
    if e2e_stack.workdir is None:
        pytest.skip("a reused `caldera dev up` stack: its database may predate the pragmas")
    db = e2e_stack.workdir / "temporal" / "temporal.db"
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"

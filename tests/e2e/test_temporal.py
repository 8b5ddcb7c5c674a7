"""The Temporal dev server is up with Caldera's search attributes registered."""

from __future__ import annotations

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from tests.e2e.conftest import E2EStack
from workflows import search_attributes


async def test_search_attributes_are_registered(e2e_stack: E2EStack) -> None:
    client = await Client.connect(e2e_stack.temporal_address)
    resp = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace="default")
    )
    registered = set(resp.custom_attributes)
    assert {k.name for k in search_attributes.ALL} <= registered

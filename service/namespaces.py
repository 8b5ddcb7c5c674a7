"""Temporal namespaces Caldera runs in: registered with Caldera's search attributes.

The dev server registers the attributes in `default` only (its command-line flags); every
other namespace (a worker cluster's `caldera-worker-<i>`, an e2e module's own, the Temporal
server's `default`, which that server does not create) is made here, so a workflow's start or
upsert of `CalderaJobName` and the others never fails for an unknown attribute.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from service import search_attributes


async def register_namespace(
    address: str, namespace: str, retention: timedelta, timeout: float = 30.0
) -> None:
    """`namespace` with `retention` and Caldera's search attributes, once it answers; harmless
    when it exists (its retention is then left as it is). A new namespace reaches the
    frontend's cache after a moment: it is described until it answers (`timeout` seconds),
    since adding attributes to one the frontend does not know yet fails."""
    plain = await Client.connect(address)
    try:
        await plain.workflow_service.register_namespace(
            RegisterNamespaceRequest(
                namespace=namespace,
                workflow_execution_retention_period=Duration(
                    seconds=int(retention.total_seconds())
                ),
            )
        )
    except RPCError as e:
        if e.status != RPCStatusCode.ALREADY_EXISTS:
            raise
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            await plain.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=namespace)
            )
            break
        except RPCError:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.5)
    await plain.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=namespace,
            search_attributes={
                k.name: IndexedValueType.ValueType(k.indexed_value_type)
                for k in search_attributes.ALL
            },
        )
    )

"""BatchJobWorkflow with spec.scheduling (Kubernetes' WorkloadWithJob) on the time-skipping
server: the Workload and PodGroup are ensured before the first pod, every pod names the
PodGroup, and a changed gang minCount is patched onto both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from tests.workflows.batch_harness import BatchHarness, observed, until

GANG = {"schedulingPolicy": {"gang": {}}}


@pytest_asyncio.fixture
async def h(env: WorkflowEnvironment) -> AsyncIterator[BatchHarness]:
    async with BatchHarness.running(env) as harness:
        yield harness


def _order(h: BatchHarness) -> list[str]:
    return [n for n, _ in h.calls.log if n != "record_event"]


async def test_workload_ensured_before_the_first_pod_and_min_count_patched(
    h: BatchHarness,
) -> None:
    spec: dict[str, Any] = {"parallelism": 3, "completions": 3, "scheduling": GANG}
    handle = await h.submit(**spec)
    await until(handle, lambda v: len(h.calls.created()) == 3, "three pods created")
    order = _order(h)
    assert order.count("ensure_job_workload") == 1
    assert order.index("ensure_job_workload") < order.index("create_job_pods")
    [create] = h.calls.named("create_job_pods")
    assert create.group is not None and create.group.uid == "pg-uid"
    assert create.group.pod_group.startswith("train-")
    assert not h.calls.named("ensure_batch_pod_group")

    await observed(
        handle, **{**spec, "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    )
    await until(handle, lambda v: bool(h.calls.named("patch_job_gang_min_count")), "patched")
    [patch] = h.calls.named("patch_job_gang_min_count")
    assert patch.min_count == 2
    assert len(h.calls.named("ensure_job_workload")) == 1


async def test_a_job_without_scheduling_makes_no_workload(h: BatchHarness) -> None:
    handle = await h.submit(parallelism=2, completions=2)
    await until(handle, lambda v: len(h.calls.created()) == 2, "two pods created")
    assert not h.calls.named("ensure_job_workload")
    assert all(r.group is None for r in h.calls.named("create_job_pods"))

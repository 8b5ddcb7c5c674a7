"""PodGroupWorkflow on the time-skipping server: pods of one owner join one PodGroup, the owner
is read once per burst, the run ends when idle and carries its state through continue-as-new.
Activities are recording fakes under the real names."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment

from activities.controllers import workloads
from activities.messages import Done
from controllers.podgroup import build
from models import keys, labels
from models.meta import OwnerReference
from models.signals import podgroup as podgroup_signals
from tests.workflows.harness import fake_worker, last_run, settled
from workflows.podgroup import PodGroupWorkflow, PodGroupWorkflowInput

RS = OwnerReference(
    api_version="apps/v1", kind="ReplicaSet", name="web-1", uid="rs-uid", controller=True
)


@dataclass
class Calls:
    log: list[tuple[str, Any]] = field(default_factory=list)

    def named(self, name: str) -> list[Any]:
        return [arg for n, arg in self.log if n == name]


def fakes(calls: Calls, upper: dict[str, str]) -> list[Callable[..., Any]]:
    @activity.defn(name="read_owner_annotations")
    def read_owner_annotations(r: workloads.ReadOwnersInput) -> workloads.OwnerAnnotations:
        calls.log.append(("read_owner_annotations", r))
        return workloads.OwnerAnnotations(annotations=upper)

    @activity.defn(name="apply_workload_pod_group")
    def apply_workload_pod_group(r: workloads.ApplyPodGroupInput) -> workloads.PodsAnnotated:
        calls.log.append(("apply_workload_pod_group", r))
        return workloads.PodsAnnotated(uids=sorted(r.pods.values()))

    @activity.defn(name="record_event")
    def record_event(r: dict[str, Any]) -> Done:
        return Done()

    return [read_owner_annotations, apply_workload_pod_group, record_event]


@dataclass
class PodGroupHarness:
    env: WorkflowEnvironment
    task_queue: str
    calls: Calls
    namespace: str

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, env: WorkflowEnvironment) -> AsyncIterator[PodGroupHarness]:
        calls = Calls()
        upper = {labels.GROUP_MIN_MEMBER: "3"}
        async with fake_worker(env, PodGroupWorkflow, fakes(calls, upper)) as queue:
            yield cls(env, queue, calls, f"ns-{uuid.uuid4().hex[:8]}")

    async def seen(
        self, name: str, max_history: int = 0, scheduling_group: str = ""
    ) -> WorkflowHandle[Any, Any]:
        """What the forwarder sends for a new pod of the ReplicaSet: signal-with-start on its
        gang's id (the Kubernetes PodGroup `scheduling_group` names, when it names one)."""
        pod = podgroup_signals.WorkloadPod(
            namespace=self.namespace,
            name=name,
            uid=f"uid-{name}",
            owner_references=[RS],
            requests={"cpu": "1", "pods": "1"},
            scheduling_group=scheduling_group,
        )
        return await self.env.client.start_workflow(
            PodGroupWorkflow.run,
            PodGroupWorkflowInput(max_history=max_history),
            id=keys.pod_group_workflow_id(self.namespace, build.gang_key(pod)),
            task_queue=self.task_queue,
            start_signal=podgroup_signals.SIGNAL_WORKLOAD_POD_SEEN,
            start_signal_args=[podgroup_signals.WorkloadPodSeen(pod=pod)],
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )


@pytest.fixture
async def h(env: WorkflowEnvironment) -> AsyncIterator[PodGroupHarness]:
    async with PodGroupHarness.running(env) as harness:
        yield harness


async def _view(handle: WorkflowHandle[Any, Any]) -> podgroup_signals.PodGroupView:
    result: podgroup_signals.PodGroupView = await handle.query(PodGroupWorkflow.status)
    return result


async def test_pods_of_one_owner_join_one_podgroup_sized_by_owner(h: PodGroupHarness) -> None:
    handle = None
    for name in ("web-a", "web-b", "web-c"):
        handle = await h.seen(name)
    assert handle is not None
    view = await settled(lambda: _view(handle), lambda v: v.annotated == 3, "3 annotated", 10)
    assert view.name == "podgroup-rs-uid"
    assert view.applied is not None and view.applied.spec.min_member == 3
    assert view.applied.spec.min_resources == {"cpu": "3", "pods": "3"}
    applies = h.calls.named("apply_workload_pod_group")
    assert applies[0].group is not None
    assert all(a.group is None for a in applies[1:])  # built once, the rest only annotated
    assert sorted(p for a in applies for p in a.pods) == ["web-a", "web-b", "web-c"]
    assert len(h.calls.named("read_owner_annotations")) == 1  # one read for the burst


async def test_idle_run_ends_and_next_pod_starts_another(h: PodGroupHarness) -> None:
    handle = await h.seen("web-a")
    await handle.result()  # the server skips the idle time
    again = await h.seen("web-b")
    assert again.result_run_id != handle.result_run_id
    await settled(lambda: _view(again), lambda v: v.annotated == 1, "web-b annotated", 10)
    second = h.calls.named("apply_workload_pod_group")[-1]
    assert second.group is not None  # a new run applies again: the PodGroup may have changed
    assert second.pods == {"web-b": "uid-web-b"}


async def test_state_carried_through_continue_as_new(h: PodGroupHarness) -> None:
    handle = await h.seen("web-0", max_history=30)
    for i in range(1, 8):
        await h.seen(f"web-{i}")
    current = await last_run(h.env.client, handle.id, max_history=30)
    view = await settled(lambda: _view(current), lambda v: v.annotated == 8, "8 annotated", 10)
    assert view.applied is not None and view.idle_until


async def test_pods_naming_a_kubernetes_podgroup_wait_for_it_then_join_its_mirror(
    h: PodGroupHarness,
) -> None:
    """The forwarder's two signals on the gang's own id: the pods first (nothing applied while
    the PodGroup is unknown), then the PodGroup (`core_group_seen`): its Workload is read and
    the mirror applied, sized by minCount, with both pods annotated."""
    handle = None
    for name in ("w-0", "w-1"):
        handle = await h.seen(name, scheduling_group="train")
    assert handle is not None
    assert handle.id == keys.pod_group_workflow_id(h.namespace, "scheduling.k8s.io/podgroups/train")
    await settled(lambda: _view(handle), lambda v: len(v.waiting) == 2, "2 pods waiting", 10)
    assert h.calls.named("apply_workload_pod_group") == []

    group = podgroup_signals.CoreGroup(
        namespace=h.namespace, name="train", uid="pg-uid", min_member=2, workload="train-wl"
    )
    await handle.signal(
        podgroup_signals.SIGNAL_CORE_GROUP_SEEN, podgroup_signals.CoreGroupSeen(group=group)
    )
    view = await settled(lambda: _view(handle), lambda v: v.annotated == 2, "2 annotated", 10)
    assert view.name == "podgroup-pg-uid"
    assert view.applied is not None and view.applied.spec.min_member == 2  # not the owner's 3
    (read,) = h.calls.named("read_owner_annotations")
    assert [o.kind for o in read.owners] == ["Workload", "ReplicaSet"]

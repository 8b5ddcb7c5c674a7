"""PodGroupWorkflow: one durable workflow per gang of pods Caldera did not create (id
`podgroup/<namespace>/<owner uid>`, the pod's own uid for a bare pod, or
`podgroup/<namespace>/scheduling.k8s.io/podgroups/<name>` for the pods that name a Kubernetes
PodGroup, which it mirrors; `core_group_seen` tells it that PodGroup is there or changed).

It runs on the entity shell (`workflows.entity`) with the PodGroup controller's core
(`controllers.podgroup`). The forwarder signals-with-start `workload_pod_seen` for every pod
that names Volcano's scheduler and has no group-name annotation yet. What is its own: the
status query and the two activities (read the owners, apply the PodGroup and annotate the
pods), whose results go back into the inbox ahead of everything else. It ends after
`controller.IDLE` without a new pod.

Patches in force: none yet.
"""

from __future__ import annotations

from datetime import datetime
from typing import assert_never

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import workloads
    from controllers.outcomes import AnyOutcome
    from controllers.podgroup import controller
    from controllers.podgroup import effects as pg_fx
    from controllers.podgroup.state import PodGroupRecord
    from models import scheduling
    from models.signals import job as job_signals
    from models.signals import podgroup as podgroup_signals
    from workflows import activity_call
    from workflows.entity import Entity, Ref


class PodGroupWorkflowInput(BaseModel):
    """Start input and continue-as-new carrier. The forwarder starts runs with
    `models.signals.podgroup.PodGroupStart`, which must stay a subset of these fields
    (all defaulted)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state: PodGroupRecord | None = None  # None: a new run
    max_history: int = 0  # 0: continue as new when the server suggests it (tests set it low)


@workflow.defn(name=podgroup_signals.POD_GROUP_WORKFLOW)
class PodGroupWorkflow:
    @workflow.init
    def __init__(self, start: PodGroupWorkflowInput) -> None:
        self._entity = Entity[PodGroupRecord, controller.Input, pg_fx.Own](
            self, start.state or PodGroupRecord(), start.max_history
        )

    @workflow.run
    async def run(self, start: PodGroupWorkflowInput) -> None:
        await self._entity.run(controller.restored_timers(self._entity.state))

    # -- what the shell asks of the kind ---------------------------------------------------------

    def decide(
        self, state: PodGroupRecord, item: controller.Input | AnyOutcome, now: datetime
    ) -> controller.Decision:
        return controller.decide(state, item, now)

    def carry(
        self, state: PodGroupRecord, start_over: job_signals.JobObserved | None, max_history: int
    ) -> PodGroupWorkflowInput:
        return PodGroupWorkflowInput(state=state, max_history=max_history)

    def made_again(self, state: PodGroupRecord, item: object, max_history: int) -> None:
        """Never: its id is its owner's uid, which no other owner has, or its Kubernetes
        PodGroup's name (one made again under that name comes as `core_group_seen`)."""
        return None

    def answer(self, state: PodGroupRecord) -> str:
        return "Applied" if state.applied is not None else "Pending"

    def ref(self, state: PodGroupRecord) -> Ref:
        uid = (state.applied.metadata.uid if state.applied else None) or ""
        return Ref(
            namespace=state.namespace,
            name=state.name,
            uid=uid,
            api_version=scheduling.API_VERSION,
            kind="PodGroup",
        )

    def decided(self, before: PodGroupRecord, after: PodGroupRecord) -> None:
        return None

    # -- inputs -------------------------------------------------------------------------------

    @workflow.signal(name=podgroup_signals.SIGNAL_WORKLOAD_POD_SEEN)
    def workload_pod_seen(self, seen: podgroup_signals.WorkloadPodSeen) -> None:
        self._entity.accept(seen)

    @workflow.signal(name=podgroup_signals.SIGNAL_CORE_GROUP_SEEN)
    def core_group_seen(self, seen: podgroup_signals.CoreGroupSeen) -> None:
        self._entity.accept(seen)

    @workflow.query
    def status(self) -> podgroup_signals.PodGroupView:
        state = self._entity.state
        return podgroup_signals.PodGroupView(
            namespace=state.namespace,
            name=state.name,
            applied=state.applied,
            waiting=sorted(p.name for p in state.waiting.values()),
            annotated=state.annotated,
            idle_until=state.idle_until.isoformat() if state.idle_until else "",
            backlog=self._entity.inbox.backlog,
        )

    # -- the effects only this kind has ----------------------------------------------------------

    async def apply(self, effect: pg_fx.Own) -> None:
        match effect:
            case pg_fx.ReadOwners():
                read = await activity_call.run(
                    workloads.read_owner_annotations,
                    workloads.ReadOwnersInput(namespace=effect.namespace, owners=effect.owners),
                    options.KUBE_WRITE,
                    f"read {', '.join(f'{o.kind} {o.name}' for o in effect.owners)}",
                )
                found = controller.OwnersRead(annotations=read.annotations)
                self._entity.inbox.internal(found, first=True)
            case pg_fx.ApplyPodGroup():
                what = "apply PodGroup" if effect.group is not None else "PodGroup unchanged"
                done = await activity_call.run(
                    workloads.apply_workload_pod_group,
                    workloads.ApplyPodGroupInput(
                        namespace=effect.namespace,
                        group_name=effect.group_name,
                        group=effect.group,
                        pods=effect.pods,
                    ),
                    options.KUBE_WRITE,
                    f"{what} {effect.group_name}, annotate {len(effect.pods)} pods",
                )
                annotated = controller.PodsAnnotated(uids=done.uids)
                self._entity.inbox.internal(annotated, first=True)
            case _:
                assert_never(effect)

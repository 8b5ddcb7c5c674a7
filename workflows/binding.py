"""What a job shell does with the gang scheduler's placements: bind them, mark pods that could
not be bound, and tell the SchedulerWorkflow. Shared by the Volcano and batch/v1 shells so both
histories show the same activities with the same summaries."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.messages import (
        BindPlacementsInput,
        BindPodsResult,
        MarkUnschedulableInput,
        Unschedulable,
    )
    from activities.scheduler import binding
    from controllers.effects import BindPlacements, MarkUnschedulable, TellScheduler
    from models.signals import scheduler as scheduler_signals
    from workflows import activity_call


async def bind(namespace: str, effect: BindPlacements) -> BindPodsResult:
    """Volumes, then nodes, in one activity; the pods that failed come back in the result."""
    nodes = sorted({p.node for p in effect.placements})
    return await activity_call.run(
        binding.bind_placements,
        BindPlacementsInput(namespace=namespace, placements=effect.placements),
        options.VOLUME_BINDING,
        f"bind {len(effect.placements)} pods (session {effect.session}) to {', '.join(nodes)}",
    )


async def mark_unschedulable(namespace: str, effect: MarkUnschedulable) -> None:
    await activity_call.run(
        binding.mark_unschedulable,
        MarkUnschedulableInput(
            namespace=namespace,
            pods=[
                Unschedulable(pod=pod, reason="SchedulerError", message=why)
                for pod, why in effect.pods.items()
            ],
        ),
        options.KUBE_WRITE,
        f"mark {len(effect.pods)} pods unschedulable",
    )


async def tell_scheduler(effect: TellScheduler) -> None:
    """Best effort: a scheduler that does not hear of a failed bind lets its assumption
    expire, and one that misses "work arrived" runs its next periodic session anyway."""
    handle = workflow.get_external_workflow_handle(effect.scheduler)
    try:
        if effect.failed:
            await handle.signal(
                scheduler_signals.SIGNAL_BIND_FAILED,
                scheduler_signals.BindFailed(pods=effect.failed),
            )
        else:
            await handle.signal(
                scheduler_signals.SIGNAL_WORK_ARRIVED, scheduler_signals.WorkArrived()
            )
    except Exception as e:
        workflow.logger.info("scheduler not told scheduler=%s error=%s", effect.scheduler, e)

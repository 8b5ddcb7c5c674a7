"""The Volcano Job's short writes (its status, its PodGroup, its pods) as the entity shell
carries them out (`workflows.writes`): one home for each write's input, options and summary,
whether it runs alone or with the other writes of its decision.

Pods go with the others only where their writes are local (`local_pod_writes`); otherwise each
pod batch is a regular activity, with heartbeats, as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import assert_never

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities import options, status
    from activities.controllers import podgroups, pods
    from activities.messages import (
        CreatePodsInput,
        CreatePodsStep,
        DeletePodGroupStep,
        DeletePodsStep,
        EnsurePodGroupInput,
        EnsurePodGroupStep,
        PodGroupInput,
        PodsInput,
        WriteStatusInput,
        WriteStatusStep,
    )
    from controllers.job import effects as job_fx
    from models.meta import Identity
    from models.signals.job import ControllerSettings
    from workflows.writes import Write

Short = (
    job_fx.WriteStatus
    | job_fx.EnsurePodGroup
    | job_fx.DeletePodGroup
    | job_fx.CreatePods
    | job_fx.DeletePods
)


def write(effect: Short, who: Identity, settings: ControllerSettings) -> Write:
    match effect:
        case job_fx.WriteStatus():
            phase = str(effect.status.state.phase or "") if effect.status.state else ""
            return Write(
                effect.kind,
                WriteStatusStep(
                    input=WriteStatusInput(
                        namespace=who.namespace, name=who.name, status=effect.status
                    )
                ),
                status.write_job_status,
                options.KUBE_WRITE,
                f"write status {phase}",
            )
        case job_fx.EnsurePodGroup():
            return Write(
                effect.kind,
                EnsurePodGroupStep(
                    input=EnsurePodGroupInput(job=effect.job, look_up=effect.look_up)
                ),
                podgroups.ensure_pod_group,
                options.KUBE_WRITE,
                "ensure PodGroup",
            )
        case job_fx.DeletePodGroup():
            return Write(
                effect.kind,
                DeletePodGroupStep(input=PodGroupInput(namespace=who.namespace, name=effect.name)),
                podgroups.delete_pod_group,
                options.KUBE_WRITE,
                f"delete PodGroup {effect.name}",
            )
        case job_fx.CreatePods():
            created = CreatePodsInput(
                job=effect.job,
                version=effect.version,
                retry_count=effect.retry_count,
                pods=effect.pods,
                scheduler_override=effect.scheduler_override,
                pod_group=effect.pod_group,
            )
            return Write(
                effect.kind,
                CreatePodsStep(input=created),
                pods.create_pods,
                options.pod_batch(settings.local_pod_writes),
                f"create {len(effect.pods)} pods (version {effect.version})",
            )
        case job_fx.DeletePods():
            return Write(
                effect.kind,
                DeletePodsStep(input=PodsInput(namespace=who.namespace, names=effect.names)),
                pods.delete_pods,
                options.pod_batch(settings.local_pod_writes),
                f"delete {len(effect.names)} pods: {effect.why}",
            )
        case _:
            assert_never(effect)


def _short(effect: object, settings: ControllerSettings) -> Short | None:
    """The effect as a write that may go with others; None: it goes alone."""
    if isinstance(effect, job_fx.WriteStatus | job_fx.EnsurePodGroup | job_fx.DeletePodGroup):
        return effect
    if isinstance(effect, job_fx.CreatePods | job_fx.DeletePods) and settings.local_pod_writes:
        return effect
    return None


def leading(effects: Sequence[object], who: Identity, settings: ControllerSettings) -> list[Write]:
    """The writes at the head of `effects` that may go together, in order."""
    out: list[Write] = []
    for effect in effects:
        short = _short(effect, settings)
        if short is None:
            break
        out.append(write(short, who, settings))
    return out


def pair(effects: Sequence[object], settings: ControllerSettings) -> bool:
    """Some two consecutive effects would go together (the patch is asked only then)."""
    short = [_short(e, settings) is not None for e in effects]
    return any(a and b for a, b in itertools.pairwise(short))

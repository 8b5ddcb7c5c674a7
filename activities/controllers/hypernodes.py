"""One round of HyperNode discovery: read nodes and HyperNodes, plan, write.

The plan is `controllers.hypernode.discovery`'s; this module only reads and carries it out.
Names are drawn from a Random seeded by the workflow, so a retried attempt draws the same
names, and what an earlier attempt created is found again by its labels and reused.
Writes follow Volcano's: a create; an update that replaces the spec and merges labels (a
merge patch does both); `status.nodeCount` through the status subresource; a delete. A
HyperNode created meanwhile (409) or already gone (404) is the desired end state.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio import activity

from activities import errors, kube
from activities.controllers import controller_conf
from controllers.hypernode import discovery
from controllers.hypernode.members import NodeLabels
from models import topology


class DiscoverHyperNodesInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int  # the names' random suffixes are drawn from Random(seed)


class DiscoverHyperNodesResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False  # label discovery is enabled in the configuration
    discovered: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    counted: int = 0  # nodeCount writes
    interval_ms: int = 0  # the configuration's interval; 0: not set (the workflow's period)
    unsupported: list[str] = []  # enabled sources Caldera does not run


def _nodes() -> list[NodeLabels]:
    with errors.kube_call("list nodes"):
        found = kube.core().list_node()
    return [
        NodeLabels(name=n.metadata.name or "", labels=dict(n.metadata.labels or {}))
        for n in found.items
        if n.metadata is not None
    ]


def _hyper_nodes() -> list[topology.HyperNode]:
    with errors.kube_call("list hypernodes"):
        found = kube.as_dict(
            kube.custom().list_cluster_custom_object(
                topology.GROUP, topology.VERSION, topology.PLURAL
            )
        )
    return [topology.HyperNode.load(item) for item in found.get("items") or []]


def _create(hn: topology.HyperNode) -> None:
    name = hn.metadata.name
    with errors.kube_call(f"create hypernode {name}", ok=errors.EXISTS_OK):
        kube.custom().create_cluster_custom_object(
            topology.GROUP, topology.VERSION, topology.PLURAL, kube.body(hn.dump())
        )


def _patch(name: str, patch: dict[str, Any], status: bool = False) -> None:
    call = (
        kube.custom().patch_cluster_custom_object_status
        if status
        else kube.custom().patch_cluster_custom_object
    )
    what = f"write status of hypernode {name}" if status else f"update hypernode {name}"
    with errors.kube_call(what, ok=errors.GONE_OK):
        call(
            topology.GROUP,
            topology.VERSION,
            topology.PLURAL,
            name,
            patch,
            _content_type="application/merge-patch+json",
        )


def _delete(name: str) -> None:
    with errors.kube_call(f"delete hypernode {name}", ok=errors.GONE_OK):
        kube.custom().delete_cluster_custom_object(
            topology.GROUP, topology.VERSION, topology.PLURAL, name
        )


def _apply(plan: discovery.Plan) -> None:
    for hn in plan.creates:
        _create(hn)
        activity.logger.info("hypernode created name=%s tier=%d", hn.metadata.name, hn.spec.tier)
    for update in plan.updates:
        spec = update.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
        _patch(update.name, {"metadata": {"labels": update.labels}, "spec": spec})
        activity.logger.info("hypernode updated name=%s", update.name)
    for count in plan.counts:
        _patch(count.name, {"status": {"nodeCount": count.node_count}}, status=True)
    for name in plan.deletes:
        _delete(name)
        activity.logger.info("hypernode deleted name=%s source=label", name)


@activity.defn(name="discover_hypernodes")
def discover_hypernodes(request: DiscoverHyperNodesInput) -> DiscoverHyperNodesResult:
    config = controller_conf.discovery_config()
    unsupported = list(config.unsupported())
    if unsupported:
        activity.logger.warning(
            "hypernode discovery sources not supported, ignored sources=%s", ",".join(unsupported)
        )
    plan = discovery.plan(config, _nodes(), _hyper_nodes(), random.Random(request.seed))
    _apply(plan)
    interval = config.interval()
    return DiscoverHyperNodesResult(
        enabled=config.label() is not None,
        discovered=plan.discovered,
        created=len(plan.creates),
        updated=len(plan.updates),
        deleted=len(plan.deletes),
        counted=len(plan.counts),
        interval_ms=int(interval.total_seconds() * 1000) if interval is not None else 0,
        unsupported=unsupported,
    )

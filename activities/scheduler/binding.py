"""Binding side effects, as Volcano's bind flow: a placed gang's volumes first, then its nodes.

`bind_session` (every gang of a scheduling session), `bind_placements` (one gang, for a
JobWorkflow that still gets its placements) and `mark_unschedulable` are the activities; the
rest are their steps.
Volume binding (`activities/scheduler/volume_binding.py`) comes first for the pods that have
volumes. Node binding posts `pods/binding`; a pod already bound where it was placed is success,
anything else is reported per pod so the scheduler retries it in a later scheduling session rather
than failing the whole gang. A pod's ResourceClaims are allocated and reserved for it just before
(`activities.scheduler.resourceclaims`, kube-scheduler's DynamicResources PreBind), and released
again when its binding fails (Unreserve).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from temporalio import activity

from activities import errors, kube
from activities.messages import (
    BindPlacementsInput,
    BindPodsInput,
    BindPodsResult,
    BindSessionInput,
    BindSessionResult,
    Done,
    JobPlacements,
    MarkUnschedulableInput,
    Unschedulable,
)
from activities.scheduler import informer, resourceclaims, volume_binding
from models.signals import scheduler as scheduler_signals
from service import metrics

_BOUND_ELSEWHERE = "already bound to node"
_PARALLEL = 16


def _node_exists(name: str) -> bool:
    """From the scheduler's cluster cache where this worker runs one (the session placed on
    what it saw, so this costs no request), else read from the apiserver."""
    known = informer.node_known(name)
    if known is not None:
        return known
    try:
        kube.core().read_node(name)
    except client.ApiException as e:
        if e.status == errors.NOT_FOUND:
            return False
        raise
    return True


def _bind_one(namespace: str, pod: str, uid: str, node: str, exists: NodeCheck) -> str | None:
    """None when the pod is bound to `node`, else why not. The binding is posted first and
    the pod read only when it is refused: binding costs one request in the common case."""
    if not exists(node):
        return f"failed to bind to node {node}: node not found"
    meta: dict[str, Any] = {"name": pod, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    core = kube.core()
    try:
        # The generated client cannot read the Binding it gets back; the status code is enough.
        bound = core.create_namespaced_pod_binding(
            pod, namespace, kube.body(binding), _preload_content=False
        )
        kube.unread(bound)
    except client.ApiException as e:
        if e.status not in (errors.NOT_FOUND, errors.CONFLICT):
            with errors.kube_call(f"bind pod {namespace}/{pod} to {node}"):
                raise  # the one mapping of other API errors (retry, or non-retryable 422/403)
        return _refused(namespace, pod, uid, node, str(e.reason))
    return None


def _refused(namespace: str, pod: str, uid: str, node: str, reason: str) -> str | None:
    """Why a refused binding failed, read from the pod; None: it is bound to `node` already
    (an earlier attempt of this activity bound it)."""
    try:
        current = kube.core().read_namespaced_pod(pod, namespace)
    except client.ApiException as e:
        if e.status == errors.NOT_FOUND:
            return "pod does not exist any more"
        raise
    if uid and current.metadata is not None and current.metadata.uid != uid:
        return "pod does not exist any more"  # the same name, another pod
    bound_to = current.spec.node_name if current.spec else None
    if bound_to:
        return None if bound_to == node else f"{_BOUND_ELSEWHERE} {bound_to}"
    return f"failed to bind to node {node}: {reason}"


NodeCheck = Callable[[str], bool]
Placed = tuple[str, scheduler_signals.PlacedPod]  # (namespace, placement)
Failures = dict[tuple[str, str], str]  # (namespace, pod) → why it was not bound


def _with_uid(item: Placed) -> Placed | str:
    """The placement with its pod's UID, which a claim's `reservedFor` needs (read when the
    placement does not carry it); a string: why the pod cannot be bound."""
    namespace, p = item
    if p.uid:
        return item
    try:
        current = kube.core().read_namespaced_pod(p.pod, namespace)
    except client.ApiException as e:
        if e.status == errors.NOT_FOUND:
            return "pod does not exist any more"
        raise
    uid = current.metadata.uid if current.metadata is not None else None
    return (namespace, p.model_copy(update={"uid": uid or ""}))


def _in_pool(work: Callable[[Placed], str | None], items: Sequence[Placed]) -> Failures:
    """`work` on each placement in parallel; the failures it returned."""
    if not items:
        return {}
    with ThreadPoolExecutor(max_workers=_PARALLEL) as pool:
        outcomes = list(pool.map(work, items))
    activity.heartbeat(len(outcomes))
    return {
        (ns, p.pod): why for (ns, p), why in zip(items, outcomes, strict=True) if why is not None
    }


def _reserve_claims(
    pods: Sequence[Placed], exists: NodeCheck, locks: resourceclaims.Locks
) -> tuple[list[Placed], Failures]:
    """The claims of pods that have some, in two rounds over all of them: the claims their
    plans allocate first, then those they share, so a pod sharing a claim another pod of the
    gang allocates finds it allocated. The placements whose claims were touched (with their
    pod's UID), and the pods that cannot be bound."""
    failed: Failures = {}
    touched: list[Placed] = []
    for item in pods:
        namespace, p = item
        found = _with_uid(item)
        if isinstance(found, str):
            failed[namespace, p.pod] = found
        elif not exists(p.node):  # nothing written for a binding that cannot happen
            failed[namespace, p.pod] = f"failed to bind to node {p.node}: node not found"
        else:
            touched.append(found)

    def round_(allocating: bool) -> Callable[[Placed], str | None]:
        def reserve(item: Placed) -> str | None:
            namespace, p = item
            try:
                for plan in p.claims:
                    if plan.allocates == allocating:
                        resourceclaims.reserve(namespace, p.pod, p.uid, plan, locks)
            except resourceclaims.ClaimError as e:
                return str(e)
            return None

        return reserve

    for allocating in (True, False):
        failed.update(_in_pool(round_(allocating), [i for i in touched if _key(i) not in failed]))
    return touched, failed


def _release_claims(pods: Sequence[Placed], locks: resourceclaims.Locks) -> None:
    """Unreserve what `_reserve_claims` wrote for pods that were not bound, in the opposite
    order: the claims they share first, so a claim allocated by one of them that none of them
    keeps is deallocated in the second round."""

    def round_(allocating: bool) -> Callable[[Placed], str | None]:
        def release(item: Placed) -> None:
            namespace, p = item
            for plan in reversed(p.claims):
                if plan.allocates == allocating:
                    resourceclaims.release(namespace, p.uid, plan, locks)

        return release

    for allocating in (False, True):
        _in_pool(round_(allocating), pods)


def _key(item: Placed) -> tuple[str, str]:
    return item[0], item[1].pod


def bind_nodes(pods: Sequence[Placed]) -> Failures:
    """Node bindings of (namespace, placement)s, in parallel, each after its ResourceClaims;
    the failures by (namespace, pod). Each node is looked up once per call, not once per pod:
    a binding to a node deleted a moment ago is accepted by the apiserver and would leave the
    pod on no node at all."""
    exists: NodeCheck = functools.cache(_node_exists)
    locks = resourceclaims.Locks()
    touched, failed = _reserve_claims([i for i in pods if i[1].claims], exists, locks)
    uids = {_key(i): i[1].uid for i in touched}

    def bind(item: Placed) -> str | None:
        namespace, p = item
        return _bind_one(namespace, p.pod, uids.get(_key(item), p.uid), p.node, exists)

    failed.update(_in_pool(bind, [i for i in pods if _key(i) not in failed]))
    # A pod bound elsewhere (by another scheduler) keeps what it holds; the others let go.
    undo = [
        i for i in touched if _key(i) in failed and not failed[_key(i)].startswith(_BOUND_ELSEWHERE)
    ]
    _release_claims(undo, locks)
    return failed


def _bind_batch(
    namespace: str, placements: Sequence[scheduler_signals.PlacedPod]
) -> BindPodsResult:
    failures = bind_nodes([(namespace, p) for p in placements])
    failed = {pod: why for (_, pod), why in failures.items()}
    bound = [p.pod for p in placements if p.pod not in failed]
    _count(bound, failed)
    return BindPodsResult(bound=bound, failed=failed)


def bind_pods(request: BindPodsInput) -> BindPodsResult:
    """Node bindings of a batch, in parallel (a 100-pod gang binds in one round trip's time)."""
    placed = [
        scheduler_signals.PlacedPod(pod=p.pod, uid=p.uid, node=p.node) for p in request.placements
    ]
    return _bind_batch(request.namespace, placed)


def failure_reason(why: str) -> str:
    """The `reason` label of caldera_bind_failures for a failure message (a few fixed values)."""
    if why.startswith("execute preBind"):
        return "VolumeBinding"
    if why.startswith("already bound"):
        return "BoundElsewhere"
    if why == "pod does not exist any more":
        return "PodGone"
    if why.endswith("node not found"):
        return "NodeNotFound"
    if why.startswith("claim "):
        return "DynamicResources"  # a ResourceClaim could not be allocated or reserved
    return "BindRejected"  # the apiserver refused the binding (404/409)


def _count(bound: list[str], failed: dict[str, str]) -> None:
    """Once per completed attempt: a failed attempt raised before getting here."""
    meter = metrics.activity_meter()
    metrics.PODS_BOUND.on(meter).add(len(bound))
    failures = metrics.BIND_FAILURES.on(meter)
    for why in failed.values():
        failures.add(1, {"reason": failure_reason(why)})


@activity.defn(name="mark_unschedulable")
def mark_unschedulable(request: MarkUnschedulableInput) -> Done:
    """PodScheduled=False with Volcano's reason and message (and nominatedNodeName if set)."""
    for entry in request.pods:
        write_pod_scheduled(request.namespace, entry)
    return Done()


def write_pod_scheduled(namespace: str, entry: Unschedulable) -> None:
    """The pod's PodScheduled=False condition, as the scheduler and a failed bind both write it."""
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": entry.reason,
        "message": entry.message,
        "lastTransitionTime": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    status: dict[str, Any] = {"conditions": [condition]}
    if entry.nominated_node:
        status["nominatedNodeName"] = entry.nominated_node
    with errors.kube_call(f"mark pod {namespace}/{entry.pod} unschedulable", ok=errors.GONE_OK):
        written = kube.core().patch_namespaced_pod_status(
            entry.pod, namespace, {"status": status}, _preload_content=False
        )
        kube.unread(written)


@activity.defn(name="bind_placements")
def bind_placements(request: BindPlacementsInput) -> BindPodsResult:
    """A placed gang: each pod's volumes first (reverted if they fail), then the node bindings
    of the pods whose volumes are ready, batched. Per-pod failures are returned, not raised."""
    failed = volume_binding.bind_pod_volumes(
        request.namespace, request.placements, request.volume_timeout_seconds
    )
    ready = [p for p in request.placements if p.pod not in failed]
    nodes = _bind_batch(request.namespace, ready)
    _count([], failed)  # the volume failures; _bind_batch counted the node bindings
    return BindPodsResult(bound=nodes.bound, failed={**failed, **nodes.failed})


@activity.defn(name="bind_session")
def bind_session(request: BindSessionInput) -> BindSessionResult:
    """Every gang one scheduling session placed, bound where it was decided (as Volcano's
    scheduler binds its own)."""
    bound, failed = bind_gangs(request.jobs, request.volume_timeout_seconds)
    return BindSessionResult(bound=bound, failed=failed)


def bind_gangs(jobs: Sequence[JobPlacements], volume_timeout: float) -> tuple[int, dict[str, str]]:
    """Volumes per gang first, then every node binding in one pool; how many pods were bound,
    and "<ns>/<pod>" → why for those that were not. A pod that could not be bound gets
    PodScheduled=False saying why; the caller drops its assumption, so a later session places
    it again."""
    with_volumes = [j for j in jobs if j.binds_volumes]
    failed: dict[tuple[str, str], str] = {}
    if with_volumes:
        with ThreadPoolExecutor(max_workers=_PARALLEL) as pool:
            outcomes = pool.map(
                lambda j: volume_binding.bind_pod_volumes(
                    j.namespace, j.placements, volume_timeout
                ),
                with_volumes,
            )
            for job, volume_failures in zip(with_volumes, outcomes, strict=True):
                failed.update({(job.namespace, pod): why for pod, why in volume_failures.items()})
    ready = [
        (j.namespace, p) for j in jobs for p in j.placements if (j.namespace, p.pod) not in failed
    ]
    failed.update(bind_nodes(ready))
    for (namespace, pod), why in sorted(failed.items()):
        write_pod_scheduled(namespace, Unschedulable(pod=pod, reason="SchedulerError", message=why))
    bound = [f"{ns}/{p.pod}" for ns, p in ready if (ns, p.pod) not in failed]
    _count(bound, {pod: why for (_, pod), why in failed.items()})
    return len(bound), {f"{ns}/{pod}": why for (ns, pod), why in failed.items()}

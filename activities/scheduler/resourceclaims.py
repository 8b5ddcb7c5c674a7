"""A placed pod's ResourceClaims, made ready before its node binding, as kube-scheduler's
DynamicResources plugin does it in PreBind (`bindClaim`) and undoes it in Unreserve.

The gang scheduler decides each claim's devices (`ClaimPlan`); `reserve` writes one decision:
for a claim to allocate, the finalizer `resource.kubernetes.io/delete-protection` by a normal
update first (a status update ignores metadata), then `status.allocation` (with
`allocationTimestamp`, as kube-scheduler 1.36+ writes it, its DRADeviceBindingConditions gate on
by default; older apiservers drop the field) and the pod in `status.reservedFor`, in one status
update carrying the resourceVersion read: a conflict reads again and retries, as client-go's
`retry.RetryOnConflict` does. A claim already allocated as planned (an earlier attempt of the
activity wrote it) only gets the pod's reservation, never a second one; a claim allocated
otherwise, replaced, going or refused by the apiserver fails the pod's binding (`ClaimError`),
so the scheduler drops the assumption and places the pod again.

`release` undoes that for a pod whose binding failed: its reservation goes (kube-scheduler's
Unreserve), and a claim its plan allocated that no other pod holds gets its allocation and the
finalizer cleared as well (what the ResourceClaim controller does to a claim nobody uses any
more), so the devices are free and the pod's next placement is not tied to this node.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client

from activities import errors, kube
from models.signals.scheduler import ClaimPlan

logger = logging.getLogger(__name__)

FINALIZER: Final = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
ATTEMPTS: Final = 5  # writes per claim before conflicts fail the pod (client-go's DefaultRetry)

Obj = dict[str, Any]


class ClaimError(Exception):
    """The pod cannot be bound with this claim now; the message says why (its bind failure)."""


class _Conflict(Exception):
    """The claim changed since it was read: read it again."""


class Locks:
    """One lock per claim for the pods bound together: the pods of a gang sharing a claim
    take turns at it rather than conflicting with one another."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, str], threading.Lock] = {}

    def of(self, namespace: str, name: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault((namespace, name), threading.Lock())


def _api() -> client.ResourceV1Api:
    return client.ResourceV1Api(kube.api())


def _why(e: client.ApiException) -> str:
    """The apiserver's own message when it sent one (a 422 names the field), else the status."""
    try:
        message = json.loads(e.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else f"{e.status} {e.reason}"


def _parsed(response: Any) -> Obj:
    doc = json.loads(response.data)
    if not isinstance(doc, dict):
        raise TypeError(f"expected a ResourceClaim from the apiserver, got {type(doc).__name__}")
    return doc


def _read(namespace: str, name: str) -> Obj | None:
    """The claim as the apiserver has it now (not the cache: its resourceVersion guards the
    write); None: there is none."""
    try:
        return _parsed(
            _api().read_namespaced_resource_claim(name, namespace, _preload_content=False)
        )
    except client.ApiException as e:
        if e.status == errors.NOT_FOUND:
            return None
        raise


def _update(claim: Obj, status: bool) -> Obj:
    """Write `claim` back (its status, or the rest), guarded by the resourceVersion read."""
    meta = claim["metadata"]
    write = (
        _api().replace_namespaced_resource_claim_status
        if status
        else _api().replace_namespaced_resource_claim
    )
    try:
        written = write(meta["name"], meta["namespace"], kube.body(claim), _preload_content=False)
        return _parsed(written)
    except client.ApiException as e:
        if e.status == errors.CONFLICT:
            raise _Conflict from e
        raise


def _results(allocation: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    results = (allocation.get("devices") or {}).get("results") or []
    return [(r.get("request"), r.get("driver"), r.get("pool"), r.get("device")) for r in results]


def _planned(plan: ClaimPlan) -> list[tuple[str, str, str, str]]:
    return [(d.request, d.driver, d.pool, d.device) for d in plan.devices]


def _ours(plan: ClaimPlan, allocation: Mapping[str, Any] | None) -> bool:
    """The claim is allocated as `plan` allocates it (by this attempt or an earlier one)."""
    return plan.allocates and allocation is not None and _results(allocation) == _planned(plan)


def allocation(plan: ClaimPlan, now: datetime) -> Obj:
    """`status.allocation` for a plan that allocates: its devices and configs, and the node they
    sit on as the allocator's node selector (none for devices every node reaches)."""
    devices: Obj = {
        "results": [
            {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device}
            for d in plan.devices
        ]
    }
    if plan.config:
        devices["config"] = [dict(c) for c in plan.config]
    out: Obj = {
        "devices": devices,
        "allocationTimestamp": now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if plan.node:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [plan.node]}]}
        out["nodeSelector"] = {"nodeSelectorTerms": [term]}
    return out


def _reserved(status: Mapping[str, Any], uid: str) -> bool:
    return any(r.get("uid") == uid for r in status.get("reservedFor") or [])


def _reference(pod: str, uid: str) -> Obj:
    """A pod in `status.reservedFor` (the core group: no apiGroup), as kube-scheduler writes it."""
    return {"resource": "pods", "name": pod, "uid": uid}


def _checked(claim: Obj | None, plan: ClaimPlan, key: str) -> Obj:
    if claim is None:
        raise ClaimError(f"claim {key} does not exist")
    meta = claim.get("metadata") or {}
    if plan.uid and meta.get("uid") != plan.uid:
        raise ClaimError(f"claim {key} was replaced")
    if meta.get("deletionTimestamp"):
        raise ClaimError(f"claim {key} is being deleted")
    return claim


def _reserve_once(namespace: str, pod: str, uid: str, plan: ClaimPlan, key: str) -> None:
    """One read and the writes it calls for; `_Conflict` when the claim changed meanwhile."""
    claim = _checked(_read(namespace, plan.claim), plan, key)
    status: Obj = dict(claim.get("status") or {})
    current = status.get("allocation")
    if plan.allocates and current is None:
        meta = claim["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            # A normal update: the status subresource ignores metadata. Kept if the status
            # write fails after it (kube-scheduler keeps it too; release drops it).
            meta = {**meta, "finalizers": [*(meta.get("finalizers") or []), FINALIZER]}
            claim = _checked(_update({**claim, "metadata": meta}, status=False), plan, key)
        status["allocation"] = allocation(plan, datetime.now(UTC))
    elif plan.allocates and not _ours(plan, current):
        raise ClaimError(f"claim {key} is allocated elsewhere")
    elif current is None:
        raise ClaimError(f"claim {key} is not allocated")  # its allocating pod failed first
    elif _reserved(status, uid):
        return  # a retried bind: nothing left to write
    status["reservedFor"] = [*(status.get("reservedFor") or []), _reference(pod, uid)]
    _update({**claim, "status": status}, status=True)


def reserve(namespace: str, pod: str, uid: str, plan: ClaimPlan, locks: Locks) -> None:
    """Allocate `plan`'s claim if the plan says so and reserve it for the pod; idempotent.
    Raises ClaimError when the pod cannot be bound with it (any refusal of the apiserver
    included: the scheduler places the pod again, as kube-scheduler retries a failed PreBind)."""
    key = f"{namespace}/{plan.claim}"
    with locks.of(namespace, plan.claim):
        for _ in range(ATTEMPTS):
            try:
                _reserve_once(namespace, pod, uid, plan, key)
                return
            except _Conflict:
                continue
            except client.ApiException as e:
                raise ClaimError(f"claim {key} could not be reserved: {_why(e)}") from e
    raise ClaimError(f"claim {key} could not be reserved: it kept changing ({ATTEMPTS} conflicts)")


def _release_once(namespace: str, uid: str, plan: ClaimPlan) -> None:
    claim = _read(namespace, plan.claim)
    if claim is None or (plan.uid and (claim.get("metadata") or {}).get("uid") != plan.uid):
        return  # gone or replaced: nothing of this pod's is left on it
    status: Obj = dict(claim.get("status") or {})
    reserved = status.get("reservedFor") or []
    kept = [r for r in reserved if r.get("uid") != uid]
    clear = _ours(plan, status.get("allocation")) and not kept
    if clear or len(kept) != len(reserved):
        status["reservedFor"] = kept
        if clear:
            status.pop("allocation", None)
        claim = _update({**claim, "status": status}, status=True)
    meta = claim.get("metadata") or {}
    finalizers = meta.get("finalizers") or []
    unallocated = not (claim.get("status") or {}).get("allocation")
    if plan.allocates and unallocated and FINALIZER in finalizers:
        # Not needed once nothing is allocated; the ResourceClaim controller drops it likewise.
        meta = {**meta, "finalizers": [f for f in finalizers if f != FINALIZER]}
        _update({**claim, "metadata": meta}, status=False)


def release(namespace: str, uid: str, plan: ClaimPlan, locks: Locks) -> None:
    """Undo `reserve` for a pod whose binding failed: the pod leaves `reservedFor`; a claim
    allocated as the plan allocated it and reserved for nobody else is deallocated. Best
    effort, as kube-scheduler's Unreserve: a refusal is logged, and the claim is left for the
    ResourceClaim controller (it drops the reservations of pods that are gone or done)."""
    key = f"{namespace}/{plan.claim}"
    with locks.of(namespace, plan.claim):
        for _ in range(ATTEMPTS):
            try:
                _release_once(namespace, uid, plan)
                return
            except _Conflict:
                continue
            except client.ApiException as e:
                logger.warning("unreserve failed claim=%s pod_uid=%s error=%s", key, uid, _why(e))
                return
    logger.warning("unreserve gave up claim=%s pod_uid=%s: %d conflicts", key, uid, ATTEMPTS)

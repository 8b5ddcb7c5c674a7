"""Volume binding, kube-scheduler's VolumeBinding PreBind: a pod's claims bound before its node.

Writes what the PV controller and provisioners wait for (a PV `claimRef` for a static match,
the `selected-node` annotation on a claim to provision) and waits, heartbeating, until the
claims are bound; `revert_volumes` undoes what is not bound yet when that fails. Apart from the
node bindings (`activities/scheduler/binding.py`) because it talks to other objects (PVs and PVCs),
waits on other controllers, and fails a pod by other rules (`VolumeBindingFailed`, a timeout).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube
from activities.messages import StaticBinding, VolumesInput
from models.signals import scheduler as scheduler_signals

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _claim(namespace: str, name: str) -> Any:
    with errors.kube_call(f"read pvc {namespace}/{name}"):
        return kube.core().read_namespaced_persistent_volume_claim(name, namespace)


def _bound(claim: Any) -> bool:
    annotations = claim.metadata.annotations or {}
    return bool(claim.spec.volume_name) and annotations.get(BIND_COMPLETED) == "yes"


def _write_bindings(request: VolumesInput) -> None:
    core = kube.core()
    for pair in request.static:
        claim = _claim(request.namespace, pair.pvc)
        ref = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": request.namespace,
            "name": pair.pvc,
            "uid": claim.metadata.uid,
        }
        with errors.kube_call(f"claim pv {pair.pv} for {request.namespace}/{pair.pvc}"):
            core.patch_persistent_volume(pair.pv, {"spec": {"claimRef": ref}})
    for name in request.provision:
        patch = {"metadata": {"annotations": {SELECTED_NODE: request.node}}}
        with errors.kube_call(f"select node for pvc {request.namespace}/{name}"):
            core.patch_namespaced_persistent_volume_claim(name, request.namespace, patch)


def _check(request: VolumesInput) -> bool:
    """True when every claim is bound; raises when binding can no longer succeed: the PV
    controller reset a claimRef, or a provisioner gave up and dropped the selected node."""
    done = True
    for pair in request.static:
        claim = _claim(request.namespace, pair.pvc)
        with errors.kube_call(f"read pv {pair.pv}"):
            volume = kube.core().read_persistent_volume(pair.pv)
        ref = volume.spec.claim_ref if volume.spec else None
        if ref is None or not ref.uid:
            raise ApplicationError(f"pv {pair.pv}: ClaimRef got reset", type="VolumeBindingFailed")
        done = done and _bound(claim)
    for name in request.provision:
        claim = _claim(request.namespace, name)
        if (claim.metadata.annotations or {}).get(SELECTED_NODE) != request.node and not _bound(
            claim
        ):
            raise ApplicationError(
                f"pvc {request.namespace}/{name}: provisioning failed", type="VolumeBindingFailed"
            )
        done = done and _bound(claim)
    return done


def bind_pod_volumes(
    namespace: str, placements: Sequence[scheduler_signals.PlacedPod], timeout: float
) -> dict[str, str]:
    """Each placed pod's volumes (reverted if they fail); the pods whose volumes failed."""
    failed: dict[str, str] = {}
    for placed in placements:
        if not placed.binds_volumes:
            continue
        plan = placed.volumes
        volumes = VolumesInput(
            namespace=namespace,
            pod=placed.pod,
            node=placed.node,
            static=[StaticBinding(pvc=pvc, pv=pv) for pvc, pv in plan.static],
            provision=plan.provision,
            timeout_seconds=timeout,
        )
        try:
            bind_volumes(volumes)
        except ApplicationError as e:
            revert_volumes(volumes)
            failed[placed.pod] = f"execute preBind (volume binding) failed: {e.message}"
    return failed


def bind_volumes(request: VolumesInput) -> None:
    """Write the volume bindings for `pod` on `node`, then wait until all claims are bound."""
    _write_bindings(request)
    deadline = time.monotonic() + request.timeout_seconds
    while not _check(request):
        if time.monotonic() > deadline:
            waited = f"{request.timeout_seconds:g}s"
            raise ApplicationError(
                f"pod {request.namespace}/{request.pod}: volumes not bound after {waited}",
                type="VolumeBindingTimeout",
                non_retryable=True,
            )
        activity.heartbeat()
        time.sleep(1)


def revert_volumes(request: VolumesInput) -> None:
    """Undo the bindings `bind_volumes` wrote that have not completed yet."""
    core = kube.core()
    for pair in request.static:
        with errors.kube_call(f"read pv {pair.pv}", ok=errors.GONE_OK):
            volume = core.read_persistent_volume(pair.pv)
            claimed = volume.spec is not None and volume.spec.claim_ref is not None
            if volume.status and volume.status.phase == "Available" and claimed:
                core.patch_persistent_volume(pair.pv, {"spec": {"claimRef": None}})
    for name in request.provision:
        with errors.kube_call(f"read pvc {request.namespace}/{name}", ok=errors.GONE_OK):
            claim = core.read_namespaced_persistent_volume_claim(name, request.namespace)
            if not _bound(claim):
                patch = {"metadata": {"annotations": {SELECTED_NODE: None}}}
                core.patch_namespaced_persistent_volume_claim(name, request.namespace, patch)

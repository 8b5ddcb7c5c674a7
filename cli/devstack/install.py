"""Install Caldera's API into a cluster: CRDs, admission policies, the default and root queues,
and the tenants' NamespaceQueue roles (aggregated into Kubernetes' admin, edit and view).

Server-side apply with one field manager, so running it again is harmless. Used by
`caldera dev up` and by the e2e fixtures, so both see the same cluster shape.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes import client, dynamic

from cli.devstack.controlplane import REPO
from models import scheduling

FIELD_MANAGER: Final = "caldera"
CRD_DIR: Final = REPO / "deploy" / "crds"
ADMISSION_DIR: Final = REPO / "deploy" / "admission"
QUEUE_DIR: Final = REPO / "deploy" / "queues"  # root and default, as deploy/base ships them
TENANT_ROLES: Final = REPO / "deploy" / "base" / "rbac-tenant.yaml"


def _documents(directory: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def apply(api: client.ApiClient, doc: dict[str, Any]) -> None:
    dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
    resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    resource.server_side_apply(
        body=doc,
        name=doc["metadata"]["name"],
        namespace=doc["metadata"].get("namespace"),
        field_manager=FIELD_MANAGER,
        force_conflicts=True,
    )


def _wait_established(api: client.ApiClient, names: list[str], timeout: float = 60) -> None:
    ext = client.ApiextensionsV1Api(api)
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            crd = ext.read_custom_resource_definition(name)
            conds = crd.status.conditions or [] if crd.status else []
            if any(c.type == "Established" and c.status == "True" for c in conds):
                pending.discard(name)
        time.sleep(0.2)
    if pending:
        raise RuntimeError(f"CRDs not established after {timeout:.0f}s: {sorted(pending)}")


def install(api: client.ApiClient) -> None:
    crds = _documents(CRD_DIR)
    for doc in crds:
        apply(api, doc)
    _wait_established(api, [d["metadata"]["name"] for d in crds])
    for doc in _documents(ADMISSION_DIR):
        apply(api, doc)
    for doc in _documents(QUEUE_DIR):
        apply(api, scheduling.Queue.model_validate(doc).dump())
    for doc in yaml.safe_load_all(TENANT_ROLES.read_text()):
        if doc:
            apply(api, doc)

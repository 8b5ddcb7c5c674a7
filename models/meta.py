"""ObjectMeta and OwnerReference: the parts of Kubernetes metadata Caldera reads or writes."""

from __future__ import annotations

from datetime import datetime

from models.base import ApiModel


class OwnerReference(ApiModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None  # None: not stated, Kubernetes treats it as false
    block_owner_deletion: bool | None = None  # None: not stated, treated as false


class ObjectMeta(ApiModel):
    # None on every field: the apiserver fills it in (uid, resourceVersion, ...) or it is unset.
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None

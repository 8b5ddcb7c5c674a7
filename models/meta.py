"""ObjectMeta and OwnerReference: the parts of Kubernetes metadata Caldera reads or writes."""

from __future__ import annotations

from datetime import UTC, datetime

from models.base import ApiModel


def parse_time(text: object) -> datetime | None:
    """A time as the apiserver writes one (RFC 3339, `Z` for UTC); None: absent or not a time,
    so a malformed stamp on an object is read as no stamp, never as an error. A stamp without
    an offset is UTC, as every Kubernetes time is."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class OwnerReference(ApiModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None  # None: not stated, Kubernetes treats it as false
    block_owner_deletion: bool | None = None  # None: not stated, treated as false


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> OwnerReference:
    """What `metav1.NewControllerRef` writes: the garbage collector removes the dependent with
    its owner, and foreground deletion of the owner waits for it."""
    return OwnerReference(
        api_version=api_version,
        kind=kind,
        name=name,
        uid=uid,
        controller=True,
        block_owner_deletion=True,
    )


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


class Condition(ApiModel):
    """metav1.Condition: one observed aspect of an object (`type`), True, False or Unknown."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class Identity(ApiModel):
    """Namespace, name and uid of an object the apiserver holds, all three present: an object
    read back always has them, so code that acts on it reads them here instead of checking
    each optional field again. Empty strings stand for an object not observed yet."""

    namespace: str = ""
    name: str = ""
    uid: str = ""


def identity(meta: ObjectMeta | None) -> Identity:
    """The identity of an object as observed (empty fields: not observed yet)."""
    if meta is None:
        return Identity()
    return Identity(namespace=meta.namespace or "", name=meta.name or "", uid=meta.uid or "")

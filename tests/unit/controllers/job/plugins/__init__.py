"""Shared input for the plugin tests: Jobs as the apiserver returns them (with a uid)."""

from __future__ import annotations

from typing import Any

from models.vcjob import Job
from tests.builders import JobBuilder

UID = "0b5e-uid"


def owned(builder: JobBuilder, uid: str = UID) -> Job:
    """The built Job with `metadata.uid` set, so objects can carry an owner reference to it."""
    manifest = builder.manifest()
    manifest["metadata"]["uid"] = uid
    return Job.model_validate(manifest)


def owner_ref(name: str, uid: str = UID) -> dict[str, object]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod(*containers: dict[str, Any], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A pod manifest named p with copies of the given containers (and init containers)."""
    spec: dict[str, Any] = {"containers": [dict(c) for c in containers]}
    if init is not None:
        spec["initContainers"] = [dict(c) for c in init]
    return {"metadata": {"name": "p"}, "spec": spec}


def with_fields(container: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**container, **fields}

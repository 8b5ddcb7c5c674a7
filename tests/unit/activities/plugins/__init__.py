"""Shared input for the plugin tests: Jobs as the apiserver returns them (with a uid)."""

from __future__ import annotations

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

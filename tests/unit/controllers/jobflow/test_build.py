"""The Job a flow entry makes: the template's spec, Volcano's marks, the flow as controller."""

from __future__ import annotations

import pytest

from controllers.jobflow import build
from models.meta import Identity
from models.vcjob import JobSpec, TaskSpec

pytestmark = pytest.mark.unit


def test_job_from_template_is_named_marked_and_owned() -> None:
    spec = JobSpec(tasks=[TaskSpec(name="t", replicas=1)], queue="q")
    job = build.job(Identity(namespace="ns", name="flow", uid="u1"), "a", spec)
    marks = {"volcano.sh/createdByJobTemplate": "ns.a", "volcano.sh/createdByJobFlow": "ns.flow"}
    assert (job.metadata.name, job.metadata.namespace) == ("flow-a", "ns")
    assert job.metadata.labels == marks and job.metadata.annotations == marks
    [owner] = job.metadata.owner_references or []
    assert owner.dump() == {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "name": "flow",
        "uid": "u1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert job.spec == spec

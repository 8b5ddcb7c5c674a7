"""The Volcano Job a flow entry makes from its JobTemplate. Pure.

Volcano names it `<flow>-<template>`, gives it the template's spec unchanged (a flow entry's
`patch` is not applied), labels and annotates it with the template and the flow (each as
"<namespace>.<name>"), and makes the flow its controller, so deleting the flow deletes its
Jobs through garbage collection.
"""

from __future__ import annotations

from models import jobflow, vcjob
from models.meta import Identity, ObjectMeta, controller_reference


def marks(namespace: str, flow: str, template: str) -> dict[str, str]:
    """The labels (and the same annotations) that say where a Job came from."""
    return {
        jobflow.CREATED_BY_JOB_TEMPLATE: jobflow.object_string(namespace, template),
        jobflow.CREATED_BY_JOB_FLOW: jobflow.object_string(namespace, flow),
    }


def job(flow: Identity, template: str, spec: vcjob.JobSpec) -> vcjob.Job:
    """loadJobTemplateAndSetJob: the Job of `flow`'s entry `template`."""
    notes = marks(flow.namespace, flow.name, template)
    return vcjob.Job(
        metadata=ObjectMeta(
            name=jobflow.job_name(flow.name, template),
            namespace=flow.namespace,
            labels=notes,
            annotations=dict(notes),
            owner_references=[
                controller_reference(jobflow.API_VERSION, jobflow.FLOW_KIND, flow.name, flow.uid)
            ],
        ),
        spec=spec,
    )

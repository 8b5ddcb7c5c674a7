"""JobFlows, JobTemplates and the Jobs labelled with a flow → what a JobFlowWorkflow reads of
them. Pure functions.

A Job belongs to the flow its `volcano.sh/createdByJobFlow` label names ("<namespace>.<name>",
in the Job's own namespace): the Jobs Volcano's flow controller lists for the flow's status.
Only what the status reads of a Job travels, never the object.
"""

from __future__ import annotations

from forwarder.routing import envelopes, translate
from models import jobflow
from models.jobflow import JobFlowSpec, JobFlowStatus
from models.meta import parse_time
from models.signals import jobflow as jobflow_signals
from models.vcjob import TaskState

Obj = envelopes.Obj


def flow_ref(obj: Obj) -> envelopes.FlowRef:
    meta = translate.metadata(obj)
    return envelopes.FlowRef(str(meta.get("namespace", "")), str(meta.get("name", "")))


def flow_fingerprint(obj: Obj) -> object:
    """A spec change (the generation), never the status the flow's own workflow writes."""
    return translate.metadata(obj).get("generation")


def flow_observed(obj: Obj) -> jobflow_signals.FlowObserved:
    ref, status = flow_ref(obj), obj.get("status")
    return jobflow_signals.FlowObserved(
        namespace=ref.namespace,
        name=ref.name,
        uid=translate.uid(obj),
        spec=JobFlowSpec.model_validate(obj.get("spec") or {}),
        status=JobFlowStatus.model_validate(status) if status else None,
    )


def templates(obj: Obj) -> frozenset[str]:
    """The JobTemplates a flow names."""
    return frozenset(f.name for f in JobFlowSpec.model_validate(obj.get("spec") or {}).entries)


def job_flow(obj: Obj) -> envelopes.FlowRef | None:
    """The flow whose label the Job carries; None: none, or one in another namespace."""
    meta = translate.metadata(obj)
    value = (meta.get("labels") or {}).get(jobflow.CREATED_BY_JOB_FLOW) or ""
    namespace, _, name = str(value).partition(".")
    own = str(meta.get("namespace", ""))
    return envelopes.FlowRef(own, name) if name and namespace == own else None


def flow_job(obj: Obj, deleted: bool = False) -> jobflow_signals.FlowJob:
    meta = translate.metadata(obj)
    status = obj.get("status") or {}
    counts = status.get("taskStatusCount") or {}
    duration = status.get("runningDuration")
    return jobflow_signals.FlowJob(
        name=str(meta.get("name", "")),
        uid=translate.uid(obj),
        phase=str((status.get("state") or {}).get("phase") or ""),
        created_at=parse_time(meta.get("creationTimestamp")),
        running_duration=str(duration) if duration else None,
        retry_count=int(status.get("retryCount") or 0),
        task_status_count={k: TaskState.model_validate(v) for k, v in sorted(counts.items())},
        deleted=deleted,
    )

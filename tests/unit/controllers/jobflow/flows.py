"""Builders for the JobFlow core's tests: flows, their Jobs as the forwarder reports them."""

from __future__ import annotations

from datetime import UTC, datetime

from controllers.jobflow.state import FlowRecord
from models.jobflow import DependsOn, Flow, JobFlowSpec, RetainPolicy
from models.signals import jobflow as jobflow_signals

NOW = datetime(2026, 1, 1, tzinfo=UTC)
NS, NAME, UID = "ns", "f", "flow-uid"


def spec(*entries: str, delete: bool = False) -> JobFlowSpec:
    """Entries as "b<a,c" (b depends on a and c) or "a" (no targets)."""
    flows = []
    for text in entries:
        name, _, targets = text.partition("<")
        depends = DependsOn(targets=targets.split(",")) if targets else None
        flows.append(Flow(name=name, depends_on=depends))
    retain = RetainPolicy.DELETE if delete else None
    return JobFlowSpec(flows=flows, job_retain_policy=retain)


def observed(flow_spec: JobFlowSpec, uid: str = UID) -> jobflow_signals.FlowObserved:
    return jobflow_signals.FlowObserved(namespace=NS, name=NAME, uid=uid, spec=flow_spec)


def job(template: str, phase: str = "", deleted: bool = False) -> jobflow_signals.FlowJob:
    return jobflow_signals.FlowJob(
        name=f"{NAME}-{template}",
        uid=f"uid-{template}",
        phase=phase,
        created_at=NOW,
        deleted=deleted,
    )


def changed(
    template: str, phase: str = "", deleted: bool = False
) -> jobflow_signals.FlowJobChanged:
    return jobflow_signals.FlowJobChanged(job=job(template, phase, deleted))


def record(flow_spec: JobFlowSpec, created: tuple[str, ...] = (), **phases: str) -> FlowRecord:
    """A flow observed, with Jobs made from `created` and heard of in `phases`."""
    jobs = {f"{NAME}-{t}": job(t, p) for t, p in phases.items()}
    return FlowRecord(
        namespace=NS,
        name=NAME,
        uid=UID,
        spec=flow_spec,
        jobs=jobs,
        created=sorted({*(f"{NAME}-{t}" for t in created), *jobs}),
    )

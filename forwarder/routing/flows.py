"""Routing of JobFlows (`Kind.JOBFLOW`), the JobTemplates they name (`Kind.JOBTEMPLATE`) and
the Volcano Jobs labelled with a flow (from `Kind.JOB`), each to its flow's JobFlowWorkflow.

A flow is an owner (`index.Owners`): its first sight or a spec change is a signal-with-start
of `jobflow_observed`, its deletion `jobflow_deleted`, and a deleted uid never starts a run
again. Its Jobs are reported on a phase change only (Volcano's flow controller judges and
counts phases; the rest of the status rides along); a Job with no phase yet is the one the
flow just made, and is not news. Jobs are listed before flows after a forwarder starts, so
a Job of a flow not seen yet is remembered, and sent to the flow when the flow first shows
up. A JobTemplate's appearance goes to every flow of its namespace that names it: one of
them may be waiting for it (Volcano's flow controller retries until it is there).
"""

from __future__ import annotations

from collections.abc import Set

from forwarder.routing import envelopes, index, translate
from forwarder.routing import flow_translate as ft
from models.signals import common as common_signals
from models.signals import jobflow as jobflow_signals

FLOWS = index.OwnerRules(
    ref=ft.flow_ref,
    fingerprint=ft.flow_fingerprint,
    observed=ft.flow_observed,
    observed_signal=jobflow_signals.SIGNAL_JOBFLOW_OBSERVED,
    deleted=lambda uid: common_signals.JobDeleted(uid=uid),
    deleted_signal=jobflow_signals.SIGNAL_JOBFLOW_DELETED,
)


def _changed(flow: envelopes.FlowRef, job: jobflow_signals.FlowJob) -> envelopes.Signal:
    return envelopes.Signal(
        flow, jobflow_signals.SIGNAL_FLOW_JOB_CHANGED, jobflow_signals.FlowJobChanged(job=job)
    )


class Flows:
    """Flows by uid (with the templates each names) and their Jobs by uid."""

    def __init__(self, deleted_capacity: int = index.DELETED_REMEMBERED) -> None:
        self._owners = index.Owners(FLOWS, deleted_capacity)
        self._names: dict[str, tuple[envelopes.FlowRef, frozenset[str]]] = {}  # flow uid → names
        self._jobs: dict[
            str, tuple[envelopes.FlowRef, jobflow_signals.FlowJob]
        ] = {}  # Job uid → last

    def flow(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        uid = translate.uid(obj)
        first = self._owners.ref(uid) is None
        out = self._owners.event(type_, obj, force, relisted)
        ref = self._owners.ref(uid)
        if type_ == "DELETED" or ref is None:
            self._names.pop(uid, None)
            return out
        self._names[uid] = (ref, ft.templates(obj))
        if first:  # its Jobs listed before it
            known = sorted((j for r, j in self._jobs.values() if r == ref), key=lambda j: j.name)
            out += [_changed(ref, j) for j in known]
        return out

    def namespace_gone(self, namespace: str) -> list[envelopes.Outbound]:
        return self._owners.namespace_gone(namespace)

    def flows_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        for uid in self._names.keys() - listed:
            del self._names[uid]
        return self._owners.vanished(listed)

    def template(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        """Volcano reacts to a template's arrival only (not to its changes)."""
        if type_ != "ADDED":
            return []
        meta = translate.metadata(obj)
        namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
        seen = jobflow_signals.TemplateObserved(name=name)
        flows = sorted(
            {
                ref
                for ref, names in self._names.values()
                if ref.namespace == namespace and name in names
            },
            key=lambda r: r.name,
        )
        return [envelopes.Signal(r, jobflow_signals.SIGNAL_TEMPLATE_OBSERVED, seen) for r in flows]

    def _live(self, ref: envelopes.FlowRef) -> bool:
        return any(r == ref for r, _ in self._names.values())

    def job(
        self, type_: envelopes.WatchType, obj: envelopes.Obj, force: bool, relisted: bool = False
    ) -> list[envelopes.Outbound]:
        uid, ref = translate.uid(obj), ft.job_flow(obj)
        if ref is None:
            self._jobs.pop(uid, None)
            return []
        if type_ == "DELETED":
            self._jobs.pop(uid, None)
            return [_changed(ref, ft.flow_job(obj, deleted=True))] if self._live(ref) else []
        job = ft.flow_job(obj)
        before = self._jobs.get(uid)
        self._jobs[uid] = (ref, job)
        if not self._live(ref):
            return []  # sent when the flow shows up
        if before is None and not job.phase and not relisted:
            return []  # the flow just made it
        if not force and before is not None and before[1].phase == job.phase:
            return []
        return [_changed(ref, job)]

    def jobs_vanished(self, listed: Set[str]) -> list[envelopes.Outbound]:
        out: list[envelopes.Outbound] = []
        for uid in sorted(self._jobs.keys() - listed):
            ref, job = self._jobs.pop(uid)
            if self._live(ref):
                out.append(_changed(ref, job.model_copy(update={"deleted": True})))
        return out

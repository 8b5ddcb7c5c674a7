"""JobFlows, JobTemplates and the Jobs a flow made, through the router: what reaches a
JobFlowWorkflow, under which id, and what does not (echoes, phase-less Jobs, deleted flows)."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder import signaller
from forwarder.routing import envelopes, router
from models.signals import common as common_signals
from models.signals import jobflow as jobflow_signals
from tests.unit.forwarder.inbound import added, deleted, modified, route_all

pytestmark = pytest.mark.unit

K = envelopes.Kind
FLOW = envelopes.FlowRef("ns", "f")


def flow(
    uid: str = "flow-uid", generation: int = 1, targets: tuple[str, ...] = ("a",)
) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": "f", "namespace": "ns", "uid": uid, "generation": generation},
        "spec": {"flows": [{"name": t} for t in targets]},
    }


def job(
    name: str = "f-a", phase: str = "", uid: str = "job-uid", flow_label: str = "ns.f"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "labels": {"volcano.sh/createdByJobFlow": flow_label},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"tasks": [{"name": "t", "replicas": 1}]},
    }
    if phase:
        obj["status"] = {"state": {"phase": phase}, "retryCount": 1, "runningDuration": "1m0s"}
    return obj


def template(name: str = "a") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"t-{name}"}, "spec": {}}


def _flow_signals(out: list[envelopes.Outbound]) -> list[tuple[str, common_signals.Payload]]:
    return [
        (o.name, o.payload) for o in out if isinstance(o, envelopes.Signal) and o.target == FLOW
    ]


def test_a_flow_starts_its_workflow_under_its_id() -> None:
    [signal] = router.Router().route(added(K.JOBFLOW, flow()))
    assert isinstance(signal, envelopes.Signal) and signal.start
    assert signal.target.workflow_id == "jobflow/ns/f"
    assert signal.name == jobflow_signals.SIGNAL_JOBFLOW_OBSERVED
    assert isinstance(signal.payload, jobflow_signals.FlowObserved)
    assert signal.payload.uid == "flow-uid" and [f.name for f in signal.payload.spec.entries] == [
        "a"
    ]
    assert signaller.summary(signal.target) == "Volcano JobFlow ns/f"


def test_a_status_write_is_not_news_but_a_spec_change_is() -> None:
    r = router.Router()
    route_all(r, added(K.JOBFLOW, flow()))
    assert r.route(modified(K.JOBFLOW, flow())) == []
    [changed] = r.route(modified(K.JOBFLOW, flow(generation=2, targets=("a", "b"))))
    assert (
        isinstance(changed, envelopes.Signal)
        and changed.name == jobflow_signals.SIGNAL_JOBFLOW_OBSERVED
    )


def test_job_phase_changes_reach_the_flow_and_nothing_else_does() -> None:
    r = router.Router()
    route_all(r, added(K.JOBFLOW, flow()))
    assert _flow_signals(r.route(added(K.JOB, job()))) == []  # the flow just made it
    [(name, payload)] = _flow_signals(r.route(modified(K.JOB, job(phase="Running"))))
    assert name == jobflow_signals.SIGNAL_FLOW_JOB_CHANGED
    assert isinstance(payload, jobflow_signals.FlowJobChanged)
    assert (payload.job.name, payload.job.phase, payload.job.retry_count) == ("f-a", "Running", 1)
    assert payload.job.running_duration == "1m0s"
    assert _flow_signals(r.route(modified(K.JOB, job(phase="Running")))) == []
    [(_, gone)] = _flow_signals(r.route(deleted(K.JOB, job(phase="Completed"))))
    assert isinstance(gone, jobflow_signals.FlowJobChanged) and gone.job.deleted


@pytest.mark.parametrize(
    "label", ["", "other.f", "ns."], ids=["none", "other-namespace", "no-name"]
)
def test_a_job_without_its_flows_label_is_not_the_flows(label: str) -> None:
    r = router.Router()
    route_all(r, added(K.JOBFLOW, flow()))
    assert _flow_signals(r.route(modified(K.JOB, job(phase="Running", flow_label=label)))) == []


def test_jobs_listed_before_their_flow_are_sent_when_it_shows_up() -> None:
    r = router.Router()
    listed = envelopes.Relisted(K.JOB, [job(phase="Completed")])
    assert _flow_signals(r.route(listed)) == []
    out = r.route(envelopes.Relisted(K.JOBFLOW, [flow()]))
    names = [name for name, _ in _flow_signals(out)]
    assert names == [
        jobflow_signals.SIGNAL_JOBFLOW_OBSERVED,
        jobflow_signals.SIGNAL_FLOW_JOB_CHANGED,
    ]


def test_a_job_vanished_from_a_list_is_sent_deleted() -> None:
    r = router.Router()
    route_all(r, added(K.JOBFLOW, flow()), modified(K.JOB, job(phase="Running")))
    [(_, gone)] = _flow_signals(r.route(envelopes.Relisted(K.JOB, [])))
    assert isinstance(gone, jobflow_signals.FlowJobChanged) and gone.job.deleted


def test_a_template_appearing_wakes_the_flows_naming_it() -> None:
    r = router.Router()
    route_all(r, added(K.JOBFLOW, flow(targets=("a", "b"))))
    [(name, payload)] = _flow_signals(r.route(added(K.JOBTEMPLATE, template("b"))))
    assert (
        name == jobflow_signals.SIGNAL_TEMPLATE_OBSERVED
        and payload == jobflow_signals.TemplateObserved(name="b")
    )
    assert r.route(added(K.JOBTEMPLATE, template("z"))) == []
    assert r.route(modified(K.JOBTEMPLATE, template("b"))) == []


def test_a_deleted_flow_is_told_once_and_never_started_again() -> None:
    r = router.Router()
    route_all(r, added(K.JOBFLOW, flow()))
    [gone] = r.route(deleted(K.JOBFLOW, flow()))
    assert isinstance(gone, envelopes.Signal) and not gone.start
    assert gone.name == jobflow_signals.SIGNAL_JOBFLOW_DELETED
    assert r.route(modified(K.JOBFLOW, flow(generation=3))) == []  # a late event of that uid
    assert _flow_signals(r.route(modified(K.JOB, job(phase="Failed")))) == []
    assert r.route(added(K.JOBTEMPLATE, template("a"))) == []

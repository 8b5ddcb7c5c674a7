"""Which watch events wake a gang scheduler, and that a burst of them is one signal."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder.routing import coalesce, events, wake
from models import signals
from tests.unit.forwarder import pod, pod_group
from tests.unit.forwarder.inbound import added, modified

K = events.Kind


def _scheduled_by(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return {**obj, "spec": {**obj["spec"], "schedulerName": name}}


def test_a_new_pending_pod_wakes_the_scheduler_it_names() -> None:
    [woken] = wake.wakes(added(K.POD, _scheduled_by(pod(), "volcano")))
    assert woken == events.WorkUpdate(events.SchedulerRef("volcano"), "pod created")
    assert woken.scheduler.workflow_id == "scheduler/volcano"


@pytest.mark.parametrize(
    "item",
    [
        pytest.param(added(K.POD, _scheduled_by(pod(node="n1"), "volcano")), id="bound"),
        pytest.param(added(K.POD, _scheduled_by(pod(phase="Running"), "volcano")), id="running"),
        pytest.param(added(K.POD, pod()), id="no-scheduler-name"),
        pytest.param(modified(K.POD, _scheduled_by(pod(), "volcano")), id="an-update"),
        pytest.param(events.Relisted(K.POD, [_scheduled_by(pod(), "volcano")]), id="relisted"),
        pytest.param(added(K.JOB, {"metadata": {"name": "j"}}), id="a-job"),
    ],
)
def test_nothing_else_wakes_it(item: events.Inbound) -> None:
    assert wake.wakes(item) == []


def test_a_new_pod_group_wakes_the_default_scheduler() -> None:
    [woken] = wake.wakes(added(K.POD_GROUP, pod_group(phase=None)))
    assert woken.scheduler == events.SchedulerRef("volcano")


def test_a_burst_of_wakes_leaves_as_one_work_arrived() -> None:
    c = coalesce.Coalescer(delay=0.2)
    for i in range(50):
        for update in wake.wakes(added(K.POD, _scheduled_by(pod(uid=f"u{i}"), "volcano"))):
            assert isinstance(update, events.WorkUpdate)
            c.add(update, now=0.0)
    assert len(c) == 1
    [signal] = c.due(0.2)
    assert (signal.target.workflow_id, signal.name) == (
        "scheduler/volcano",
        signals.SIGNAL_WORK_ARRIVED,
    )
    assert signal.payload == signals.WorkArrived(reason="pod created")

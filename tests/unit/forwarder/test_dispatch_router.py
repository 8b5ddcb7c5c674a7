"""Routing to DispatchWorkflows: a Job of a queue with `extendClusters` goes to
`dispatch/<ns>/<name>` (its spec, its deletion, the Commands aimed at it); every other Job, and
a copy dispatched here, to its JobWorkflow exactly as before; the choice sticks to the uid."""

from __future__ import annotations

from typing import Any

import pytest

from forwarder.routing import envelopes, router
from forwarder.routing import queue_translate as qt
from models.dispatch import (
    DISPATCHED_TO_ANNOTATION,
    LOST_AFTER_SECONDS,
    ORIGIN_ANNOTATION,
    STALE_DEADLINE_SECONDS,
    DispatchSettings,
)
from models.keys import QueueName
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals.dispatch import (
    LOST_AFTER_ANNOTATION,
    MIN_LOST_AFTER,
    ON_DRAIN_ANNOTATION,
    STALE_DEADLINE_ANNOTATION,
    DispatchObserved,
)
from tests.unit.forwarder import command, job, queue
from tests.unit.forwarder.inbound import added, deleted, modified, route_all

K = envelopes.Kind
DISPATCH = envelopes.DispatchRef("ns", "train")
LOCAL = envelopes.JobRef("ns", "train")
SETTINGS = DispatchSettings(queue=QueueName("multi"), clusters={"east": 2, "west": 1})


def _multi(annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    obj = queue("multi", annotations=annotations)
    clusters = [{"name": "east", "weight": 2}, {"name": "west"}]
    obj["spec"]["extendClusters"] = spec.get("clusters", clusters)
    return obj


def _job(queue_name: str = "multi", **kwargs: Any) -> dict[str, Any]:
    obj = job(**kwargs)
    obj["spec"]["queue"] = queue_name
    return obj


def _targets(out: list[envelopes.Outbound]) -> list[tuple[str, str]]:
    return [(o.target.workflow_id, o.name) for o in out if isinstance(o, envelopes.Signal)]


def test_job_of_a_dispatching_queue_goes_to_its_dispatch_workflow() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [_multi()]))
    obj = _job()
    out = r.route(added(K.JOB, obj))
    assert out == [
        envelopes.Signal(
            DISPATCH,
            job_signals.SIGNAL_JOB_OBSERVED,
            DispatchObserved(job=obj, settings=SETTINGS),
            start=True,
        )
    ]
    assert DISPATCH.workflow_id == "dispatch/ns/train"


def test_its_own_writes_are_not_echoed_but_spec_and_deletion_are() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [_multi()]), added(K.JOB, _job()))
    running = _job(phase="Running", running=2)
    running["metadata"]["annotations"] = {DISPATCHED_TO_ANNOTATION: "east"}
    assert r.route(modified(K.JOB, running)) == []
    bigger = _job(phase="Running", replicas=3)
    assert _targets(r.route(modified(K.JOB, bigger))) == [
        ("dispatch/ns/train", job_signals.SIGNAL_JOB_OBSERVED)
    ]
    out = r.route(deleted(K.JOB, bigger))
    assert out == [
        envelopes.Signal(
            DISPATCH, job_signals.SIGNAL_JOB_DELETED, common_signals.JobDeleted(uid="job-uid")
        )
    ]
    assert r.job_deleted("job-uid") and r.route(modified(K.JOB, bigger)) == []


def test_commands_follow_the_job_to_its_dispatch_workflow() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [_multi()]), added(K.JOB, _job()))
    (consume,) = r.route(added(K.COMMAND, command()))
    assert isinstance(consume, envelopes.ConsumeCommand)
    assert consume.signal.target == DISPATCH
    assert consume.signal.name == common_signals.SIGNAL_COMMAND_ISSUED


@pytest.mark.parametrize(
    ("obj", "target"),
    [
        pytest.param(_job("default"), "vcjob/ns/train", id="other-queue"),
        pytest.param(_job(phase="Running"), "vcjob/ns/train", id="ran-here-before"),
        pytest.param(
            {**_job(), "metadata": {**_job()["metadata"], "annotations": {ORIGIN_ANNOTATION: "u"}}},
            "vcjob/ns/train",
            id="a-copy-runs-here",
        ),
        pytest.param(
            {
                **_job("default", phase="Pending"),
                "metadata": {
                    **_job()["metadata"],
                    "annotations": {DISPATCHED_TO_ANNOTATION: ""},
                },
            },
            "dispatch/ns/train",
            id="marked-dispatched",
        ),
    ],
)
def test_first_sight_rule(obj: dict[str, Any], target: str) -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [_multi(), queue("default")]))
    assert _targets(r.route(added(K.JOB, obj))) == [(target, job_signals.SIGNAL_JOB_OBSERVED)]


def test_choice_sticks_when_the_queue_changes() -> None:
    r = router.Router()
    plain = queue("multi")
    route_all(r, envelopes.Relisted(K.QUEUE, [plain]), added(K.JOB, _job()))
    route_all(r, modified(K.QUEUE, _multi()))
    bigger = _job(replicas=5)
    assert _targets(r.route(modified(K.JOB, bigger))) == [
        ("vcjob/ns/train", job_signals.SIGNAL_JOB_OBSERVED)
    ]
    assert _targets(r.route(deleted(K.JOB, bigger))) == [
        ("vcjob/ns/train", job_signals.SIGNAL_JOB_DELETED)
    ]


def test_relist_deletes_vanished_dispatched_jobs() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [_multi()]), added(K.JOB, _job()))
    out = r.route(envelopes.Relisted(K.JOB, []))
    assert _targets(out) == [("dispatch/ns/train", job_signals.SIGNAL_JOB_DELETED)]
    (consume,) = r.route(added(K.COMMAND, command()))
    assert isinstance(consume, envelopes.ConsumeCommand) and consume.signal.target == LOCAL


def test_cluster_without_dispatching_queues_routes_as_before() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [queue("multi")]))
    out = r.route(added(K.JOB, _job()))
    assert _targets(out) == [("vcjob/ns/train", job_signals.SIGNAL_JOB_OBSERVED)]
    assert isinstance(out[0], envelopes.Signal)
    assert type(out[0].payload) is job_signals.JobObserved


@pytest.mark.parametrize(
    ("annotations", "seconds"),
    [
        pytest.param(None, LOST_AFTER_SECONDS, id="default"),
        pytest.param({LOST_AFTER_ANNOTATION: "45"}, 45, id="seconds"),
        pytest.param({LOST_AFTER_ANNOTATION: "2m"}, 120, id="go-duration"),
        pytest.param({LOST_AFTER_ANNOTATION: "1"}, MIN_LOST_AFTER, id="at-least-the-minimum"),
        pytest.param({LOST_AFTER_ANNOTATION: "soon"}, LOST_AFTER_SECONDS, id="unreadable"),
    ],
)
def test_dispatch_settings_from_the_queue(annotations: dict[str, str] | None, seconds: int) -> None:
    settings = qt.dispatch_settings(_multi(annotations))
    assert settings == SETTINGS.model_copy(update={"lost_after_seconds": seconds})


@pytest.mark.parametrize(
    ("annotations", "seconds"),
    [
        pytest.param(None, STALE_DEADLINE_SECONDS, id="default"),
        pytest.param({STALE_DEADLINE_ANNOTATION: "6h"}, 6 * 3600, id="go-duration"),
        pytest.param(
            {STALE_DEADLINE_ANNOTATION: "30"}, LOST_AFTER_SECONDS, id="never-below-lost-after"
        ),
        pytest.param(
            {STALE_DEADLINE_ANNOTATION: "30", LOST_AFTER_ANNOTATION: "20"}, 30, id="own-lost-after"
        ),
    ],
)
def test_stale_copy_deadline_from_the_queue(
    annotations: dict[str, str] | None, seconds: int
) -> None:
    settings = qt.dispatch_settings(_multi(annotations))
    assert settings is not None and settings.stale_deadline_seconds == seconds


@pytest.mark.parametrize(("value", "moves"), [(None, False), ("Stay", False), ("Move", True)])
def test_drain_policy_from_the_queue(value: str | None, moves: bool) -> None:
    settings = qt.dispatch_settings(_multi(None if value is None else {ON_DRAIN_ANNOTATION: value}))
    assert settings is not None and settings.move_on_drain == moves


def test_dispatch_settings_keep_each_clusters_capacity() -> None:
    named = [
        {"name": "east", "weight": 2, "capacity": {"cpu": "8", "nvidia.com/gpu": 2}},
        {"name": "west", "capacity": {}},
    ]
    settings = qt.dispatch_settings(_multi(clusters=named))
    assert settings == SETTINGS.model_copy(
        update={"capacity": {"east": {"cpu": "8", "nvidia.com/gpu": "2"}}}
    )


def test_queue_without_named_clusters_dispatches_nothing() -> None:
    assert qt.dispatch_settings(queue("q1")) is None
    assert qt.dispatch_settings(_multi(clusters=[{"weight": 1}])) is None


def test_deleted_queue_stops_dispatching_new_jobs() -> None:
    r = router.Router()
    route_all(r, envelopes.Relisted(K.QUEUE, [_multi()]), deleted(K.QUEUE, _multi()))
    assert _targets(r.route(added(K.JOB, _job()))) == [
        ("vcjob/ns/train", job_signals.SIGNAL_JOB_OBSERVED)
    ]

"""Pod snapshot → Volcano event (§3.2)."""

from __future__ import annotations

import pytest

from controllers.job import bus_events
from controllers.job.state import PodRecord
from models.bus import Event
from models.defaults import default_job
from models.signals.job import PodSnapshot
from tests.builders import make_job

SPEC = default_job(make_job("j").task("w", replicas=2).build()).spec


def _snap(phase: str = "Running", **kw: object) -> PodSnapshot:
    return PodSnapshot(name="j-w-0", uid="u1", task="w", index=0, phase=phase, **kw)  # type: ignore[arg-type]


def _old(phase: str, **kw: object) -> PodRecord:
    fields: dict[str, object] = {"name": "j-w-0", "uid": "u1", "task": "w", "index": 0}
    return PodRecord.model_validate({**fields, "phase": phase, **kw})


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, _snap("Pending"), Event.POD_PENDING, id="added-pending"),
        pytest.param(None, _snap("Running"), Event.POD_RUNNING, id="added-running"),
        pytest.param(
            PodRecord(name="j-w-0", task="w"),
            _snap("Pending"),
            Event.POD_PENDING,
            id="created-by-us",
        ),
        pytest.param(_old("Pending"), _snap("Running"), Event.POD_RUNNING, id="started"),
        pytest.param(_old("Running"), _snap("Failed", exit_code=3), Event.POD_FAILED, id="failed"),
        pytest.param(_old("Running"), _snap("Succeeded"), Event.OUT_OF_SYNC, id="one-of-two-done"),
        pytest.param(_old("Running"), _snap("Running"), Event.OUT_OF_SYNC, id="no-change"),
        pytest.param(
            _old("Running"), _snap("Running", restart_count=3), Event.TASK_FAILED, id="restarts"
        ),
        pytest.param(_old("Running"), _snap(deleted=True), Event.POD_EVICTED, id="deleted"),
        pytest.param(
            _old("Running", out_of_sync=True),
            _snap(deleted=True),
            Event.OUT_OF_SYNC,
            id="killed-by-us",
        ),
        pytest.param(None, _snap(deleted=True), Event.OUT_OF_SYNC, id="unknown-deleted"),
        pytest.param(
            _old("Pending"), _snap("Running", out_of_sync=True), Event.OUT_OF_SYNC, id="marked"
        ),
        pytest.param(
            _old("Running", uid="old"), _snap("Pending"), Event.POD_PENDING, id="same-name-new-pod"
        ),
    ],
)
def test_event_of(old: PodRecord | None, new: PodSnapshot, expected: Event) -> None:
    pods = {} if new.deleted else {new.name: bus_events.record_of(new)}
    assert bus_events.event_of(old, new, SPEC, pods) == expected


def test_last_pod_of_task_succeeding_is_task_completed() -> None:
    other = PodRecord(name="j-w-1", uid="u2", task="w", index=1, phase="Succeeded")
    new = _snap("Succeeded")
    pods = {"j-w-1": other, new.name: bus_events.record_of(new)}
    assert bus_events.event_of(_old("Running"), new, SPEC, pods) == Event.TASK_COMPLETED


def test_request_carries_exit_code_only_for_failures() -> None:
    assert bus_events.request_of(Event.POD_FAILED, _snap("Failed", exit_code=3)).exit_code == 3
    assert bus_events.request_of(Event.OUT_OF_SYNC, _snap("Failed", exit_code=3)).exit_code == 0

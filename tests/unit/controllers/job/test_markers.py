"""controllers.job.markers: when the `caldera-job-io` patch is asked, which volumes step is
due, claim names kept through a stale observation, and the markers a status carries."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job import markers, results
from controllers.job.state import JobRecord
from models.defaults import default_job
from models.vcjob import Job, JobPhase, JobState, JobStatus
from tests.builders import make_job, observed_job

CLAIM = {"accessModes": ["ReadWriteOnce"]}


def _doc(**spec: Any) -> dict[str, Any]:
    doc = make_job("j", namespace="ns").task("w", replicas=1).spec(**spec).manifest()
    doc["metadata"].update(uid="u1", generation=1)
    return doc


def _job(**spec: Any) -> Job:
    return default_job(Job.model_validate(_doc(**spec)))


def _record(phase: JobPhase | None = None, **fields: Any) -> JobRecord:
    status = JobStatus(state=JobState(phase=phase)) if phase else JobStatus()
    return JobRecord(status=status, **fields)


@pytest.mark.parametrize(
    ("state", "spec", "asks"),
    [
        pytest.param(
            JobRecord(),
            {"volumes": [{"mountPath": "/d", "volumeClaim": CLAIM}]},
            True,
            id="first-sight-volumes",
        ),
        pytest.param(JobRecord(), {"plugins": {"svc": []}}, True, id="first-sight-plugins"),
        pytest.param(JobRecord(), {}, False, id="first-sight-neither"),
        pytest.param(_record(job=_job()), {"plugins": {"svc": []}}, False, id="seen-before"),
    ],
)
def test_the_patch_is_asked_at_first_sight_of_a_job_it_changes(
    state: JobRecord, spec: dict[str, Any], asks: bool
) -> None:
    assert markers.asks_io(state, observed_job(_doc(**spec))) is asks


VOLUME = {"mountPath": "/d", "volumeClaim": CLAIM}


@pytest.mark.parametrize(
    ("fields", "phase", "due"),
    [
        pytest.param({"job_io": True}, None, True, id="io-new-job"),
        pytest.param({"job_io": True}, JobPhase.PENDING, True, id="io-pending"),
        pytest.param(
            {"job_io": True, "volume_claims": ["c"]}, JobPhase.PENDING, False, id="io-claims-named"
        ),
        pytest.param({"job_io": True}, JobPhase.TERMINATING, False, id="io-terminating"),
        pytest.param({"job_io": False}, None, False, id="run-from-before"),
    ],
)
def test_volumes_step_is_due_while_the_job_initiates(
    fields: dict[str, Any], phase: JobPhase | None, due: bool
) -> None:
    state = _record(phase, job=_job(volumes=[VOLUME]), **fields)
    assert markers.volumes_due(state) is due


@pytest.mark.parametrize(
    ("volumes", "claims", "expected"),
    [
        pytest.param([VOLUME], None, [None], id="none-chosen-yet"),
        pytest.param([VOLUME], ["j-pvc-a"], ["j-pvc-a"], id="chosen-filled-in"),
        pytest.param(
            [{**VOLUME, "volumeClaimName": "j-pvc-a"}], ["j-pvc-a"], ["j-pvc-a"], id="already-there"
        ),
        pytest.param(
            [{"mountPath": "/d", "volumeClaimName": "mine"}], ["other"], ["mine"], id="named-wins"
        ),
        pytest.param([VOLUME], ["a", "b"], [None], id="count-differs"),
    ],
)
def test_with_claims_fills_in_what_the_spec_lacks(
    volumes: list[dict[str, Any]], claims: list[str] | None, expected: list[str | None]
) -> None:
    job = markers.with_claims(_job(volumes=volumes), claims)
    assert [v.volume_claim_name for v in job.spec.volumes or []] == expected


@pytest.mark.parametrize(
    ("job_io", "controlled", "adopted", "expected"),
    [
        pytest.param(True, {"b": "2", "a": "1"}, None, {"a": "1", "b": "2"}, id="io-kept"),
        pytest.param(True, {}, {"plugin-x": "x"}, None, id="io-none"),
        pytest.param(False, {"a": "1"}, {"plugin-x": "x"}, {"plugin-x": "x"}, id="from-before"),
    ],
)
def test_marked_status_carries_the_kept_markers(
    job_io: bool,
    controlled: dict[str, str],
    adopted: dict[str, str] | None,
    expected: dict[str, str] | None,
) -> None:
    state = JobRecord(job_io=job_io, controlled=controlled)
    status = markers.marked(state, JobStatus(controlled_resources=adopted))
    assert status.controlled_resources == expected


def test_claims_ensured_and_plugins_applied_keep_one_marker_each() -> None:
    state = JobRecord(job=_job(volumes=[VOLUME]), job_io=True, controlled={"plugin-old": "old"})
    state = markers.claims_ensured(state, results.VolumesEnsured(claims=["j-pvc-a"]))
    state = markers.plugins_applied(state, results.PluginsApplied(controlled={"plugin-svc": "svc"}))
    assert state.controlled == {"plugin-svc": "svc", "volume-pvc-j-pvc-a": "j-pvc-a"}
    assert state.volume_claims == ["j-pvc-a"]
    assert markers.without_plugins(state) == {"volume-pvc-j-pvc-a": "j-pvc-a"}

"""What a Volcano Job's controller keeps of the objects it made for it: the claim name of each
volume and the `status.controlledResources` markers (`volume-pvc-<claim>`, `plugin-<name>`).

Runs that began with the `caldera-job-io` patch (`JobRecord.job_io`) keep them: the volumes
step runs before the PodGroup and reports the names it chose, the plugins step reports its
markers, and every status the core writes carries them. A run from before keeps neither, and
writes the status it adopted. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from controllers.job import results
from controllers.job.state import JobRecord
from controllers.parsed import ParsedJob
from models.vcjob import Job, JobPhase, JobStatus

PLUGIN_MARKER: Final = "plugin-"
VOLUME_MARKER: Final = "volume-pvc-"
_INITIATING: Final = (None, JobPhase.PENDING)


def plugin_marker(plugin: str) -> str:
    """The `status.controlledResources` key Volcano records for an applied plugin."""
    return PLUGIN_MARKER + plugin


def volume_marker(claim: str) -> str:
    """The `status.controlledResources` key Volcano records for each volume's claim."""
    return VOLUME_MARKER + claim


def asks_io(state: JobRecord, item: object) -> bool:
    """Whether the shell asks the `caldera-job-io` patch before deciding `item`: at a run's
    first sight of a job with volumes or plugins, the only jobs it changes (so the marker it
    records costs the others nothing)."""
    if state.job is not None or not isinstance(item, ParsedJob):
        return False
    spec = item.signal.job.get("spec")
    return isinstance(spec, dict) and bool(spec.get("volumes") or spec.get("plugins"))


def volumes_due(state: JobRecord) -> bool:
    """The volumes step is still to succeed while the job initiates (Pending, or not yet)."""
    return (
        state.job_io
        and state.job is not None
        and bool(state.job.spec.volumes)
        and state.volume_claims is None
        and state.phase in _INITIATING
    )


def marked(state: JobRecord, status: JobStatus) -> JobStatus:
    """The status with the markers the core keeps."""
    if not state.job_io:
        return status
    controlled = dict(sorted(state.controlled.items())) or None
    return status.model_copy(update={"controlled_resources": controlled})


def with_claims(job: Job, claims: Sequence[str] | None) -> Job:
    """The job with the claim names the volumes step chose: a Job observed before their write
    reached the watch must not make pods without them. `claims` None: none chosen yet."""
    volumes = job.spec.volumes or []
    if claims is None or len(claims) != len(volumes):
        return job
    filled = [
        v if v.volume_claim_name else v.model_copy(update={"volume_claim_name": c})
        for v, c in zip(volumes, claims, strict=True)
    ]
    return job.model_copy(update={"spec": job.spec.model_copy(update={"volumes": filled})})


def claims_ensured(state: JobRecord, ensured: results.VolumesEnsured) -> JobRecord:
    """Every volume's claim named and there: the names kept, one marker each."""
    assert state.job is not None
    markers = {volume_marker(c): c for c in ensured.claims}
    return state.model_copy(
        update={
            "volume_claims": list(ensured.claims),
            "controlled": {**state.controlled, **markers},
            "job": with_claims(state.job, ensured.claims),
        }
    )


def plugins_applied(state: JobRecord, applied: results.PluginsApplied) -> JobRecord:
    """Volcano's OnJobAdd markers, replacing the plugins' earlier ones; persisted with the next
    status write, as Volcano's are."""
    return state.model_copy(update={"controlled": {**without_plugins(state), **applied.controlled}})


def without_plugins(state: JobRecord) -> dict[str, str]:
    """The markers left once the plugins are removed (Volcano's OnJobDelete drops theirs)."""
    return {k: v for k, v in state.controlled.items() if not k.startswith(PLUGIN_MARKER)}

"""CronJobs and the Volcano Jobs they control → what the CronJobWorkflow reads. Pure functions.

A CronJob travels whole, typed (`models.cronjob.CronJob`); one that does not parse as one is
not Caldera's to run (nothing could be scheduled from it) and is left alone. A CronJob update
is news when its spec changes or it starts going: its status is the workflow's own write. Of
a Job only what the CronJob controller reads travels: name, uid, phase, when it was made and
when its phase last changed.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from forwarder.routing import envelopes, translate
from models import cronjob, vcjob
from models.meta import parse_time
from models.signals import cronjob as cronjob_signals

Obj = envelopes.Obj
CronJobFingerprint = tuple[Any, bool]  # (spec, deleting)


def cron_job_ref(obj: Obj) -> envelopes.CronJobRef:
    meta = translate.metadata(obj)
    return envelopes.CronJobRef(str(meta.get("namespace", "")), str(meta.get("name", "")))


def parses(obj: Obj) -> bool:
    try:
        cronjob.CronJob.load(dict(obj))
    except ValidationError:
        return False
    return True


def fingerprint(obj: Obj) -> CronJobFingerprint:
    return (obj.get("spec"), translate.metadata(obj).get("deletionTimestamp") is not None)


def observed(obj: Obj) -> cronjob_signals.CronJobObserved:
    return cronjob_signals.CronJobObserved(cron_job=cronjob.CronJob.load(dict(obj)))


def owner(obj: Obj) -> tuple[str, envelopes.CronJobRef] | None:
    """The controlling CronJob of a Volcano Job: its uid and workflow; None: none controls it."""
    meta = translate.metadata(obj)
    for ref in meta.get("ownerReferences") or []:
        if (
            ref.get("controller")
            and ref.get("kind") == cronjob.KIND
            and ref.get("apiVersion") == vcjob.API_VERSION
        ):
            target = envelopes.CronJobRef(str(meta.get("namespace", "")), str(ref.get("name", "")))
            return str(ref.get("uid", "")), target
    return None


def run_job(obj: Obj, deleted: bool = False) -> cronjob_signals.CronJobRun:
    meta = translate.metadata(obj)
    state = (obj.get("status") or {}).get("state") or {}
    return cronjob_signals.CronJobRun(
        name=str(meta.get("name", "")),
        uid=translate.uid(obj),
        resource_version=str(meta.get("resourceVersion", "")),
        phase=str(state.get("phase") or ""),
        created=parse_time(meta.get("creationTimestamp")),
        finished_at=parse_time(state.get("lastTransitionTime")),
        deleted=deleted,
    )

"""The session's backlog digest in its report only when the SchedulerWorkflow lacks it.

A busy scheduler's queues change little from one session to the next, and every session report
is a history event: the digest (`scheduling.api.backlog`) goes back only when it differs from
the one this worker process last returned for that scheduler, and None says "as before". That
is safe only while the workflow holds what this process returned last, so the digest goes in
full unless the last session the workflow heard of ran here (`since` carries this process's
cache token: a session that failed or ran on another worker leaves another token or none) and
this process's last report was from an earlier session (a retried attempt of this session may
have returned something the workflow never recorded).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Final

from activities.messages import Arrivals, SessionInput
from models.keys import JobKey, job_key
from scheduling.api import backlog
from scheduling.api.backlog import Backlog
from scheduling.cache.observed import ObservedGroup

_LOCK: Final = threading.Lock()
# scheduler name → (the session, the digest) this process last returned a report with
_REPORTED: Final[dict[str, tuple[int, Backlog]]] = {}


def report(
    request: SessionInput,
    arrived: Arrivals,
    digest: Backlog,
    groups: Mapping[JobKey, ObservedGroup],
) -> Backlog | None:
    """The digest, its jobs named as users know them, for the session's report; None when the
    SchedulerWorkflow already holds the same one."""
    listed = {
        key
        for line in digest.queues.values()
        for row in line.jobs
        if (key := job_key(row.namespace, row.name)) in groups
    }
    current = backlog.named(digest, {key: groups[key].job_name for key in listed})
    since = request.since
    with _LOCK:
        last = _REPORTED.get(request.scheduler_name)
        _REPORTED[request.scheduler_name] = (request.session, current)
    held = (
        last is not None
        and since is not None
        and since.token == arrived.token
        and last[0] < request.session
        and last[1] == current
    )
    return None if held else current


def forget() -> None:
    """Report every digest in full again (tests; a worker's memory starts empty)."""
    with _LOCK:
        _REPORTED.clear()

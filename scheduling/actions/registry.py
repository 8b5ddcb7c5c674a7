"""One scheduling session: snapshot in, decisions out, nothing else.

`run_session` is the whole of vc-scheduler's runOnce for Caldera: open the session books, run
the configured actions in order (the table `ACTIONS`, Volcano's action registry), close into a
`SessionResult`. It reads no clock, draws no random number and iterates no set to order its
output, so the same snapshot gives the same result on every worker, in every retry of the
session activity that calls it, and in the tests that replay it.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from scheduling.actions.allocate import allocate
from scheduling.actions.backfill import backfill
from scheduling.actions.enqueue import enqueue
from scheduling.actions.gangpreempt import gangpreempt
from scheduling.actions.gangreclaim import gangreclaim
from scheduling.actions.preempt import preempt
from scheduling.actions.reclaim import reclaim
from scheduling.api.extender import ExtenderPort
from scheduling.api.job_facts import FactMemo
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import Snapshot
from scheduling.framework import backlog, queue_report, status
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point
from scheduling.plugins import extender

ActionFn = Callable[[SessionState, SessionConfig], None]

ACTIONS: Final[Mapping[Action, ActionFn]] = {
    Action.ENQUEUE: enqueue,
    Action.ALLOCATE: allocate,
    Action.BACKFILL: backfill,
    Action.RECLAIM: reclaim,
    Action.PREEMPT: preempt,
    Action.GANG_RECLAIM: gangreclaim,
    Action.GANG_PREEMPT: gangpreempt,
}


# The extender's verbs by the extension point whose switch gates them.
_EXTENDER_POINTS: Final = {
    "predicate": Point.PREDICATE,
    "prioritize": Point.NODE_ORDER,
    "preemptable": Point.PREEMPTABLE,
    "reclaimable": Point.RECLAIMABLE,
    "job_enqueueable": Point.JOB_ENQUEUEABLE,
}


def _extender(port: ExtenderPort | None, settings: SessionConfig) -> extender.Extender | None:
    """The session's extender, its verbs left on by the tiers' switches; None: off."""
    if port is None or settings.extender is None:
        return None
    on = frozenset(
        verb
        for verb, point in _EXTENDER_POINTS.items()
        if extender.PLUGIN in settings.speakers(point)
    )
    return extender.Extender(port, settings.extender, on)


def run_session(
    snapshot: Snapshot,
    config: SessionConfig | None = None,
    port: ExtenderPort | None = None,  # None: no extender is asked (the plugin is off)
    facts: FactMemo | None = None,  # None: every job's books made afresh
) -> SessionResult:
    """Decide one session over `snapshot`; `config` None means Volcano's defaults. The result
    carries the backlog digest and the queue figures too (`framework.backlog`,
    `framework.queue_report`): both are read from the closed books. `port` reaches the
    extender plugin's HTTP extender; its answers are inputs like the snapshot, so a session
    replays alike only with the same answers. `facts` carries the jobs' books over from the
    previous session of the same scheduler; the decision is the same without it."""
    settings = config or SessionConfig()
    state = SessionState(snapshot, settings, facts)
    asked = _extender(port, settings)
    # onSessionOpen failing without ignorable: the plugin registers nothing this session.
    state.extender = asked if asked is not None and asked.open(snapshot) else None
    try:
        for action in settings.actions:
            ACTIONS[action](state, settings)
    finally:
        if asked is not None:
            asked.close()
    result = status.close(state)
    return result.model_copy(
        update={
            "backlog": backlog.digest(state, result, settings.pending_listed),
            "queues": queue_report.figures(state, result),  # Volcano's queue metrics
        }
    )

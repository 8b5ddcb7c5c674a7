"""One scheduling session: snapshot in, decisions out, nothing else.

`run_session` is the whole of vc-scheduler's runOnce for Caldera: open the session books, run
the configured actions in order, close into a `SessionResult`. It reads no clock, draws no
random number and iterates no set to order its output, so the SchedulerWorkflow can call it
inside workflow code and replay it. The actions are a table, like every decision here.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from scheduling import status
from scheduling.allocate import allocate
from scheduling.backfill import backfill
from scheduling.config import Action, SessionConfig
from scheduling.enqueue import enqueue
from scheduling.preempt import preempt
from scheduling.reclaim import reclaim
from scheduling.result import SessionResult
from scheduling.snapshot import Snapshot
from scheduling.state import SessionState

ActionFn = Callable[[SessionState, SessionConfig], None]

ACTIONS: Final[Mapping[Action, ActionFn]] = {
    Action.ENQUEUE: enqueue,
    Action.ALLOCATE: allocate,
    Action.BACKFILL: backfill,
    Action.RECLAIM: reclaim,
    Action.PREEMPT: preempt,
}


def run_session(snapshot: Snapshot, config: SessionConfig | None = None) -> SessionResult:
    """Decide one session over `snapshot`; `config` None means Volcano's defaults."""
    settings = config or SessionConfig()
    state = SessionState(snapshot, settings)
    for action in settings.actions:
        ACTIONS[action](state, settings)
    return status.close(state)

"""The DispatchWorkflow's `dispatch` query answer, as the CLI tests build it: a job that waits
for its first cluster, changed where a test says."""

from __future__ import annotations

from typing import Any

from workflows.dispatch import DispatchView

WAITING = DispatchView(
    phase="Pending",
    generation=0,
    cluster="",
    unreachable=False,
    waiting="",
    stale=[],
    held_commands=0,
    deleted=False,
)


def dispatch_view(**changed: Any) -> DispatchView:
    return WAITING.model_copy(update=changed)

"""The gang scheduler's configuration, read from the worker's environment.

CALDERA_SCHEDULER_ACTIONS takes Volcano's `actions` string ("enqueue, allocate, backfill,
reclaim, preempt"), in the order the actions run; unset or empty means the defaults of
`scheduling.config` (Volcano's built-in list plus reclaim). Read at every session, so a
malformed value fails the session with a message naming it rather than the worker at start.
"""

from __future__ import annotations

import os
from typing import Final

from temporalio.exceptions import ApplicationError

from scheduling.config import SessionConfig, parse_actions

ENV_ACTIONS: Final = "CALDERA_SCHEDULER_ACTIONS"


def session_config() -> SessionConfig:
    text = os.environ.get(ENV_ACTIONS, "").strip()
    if not text:
        return SessionConfig()
    try:
        return SessionConfig(actions=parse_actions(text))
    except ValueError as e:
        message = f"{ENV_ACTIONS}={text!r}: {e}"
        raise ApplicationError(message, type="Invalid", non_retryable=True) from e

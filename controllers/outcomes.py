"""What a shell hands back to its core as an input: a timer fired, an activity gave up, binds
failed. The core decides what follows; the shell never does."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Outcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TimerFired(Outcome):
    kind: Literal["TimerFired"] = "TimerFired"
    key: str
    timer: int = 0  # the StartTimer's `timer`


class ActionFailed(Outcome):
    """An activity gave up (retries exhausted or a permanent error)."""

    kind: Literal["ActionFailed"] = "ActionFailed"
    effect: str
    error: str
    namespace_gone: bool = False  # the object's namespace is being deleted: so is the object


class BindOutcome(Outcome):
    """Pods the gang scheduler placed that could not be bound, and why."""

    kind: Literal["BindOutcome"] = "BindOutcome"
    failed: dict[str, str]  # pod name → why


class PodsAbsent(Outcome):
    """Pods the workflow created, never heard of, and the apiserver does not have."""

    kind: Literal["PodsAbsent"] = "PodsAbsent"
    names: list[str]


AnyOutcome = TimerFired | ActionFailed | BindOutcome | PodsAbsent

"""How a session runs: which actions, in what order, and the plugin arguments they read.

The defaults are Volcano's built-in configuration (actions enqueue, allocate, backfill;
overcommit factor 1.2; nodeorder's least-allocated spreading), so a scheduler started without
a configuration behaves like vc-scheduler without a config file.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scheduling.scoring import ScoringConfig

DEFAULT_OVERCOMMIT: Final = Fraction(6, 5)


class Action(StrEnum):
    ENQUEUE = "enqueue"
    ALLOCATE = "allocate"
    BACKFILL = "backfill"


class SessionConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    actions: tuple[Action, ...] = (Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL)
    overcommit_factor: Fraction = DEFAULT_OVERCOMMIT  # overcommit-factor
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)

    @field_validator("overcommit_factor")
    @classmethod
    def _at_least_one(cls, value: Fraction) -> Fraction:
        """Volcano resets a factor below 1 to the default rather than rejecting it."""
        return value if value >= 1 else DEFAULT_OVERCOMMIT

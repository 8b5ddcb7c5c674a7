"""A plugin's answer to a vote (Volcano's util.Reject/Abstain/Permit).

The plugins answer with it, `framework.tiers.decide` walks the tiers over the answers.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from enum import IntEnum


class Vote(IntEnum):
    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1

"""Workflow shells and their pure cores; `ALL` is what every worker registers."""

from __future__ import annotations

from typing import Any, Final

ALL: Final[tuple[type[Any], ...]] = ()

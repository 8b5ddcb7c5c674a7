"""Kubernetes side effects as Temporal activities; `ALL` is what every worker registers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

ALL: Final[tuple[Callable[..., Any], ...]] = ()

"""Task-queue names: the one place they are spelled."""

from __future__ import annotations

from typing import Final

CONTROLLERS: Final = "caldera-controllers"  # JobWorkflow, QueueWorkflow and their activities
SCHEDULER: Final = "caldera-scheduler"  # scheduling sessions, next to the informer cache

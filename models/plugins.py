"""The job plugin names: the ones Caldera runs, and the ones Volcano has that Caldera does not.

The webhook refuses a Job naming any other plugin, as Volcano's does; one Volcano has and
Caldera does not run yet is refused too, with its own message, rather than admitted and
silently skipped. `activities.plugins` registers exactly `IMPLEMENTED` (a unit test checks).
"""

from __future__ import annotations

from typing import Final

IMPLEMENTED: Final = frozenset({"env", "ssh", "svc"})
VOLCANO_ONLY: Final = frozenset({"mpi", "pytorch", "tensorflow", "ray", "hcclrank"}) - IMPLEMENTED

"""The job plugin names, and the mpi plugin's options, which the webhook reads too.

The webhook refuses a Job naming a plugin outside `IMPLEMENTED`, as Volcano's does; one that
Volcano has and Caldera does not run yet (`VOLCANO_ONLY`) is refused with its own message
rather than admitted and silently skipped. `activities.controllers.plugins` registers exactly
`IMPLEMENTED` (a unit test checks).
"""

from __future__ import annotations

import dataclasses
from typing import Final

IMPLEMENTED: Final = frozenset(
    {"env", "ssh", "svc", "mpi", "pytorch", "tensorflow", "ray", "hcclrank"}
)
# Empty: Caldera runs every plugin Volcano's job controller registers. A plugin Volcano adds
# later goes here until Caldera runs it.
VOLCANO_ONLY: Final[frozenset[str]] = frozenset()
MPI: Final = "mpi"


@dataclasses.dataclass(frozen=True)
class MpiOptions:
    """`spec.plugins.mpi`, read with `models.goflags`: the webhook checks that the master task
    exists, the plugin opens the port and tells the master where its workers are."""

    master: str = "master"
    worker: str = "worker"
    port: int = 22  # sshd's port in the containers

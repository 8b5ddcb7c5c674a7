"""The timed faults of a soak, pure: at which second of the run each kind is injected.

The periodic ones (a worker SIGKILLed every `--worker-kill-every` s, a pod deleted every 8 s)
run on their own threads (`run.py`); these are the rest, at fixed fractions of the run, by the
Temporal profile: `dev`, the dev server on SQLite (stopped for 10 s twice); `server`, the
Temporal server on PostgreSQL (stopped with SIGTERM once, SIGKILLed once, and PostgreSQL
SIGKILLed twice).
"""

from __future__ import annotations

from typing import Final, Literal

Profile = Literal["dev", "server"]
PROFILES: Final[tuple[Profile, ...]] = ("dev", "server")

WORKER_KILL: Final = "worker SIGKILL"
FORWARDER_KILL: Final = "forwarder SIGKILL"
DEV_SERVER_RESTART: Final = "Temporal restart"  # the dev server stopped for 10 s
SERVER_SIGTERM: Final = "Temporal server SIGTERM"  # stopped, 10 s down, started again
SERVER_SIGKILL: Final = "Temporal server SIGKILL"  # killed, 10 s down, started again
POSTGRES_KILL: Final = "PostgreSQL SIGKILL"  # every PostgreSQL process, 5 s down, same data
APISERVER_KILL: Final = "kube-apiserver restart"
NODE_REMOVED: Final = "node removed"
NODE_READDED: Final = "node re-added"
NODE_BACK_AFTER: Final = 30.0  # seconds from a node's removal to its return


def timed_faults(minutes: float, temporal: Profile = "dev") -> list[tuple[float, str]]:
    """(seconds from the start, fault kind), in time order; faults due at the same second keep
    the order written here (a stable sort), so the `dev` profile's timeline is the one the
    soak always had, ties included (at 5 minutes a node returns as a forwarder is killed)."""
    d = minutes * 60
    first, second = (
        (DEV_SERVER_RESTART, DEV_SERVER_RESTART)
        if temporal == "dev"
        else (SERVER_SIGTERM, SERVER_SIGKILL)
    )
    out = [
        (d * 0.15, FORWARDER_KILL),
        (d * 0.25, first),
        (d * 0.40, APISERVER_KILL),
        (d * 0.50, NODE_REMOVED),
        (d * 0.50 + NODE_BACK_AFTER, NODE_READDED),
        (d * 0.60, FORWARDER_KILL),
        (d * 0.70, second),
    ]
    if temporal == "server":
        out += [(d * 0.33, POSTGRES_KILL), (d * 0.85, POSTGRES_KILL)]
    return sorted(out, key=lambda fault: fault[0])

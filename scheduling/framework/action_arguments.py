"""The arguments of the actions' `configurations` entries that Caldera reads.

gangpreempt and gangreclaim take `allowWholeBundle` (may a victim gang go whole) and
`maxDomains` (how many HyperNode domains to search for a gang with a hard network topology,
which these actions do not serve). Kept apart from `conf` so the loader stays one concern.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol

from scheduling.framework.session_config import Action


class ActionConfiguration(Protocol):
    """A `configurations` entry (`conf.ActionConfiguration`)."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> dict[str, Any]: ...


# The gang-level actions' `configurations` arguments: read, or accepted without effect (why).
GANG_ACTION_ARGUMENTS: Final[Mapping[str, str]] = {
    "allowWholeBundle": "",
    "maxDomains": (
        "caps the HyperNode domains searched for a gang with a hard network topology, and "
        "the gang-level actions do not serve such gangs (allocate places them)"
    ),
}


def no_whole_bundles(configurations: Iterable[ActionConfiguration]) -> frozenset[Action]:
    """gangpreempt's and gangreclaim's `allowWholeBundle: false`; any other key they do not
    know is refused, as is a value of the wrong type."""
    off = set()
    for configuration in configurations:
        if configuration.name not in (Action.GANG_PREEMPT, Action.GANG_RECLAIM):
            continue
        given = configuration.arguments
        unknown = sorted(set(given) - set(GANG_ACTION_ARGUMENTS))
        if unknown:
            raise ValueError(
                f"configurations: {configuration.name} has no argument(s) {unknown}, "
                f"known: {sorted(GANG_ACTION_ARGUMENTS)}"
            )
        allow = given.get("allowWholeBundle", True)
        if not isinstance(allow, bool):
            raise ValueError(
                f"configurations: {configuration.name}.allowWholeBundle must be true or "
                f"false, got {allow!r}"
            )
        steps = given.get("maxDomains", 8)
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise ValueError(
                f"configurations: {configuration.name}.maxDomains must be an integer, got {steps!r}"
            )
        if not allow:
            off.add(Action(configuration.name))
    return frozenset(off)

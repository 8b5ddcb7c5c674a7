"""The NamespaceQueue's conditions, shaped as metav1.Condition, and the reasons they give.

Volcano's design (docs/design/namespace-queue.md, 3.4.2 and 3.4.3) names the reasons; a
condition keeps its `lastTransitionTime` while its status stays the same, as Kubernetes'
`meta.SetStatusCondition` does, so a message that changes does not look like a transition.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from models import queue_refs
from models.meta import Condition
from models.namespacequeue import ConditionType


class Reason(StrEnum):
    NAMESPACE_ALLOWED = "NamespaceAllowed"  # Authorized
    NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"  # Authorized and Ready
    READY = "Ready"
    PARENT_NOT_FOUND = "ParentNotFound"
    ROOT_PARENT_FORBIDDEN = queue_refs.Reason.ROOT.value
    INVALID_PARENT_REFERENCE = queue_refs.Reason.INVALID.value
    HIERARCHY_CYCLE = "HierarchyCycle"
    PARENT_CONSTRAINT_VIOLATION = "ParentConstraintViolation"
    CLOSING = "Closing"  # Ready=False while the queue drains after a close
    CLOSED = "Closed"


@dataclass(frozen=True)
class Check:
    """One condition's verdict before it is stamped."""

    ok: bool
    reason: Reason
    message: str


def stamp(now: datetime) -> str:
    """RFC 3339 in UTC, seconds only, as the apiserver writes metav1.Time."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(
    kind: ConditionType,
    check: Check,
    previous: Sequence[Condition],
    now: datetime,
    generation: int | None,  # None: the object has no generation yet
) -> Condition:
    status = "True" if check.ok else "False"
    before = next((c for c in previous if c.type == kind), None)
    kept = before.last_transition_time if before is not None and before.status == status else None
    return Condition(
        type=kind,
        status=status,
        reason=check.reason,
        message=check.message,
        last_transition_time=kept or stamp(now),
        observed_generation=generation,
    )


def same(a: Sequence[Condition], b: Sequence[Condition]) -> bool:
    """Equal in everything but when they last moved (kept anyway when the status is kept)."""

    def key(cs: Sequence[Condition]) -> list[tuple[object, ...]]:
        return sorted((c.type, c.status, c.reason, c.message, c.observed_generation) for c in cs)

    return key(a) == key(b)

"""Caldera's custom search attributes: the one list the dev server registers and workflows set.

Users filter on them in the UI and with `temporal workflow list --query`, e.g.
`CalderaJobPhase='Running' AND CalderaQueue='default'`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

JOB_PHASE: Final = SearchAttributeKey.for_keyword("CalderaJobPhase")
JOB_NAME: Final = SearchAttributeKey.for_keyword("CalderaJobName")
NAMESPACE: Final = SearchAttributeKey.for_keyword("CalderaNamespace")
QUEUE: Final = SearchAttributeKey.for_keyword("CalderaQueue")
QUEUE_STATE: Final = SearchAttributeKey.for_keyword("CalderaQueueState")
QUEUE_PARENT: Final = SearchAttributeKey.for_keyword("CalderaQueueParent")

ALL: Final = (JOB_PHASE, JOB_NAME, NAMESPACE, QUEUE, QUEUE_STATE, QUEUE_PARENT)


def upsert_changed(updates: Sequence[SearchAttributeUpdate[Any]]) -> None:
    """Upsert what differs from the run's current attributes (given at its start or by an
    earlier upsert); each upsert is a history event and a visibility write."""
    current = workflow.info().typed_search_attributes
    changed = [u for u in updates if current.get(u.key) != u.value]
    if changed:
        workflow.upsert_search_attributes(changed)

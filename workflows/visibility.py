"""What a run shows in the UI's list and `temporal workflow list --query`: its search attributes
(`service.search_attributes`), upserted only when they change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate


def upsert_changed(updates: Sequence[SearchAttributeUpdate[Any]]) -> None:
    """Upsert what differs from the run's current attributes (given at its start or by an
    earlier upsert); each upsert is a history event and a visibility write."""
    current = workflow.info().typed_search_attributes
    changed = [u for u in updates if current.get(u.key) != u.value]
    if changed:
        workflow.upsert_search_attributes(changed)

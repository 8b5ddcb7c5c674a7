"""Shared pytest wiring: markers come from the directory a test lives in."""

from __future__ import annotations

import pytest

_MARK_BY_DIR = {"unit": "unit", "workflows": "workflow", "e2e": "e2e"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for part in item.path.parts:
            mark = _MARK_BY_DIR.get(part)
            if mark is not None:
                item.add_marker(getattr(pytest.mark, mark))

"""The dev server's SQLite pragmas: durable on a process crash by default, replaceable."""

from __future__ import annotations

import pytest

from cli.devstack import temporal_dev

pytestmark = pytest.mark.unit


def test_the_default_is_a_write_ahead_log_synced_at_checkpoints(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(temporal_dev.PRAGMAS_VARIABLE, raising=False)
    assert temporal_dev.pragmas() == ["journal_mode=wal", "synchronous=normal"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("", [], id="empty-means-the-server-defaults"),
        pytest.param(
            " journal_mode=delete , synchronous=full",
            ["journal_mode=delete", "synchronous=full"],
            id="replaced",
        ),
    ],
)
def test_the_variable_replaces_them(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: list[str]
) -> None:
    monkeypatch.setenv(temporal_dev.PRAGMAS_VARIABLE, value)
    assert temporal_dev.pragmas() == expected

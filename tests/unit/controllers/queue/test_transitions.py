"""Every cell of Volcano's queue state table (spec Part B2)."""

from __future__ import annotations

import itertools

import pytest

from controllers.queue.transitions import (
    QUEUE_ACTIONS,
    TRANSITIONS,
    Operation,
    Target,
    next_state,
    rule_for,
)
from models.bus import Action
from models.scheduling import QueueState

S, A = QueueState, Action

CELLS = [
    pytest.param(S.OPEN, A.OPEN_QUEUE, Operation.SYNC, {0: S.OPEN, 2: S.OPEN}, id="Open-OpenQueue"),
    pytest.param(
        S.OPEN, A.CLOSE_QUEUE, Operation.CLOSE, {0: S.CLOSED, 2: S.CLOSING}, id="Open-CloseQueue"
    ),
    pytest.param(S.OPEN, A.SYNC_QUEUE, Operation.SYNC, {0: S.OPEN, 2: S.OPEN}, id="Open-SyncQueue"),
    pytest.param(
        S.CLOSED, A.OPEN_QUEUE, Operation.OPEN, {0: S.OPEN, 2: S.OPEN}, id="Closed-OpenQueue"
    ),
    pytest.param(
        S.CLOSED, A.CLOSE_QUEUE, Operation.SYNC, {0: S.CLOSED, 2: S.CLOSED}, id="Closed-CloseQueue"
    ),
    pytest.param(
        S.CLOSED, A.SYNC_QUEUE, Operation.SYNC, {0: S.CLOSED, 2: S.CLOSED}, id="Closed-SyncQueue"
    ),
    pytest.param(
        S.CLOSING, A.OPEN_QUEUE, Operation.OPEN, {0: S.OPEN, 2: S.OPEN}, id="Closing-OpenQueue"
    ),
    pytest.param(
        S.CLOSING,
        A.CLOSE_QUEUE,
        Operation.SYNC,
        {0: S.CLOSED, 2: S.CLOSING},
        id="Closing-CloseQueue",
    ),
    pytest.param(
        S.CLOSING, A.SYNC_QUEUE, Operation.SYNC, {0: S.CLOSED, 2: S.CLOSING}, id="Closing-SyncQueue"
    ),
    pytest.param(
        S.UNKNOWN, A.OPEN_QUEUE, Operation.OPEN, {0: S.OPEN, 2: S.OPEN}, id="Unknown-OpenQueue"
    ),
    pytest.param(
        S.UNKNOWN,
        A.CLOSE_QUEUE,
        Operation.CLOSE,
        {0: S.CLOSED, 2: S.CLOSING},
        id="Unknown-CloseQueue",
    ),
    pytest.param(
        S.UNKNOWN,
        A.SYNC_QUEUE,
        Operation.SYNC,
        {0: S.UNKNOWN, 2: S.UNKNOWN},
        id="Unknown-SyncQueue",
    ),
]


@pytest.mark.parametrize(("state", "action", "operation", "outcome"), CELLS)
def test_cell(
    state: QueueState, action: Action, operation: Operation, outcome: dict[int, QueueState]
) -> None:
    rule = TRANSITIONS[(state, action)]
    assert rule.operation == operation
    assert {n: next_state(state, rule.target, n) for n in outcome} == outcome


def test_every_cell_is_filled_and_tested() -> None:
    product = set(itertools.product(QueueState, QUEUE_ACTIONS))
    assert set(TRANSITIONS) == product
    assert {(c.values[0], c.values[1]) for c in CELLS} == product  # type: ignore[attr-defined]


def test_a_queue_without_state_is_open() -> None:
    assert rule_for(None, A.CLOSE_QUEUE) == TRANSITIONS[(S.OPEN, A.CLOSE_QUEUE)]
    assert rule_for(None, A.SYNC_QUEUE).target == Target.OPEN

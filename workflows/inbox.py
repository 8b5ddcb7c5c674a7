"""The input queue of an entity workflow (one per Job, one per Queue).

Signals and updates only append here and return; the workflow's `run` loop takes inputs one
at a time, so decisions never interleave. Inputs from outside get increasing tickets, internal
ones (a timer fired, an activity failed) ticket 0; an update waits for its own ticket and
answers with what the workflow looked like right after that input, not after later ones.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

T = TypeVar("T")


class Inbox(Generic[T]):
    def __init__(self) -> None:
        self._items: list[tuple[int, T]] = []
        self._accepted = 0
        self._processed = 0  # highest ticket carried out
        self._busy = False  # an input's effects are being carried out
        self._answers: dict[int, str] = {}  # update ticket → answer, "" until carried out
        self._refused: dict[int, str] = {}  # update ticket → why it will not be carried out

    def accept(self, item: T) -> int:
        """Append an input from outside; returns its ticket."""
        self._accepted += 1
        self._items.append((self._accepted, item))
        return self._accepted

    def internal(self, item: T, first: bool = False) -> None:
        """An input the workflow gives itself; `first` puts it ahead of everything waiting."""
        if first:
            self._items.insert(0, (0, item))
        else:
            self._items.append((0, item))

    def __bool__(self) -> bool:
        return bool(self._items)

    def pending(self) -> list[T]:
        """The inputs not taken yet, oldest first."""
        return [item for _, item in self._items]

    @property
    def backlog(self) -> int:
        """Inputs received and not yet fully carried out (the `status` queries show it)."""
        return len(self._items) + (1 if self._busy else 0)

    def take(self) -> tuple[int, T]:
        self._busy = True
        return self._items.pop(0)

    def done(self, ticket: int, answer: str) -> None:
        self._busy = False
        self._processed = max(self._processed, ticket)
        if ticket in self._answers:
            self._answers[ticket] = answer

    async def answer(self, ticket: int) -> str:
        """Wait until the input with this ticket was carried out; what it left behind."""
        self._answers[ticket] = ""
        await workflow.wait_condition(lambda: self._processed >= ticket)
        answer = self._answers.pop(ticket)
        if (why := self._refused.pop(ticket, None)) is not None:
            raise ApplicationError(why, type="CommandRefused", non_retryable=True)
        return answer

    def abandon(self, why: str) -> None:
        """Drop the inputs not taken, refusing with `why` the updates among them: a run that
        ends or starts over carries none of them out, and an update left waiting would keep
        the run from ever continuing as new (it waits for every handler to finish)."""
        for ticket, _ in self._items:
            if ticket in self._answers:
                self._refused[ticket] = why
            self._processed = max(self._processed, ticket)
        self._items.clear()


def continue_due(max_history: int) -> bool:
    """Continue as new when the server suggests it, or past a history budget (tests set one)."""
    info = workflow.info()
    if max_history and info.get_current_history_length() >= max_history:
        return True
    return info.is_continue_as_new_suggested()

"""A bounded memory of recently seen strings (deleted uids), oldest forgotten first.

The forwarder must refuse late events of deleted objects (they would signal-with-start a new
run), yet may not remember every deletion forever: the newest `capacity` are enough to cover
the window in which a late watch event or a racing relist can still arrive.
"""

from __future__ import annotations

from collections import OrderedDict


class BoundedSet:
    """The most recently added `capacity` strings; older ones are forgotten first."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._items: OrderedDict[str, None] = OrderedDict()

    def add(self, item: str) -> None:
        self._items[item] = None
        self._items.move_to_end(item)
        while len(self._items) > self._capacity:
            self._items.popitem(last=False)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)

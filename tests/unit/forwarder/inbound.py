"""Watch items for the router tests, and a way to route several in a row."""

from __future__ import annotations

from typing import Any

from forwarder.routing import events, router


def added(kind: events.Kind, obj: dict[str, Any]) -> events.Observed:
    return events.Observed(kind, "ADDED", obj)


def modified(kind: events.Kind, obj: dict[str, Any]) -> events.Observed:
    return events.Observed(kind, "MODIFIED", obj)


def deleted(kind: events.Kind, obj: dict[str, Any]) -> events.Observed:
    return events.Observed(kind, "DELETED", obj)


def route_all(r: router.Router, *items: events.Inbound) -> list[events.Outbound]:
    out: list[events.Outbound] = []
    for item in items:
        out += r.route(item)
    return out

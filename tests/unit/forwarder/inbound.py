"""Watch items for the router tests, and a way to route several in a row."""

from __future__ import annotations

from typing import Any

from forwarder.routing import envelopes, router


def added(kind: envelopes.Kind, obj: dict[str, Any]) -> envelopes.Observed:
    return envelopes.Observed(kind, "ADDED", obj)


def modified(kind: envelopes.Kind, obj: dict[str, Any]) -> envelopes.Observed:
    return envelopes.Observed(kind, "MODIFIED", obj)


def deleted(kind: envelopes.Kind, obj: dict[str, Any]) -> envelopes.Observed:
    return envelopes.Observed(kind, "DELETED", obj)


def route_all(r: router.Router, *items: envelopes.Inbound) -> list[envelopes.Outbound]:
    out: list[envelopes.Outbound] = []
    for item in items:
        out += r.route(item)
    return out

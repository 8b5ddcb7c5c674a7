"""The forwarder's watches: a reflector per kind whose sightings enter the pipeline as envelopes."""

from __future__ import annotations

from collections.abc import Callable

from forwarder.routing import envelopes
from service import reflector


class Watcher(reflector.Reflector):
    """List+watch `kind`, emitting `Relisted` for each full list and `Observed` per change."""

    def __init__(
        self,
        kind: envelopes.Kind,
        call: reflector.ListCall,
        emit: Callable[[envelopes.Inbound], None],
        watch_seconds: tuple[int, int] = reflector.WATCH_SECONDS,
    ) -> None:
        super().__init__(
            kind,
            call,
            on_list=lambda objects: emit(envelopes.Relisted(kind, objects)),
            on_event=lambda type_, obj: emit(envelopes.Observed(kind, type_, obj)),
            watch_seconds=watch_seconds,
        )

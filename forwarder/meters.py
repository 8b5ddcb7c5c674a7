"""The forwarder's instruments (`service.metrics` declares them), made once from its runtime's
meter: the pipeline and the signaller record through the same ones."""

from __future__ import annotations

from temporalio.common import MetricMeter

from service import metrics


class Meters:
    """The forwarder's instruments on `meter` (a no-op meter records nothing: tests, tools)."""

    def __init__(self, meter: MetricMeter = MetricMeter.noop) -> None:
        self.events = metrics.FORWARDER_EVENTS.on(meter)
        self.relists = metrics.FORWARDER_RELISTS.on(meter)
        self.sent = metrics.FORWARDER_SIGNALS_SENT.on(meter)
        self.dropped = metrics.FORWARDER_SIGNALS_DROPPED.on(meter)
        self.lag = metrics.FORWARDER_SIGNAL_LAG.on(meter)

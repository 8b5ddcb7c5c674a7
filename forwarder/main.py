"""Wiring: options, the leader-election loop around pipeline terms, and process signals.

`run` is the whole forwarder as a coroutine (tests can drive it with their own `stop`);
`serve` is the process around it: logging, SIGTERM/SIGINT → graceful stop (flush pending
signals, release the Lease). Flags live here, next to the options they fill, so `caldera
forwarder` and `python -m forwarder` share one definition.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import signal
from dataclasses import dataclass, field

from kubernetes.client import ApiClient, CoordinationV1Api
from temporalio.client import Client
from temporalio.common import MetricMeter

from forwarder import kube, leader, pipeline, signaller
from forwarder.meters import Meters
from forwarder.routing import coalesce, envelopes
from models.signals import job as job_signals
from service import logs, metrics_endpoint, temporal

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Options:
    temporal: temporal.TemporalOptions = field(default_factory=temporal.TemporalOptions)
    kubeconfig: str | None = None  # None: $KUBECONFIG, ~/.kube/config, or in-cluster
    coalesce: float = coalesce.DEFAULT_DELAY  # seconds a pod snapshot may wait for company
    # None: Volcano's behaviour, pods wait until their PodGroup is Inqueue.
    scheduler_override: str | None = None
    lease: leader.LeaseConfig = field(default_factory=leader.LeaseConfig)
    metrics_address: str = ""  # host:port of the Prometheus endpoint; "": none
    log_format: str = "text"  # service.logs.FORMATS

    def job_start(self) -> job_signals.JobStart:
        settings = job_signals.ControllerSettings(
            scheduler_override=self.scheduler_override,
            local_pod_writes=True,
            local_writes=True,
            one_write_per_decision=True,
        )
        return job_signals.JobStart(settings=settings)


async def run(options: Options, stop: asyncio.Event) -> None:
    """Stand by, lead while holding the Lease, stand by again if it is lost; until `stop`."""
    runtime = metrics_endpoint.runtime(options.metrics_address)
    client = await temporal.connect_patiently(options.temporal, runtime=runtime)
    meters = Meters(runtime.metric_meter if runtime else MetricMeter.noop)
    # Separate clients: Lease renewals must never wait behind watch connections.
    leases = CoordinationV1Api(kube.new_api(options.kubeconfig))
    elector = leader.Elector(leases, options.lease)
    watches = kube.new_api(options.kubeconfig)
    try:
        while await elector.acquire(stop):
            await _lead(options, client, watches, elector, stop, meters)
    finally:
        await asyncio.to_thread(elector.release)


async def _lead(
    options: Options,
    client: Client,
    api: ApiClient,
    elector: leader.Elector,
    stop: asyncio.Event,
    meters: Meters,
) -> None:
    """One term: forward until `stop` (flush everything) or until the Lease is lost (drop)."""
    halt = asyncio.Event()
    holding = asyncio.create_task(elector.hold())
    stopping = asyncio.create_task(stop.wait())
    for task in (holding, stopping):
        task.add_done_callback(lambda _: halt.set())
    term = pipeline.Pipeline(
        {kind: kube.list_call(api, kind) for kind in envelopes.Kind},
        functools.partial(kube.delete_command, api),
        signaller.Signaller(client, options.job_start(), meters=meters),
        options.coalesce,
        meters,
    )
    try:
        await term.run(halt)
    finally:
        lost = holding.done() and not holding.cancelled()
        stopping.cancel()
        try:
            await term.finish(graceful=not lost)
        finally:
            holding.cancel()


def add_arguments(p: argparse.ArgumentParser) -> None:
    env = os.environ.get
    temporal.add_arguments(p)
    p.add_argument("--kubeconfig", default=env("KUBECONFIG"), help="default: $KUBECONFIG")
    p.add_argument("--coalesce-ms", type=int, default=200, help="pod batching delay (200)")
    p.add_argument(
        "--scheduler-override",
        default=env("CALDERA_SCHEDULER_OVERRIDE") or None,
        help="hand pods to this scheduler instead of waiting for the PodGroup",
    )
    p.add_argument("--lease-namespace", default="default")
    p.add_argument("--lease-name", default="caldera-forwarder")
    p.add_argument("--lease-duration", type=int, default=15, help="seconds (15)")
    p.add_argument("--renew-interval", type=float, default=5.0, help="seconds (5)")
    p.add_argument("--retry-interval", type=float, default=2.0, help="standby poll, seconds (2)")
    p.add_argument("--log-level", default="INFO")
    logs.add_arguments(p)
    p.add_argument(
        "--metrics-address",
        default=env(metrics_endpoint.ENV_ADDRESS, metrics_endpoint.FORWARDER_ADDRESS),
        help=f"Prometheus /metrics on host:port (${metrics_endpoint.ENV_ADDRESS}, default "
        f"{metrics_endpoint.FORWARDER_ADDRESS}; empty: off)",
    )


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        temporal=temporal.options_from(args),
        kubeconfig=args.kubeconfig,
        coalesce=args.coalesce_ms / 1000,
        scheduler_override=args.scheduler_override,
        lease=leader.LeaseConfig(
            namespace=args.lease_namespace,
            name=args.lease_name,
            duration=args.lease_duration,
            renew_interval=args.renew_interval,
            retry_interval=args.retry_interval,
        ),
        metrics_address=args.metrics_address,
        log_format=args.log_format,
    )


def serve(options: Options, log_level: str = "INFO") -> int:
    """Run until SIGTERM or SIGINT; exit code 0 after a graceful stop."""
    logs.setup(log_level, options.log_format)
    return asyncio.run(_serve(options))


async def _serve(options: Options) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        logger.info("stopping signal=%s", signal.Signals(signum).name)
        stop.set()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(s)  # a second signal kills without waiting

    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, on_signal, s)
    logger.info(
        "forwarder starting temporal=%s namespace=%s lease=%s/%s identity=%s",
        options.temporal.address,
        options.temporal.namespace,
        options.lease.namespace,
        options.lease.name,
        options.lease.identity,
    )
    await run(options, stop)
    return 0

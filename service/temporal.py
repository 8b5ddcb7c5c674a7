"""How every Caldera process reaches Temporal: one set of options, from flags or environment.

The worker, the forwarder and the `caldera` CLI share this so that an operator configures the
address, namespace and mTLS client certificates once (environment in a Deployment, flags on a
laptop) and all three connect the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final, TypeVar

from pydantic import BaseModel, ConfigDict
from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from service import codec

logger = logging.getLogger(__name__)
DEFAULT_ADDRESS = "127.0.0.1:7233"
BACKOFF: Final = (1.0, 30.0)  # seconds: first wait for an unreachable server, cap
DEFAULT_NAMESPACE = "default"
# What a server answers while it or its database is coming back: "Namespace default is not
# found" while PostgreSQL is down (the chaos soak's `--temporal server`), unavailable, slow.
PASSING: Final = frozenset(
    {
        RPCStatusCode.NOT_FOUND,
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.RESOURCE_EXHAUSTED,
    }
)
T = TypeVar("T")


class TemporalOptions(BaseModel):
    """Where Temporal is and how to prove who we are; paths are read at connect time."""

    model_config = ConfigDict(frozen=True)

    address: str = DEFAULT_ADDRESS
    namespace: str = DEFAULT_NAMESPACE
    tls_cert: Path | None = None  # client certificate (PEM) for mTLS
    tls_key: Path | None = None  # its private key (PEM)
    tls_ca: Path | None = None  # server CA (PEM); system roots when absent
    tls_server_name: str | None = None
    api_key: str | None = None  # Temporal Cloud API key (implies TLS)
    # Payload encryption keys ($CALDERA_CODEC_KEY, see service/codec.py); None: plain payloads
    codec_keys: codec.CodecKeys | None = None

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert or self.tls_ca or self.api_key)

    def tls_config(self) -> TLSConfig | bool:
        if not self.tls:
            return False
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("mTLS needs both a client certificate and its key")
        return TLSConfig(
            client_cert=self.tls_cert.read_bytes() if self.tls_cert else None,
            client_private_key=self.tls_key.read_bytes() if self.tls_key else None,
            server_root_ca_cert=self.tls_ca.read_bytes() if self.tls_ca else None,
            domain=self.tls_server_name,
        )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Temporal flags; each defaults to its environment variable so Deployments need no args."""
    env = os.environ.get
    p.add_argument("--temporal-address", default=env("TEMPORAL_ADDRESS", DEFAULT_ADDRESS))
    p.add_argument(
        "--namespace",
        "--temporal-namespace",
        dest="temporal_namespace",
        default=env("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE),
        help="Temporal namespace ($TEMPORAL_NAMESPACE, default `default`)",
    )
    p.add_argument("--tls-cert", default=env("TEMPORAL_TLS_CERT"), help="$TEMPORAL_TLS_CERT")
    p.add_argument("--tls-key", default=env("TEMPORAL_TLS_KEY"), help="$TEMPORAL_TLS_KEY")
    p.add_argument("--tls-ca", default=env("TEMPORAL_TLS_CA"), help="$TEMPORAL_TLS_CA")
    p.add_argument(
        "--tls-server-name", default=env("TEMPORAL_TLS_SERVER_NAME"), help="SNI override"
    )


def options_from(args: argparse.Namespace) -> TemporalOptions:
    return TemporalOptions(
        address=args.temporal_address,
        namespace=args.temporal_namespace,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_ca=args.tls_ca,
        tls_server_name=args.tls_server_name,
        api_key=os.environ.get("TEMPORAL_API_KEY") or None,
        codec_keys=codec.keys_from_env(),
    )


def options_from_env() -> TemporalOptions:
    """The same options for processes without flags (the worker)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return options_from(parser.parse_args([]))


async def connect(options: TemporalOptions, runtime: Runtime | None = None) -> Client:
    """A client with Caldera's data converter (pydantic payloads, encrypted when keyed)."""
    return await Client.connect(
        options.address,
        namespace=options.namespace,
        data_converter=codec.data_converter(options.codec_keys),
        tls=options.tls_config(),
        api_key=options.api_key,
        runtime=runtime,
    )


async def connect_patiently(
    options: TemporalOptions, runtime: Runtime | None = None, backoff: tuple[float, float] = BACKOFF
) -> Client:
    """For the processes that run for good (worker, forwarder): a server that is not up yet,
    or restarting, is waited for with a warning per attempt, instead of ending the process
    (which would start again, and fail again, until the server is back)."""
    delay = backoff[0]
    while True:
        try:
            return await connect(options, runtime)
        except RuntimeError as e:
            logger.warning(
                "temporal unreachable address=%s retry_in=%.1fs error=%s",
                options.address,
                delay,
                e,
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, backoff[1])


async def call_patiently(
    what: str, call: Callable[[], Awaitable[T]], backoff: tuple[float, float] = BACKOFF
) -> T:
    """A start-up call of a process that runs for good, retried through a server (or its
    database) coming back, as `connect_patiently` waits for the connection: a worker that
    ended on it stayed down until something started it again. Other errors are raised."""
    delay = backoff[0]
    while True:
        try:
            return await call()
        except RPCError as e:
            if e.status not in PASSING:
                raise
            logger.warning("temporal not ready for %s retry_in=%.1fs error=%s", what, delay, e)
        await asyncio.sleep(delay)
        delay = min(delay * 2, backoff[1])

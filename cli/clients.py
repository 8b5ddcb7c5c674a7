"""The job and queue commands' connections and their one error boundary.

Every failure a user can meet (no apiserver, no Temporal, no such job, a refused command) is
turned into `CliError` here, with a one-line message naming what was tried (the address, the
kubeconfig, the workflow id), and printed by `guarded` without a traceback. The connections
themselves come from `service/`: the same Temporal options and kubeconfig rule as the worker
and the forwarder.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Final, TypeVar

import urllib3
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from temporalio.client import (
    Client,
    RPCError,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.service import RPCStatusCode

from cli import links
from service import kube, temporal

DEFAULT_NAMESPACE: Final = "default"
KUBE_TIMEOUT: Final = 15.0  # seconds per apiserver call
ANSWER_TIMEOUT: Final = 60.0  # seconds an update or query may take (a worker must answer)

T = TypeVar("T")
_temporal_opened = False  # a Temporal client (and its runtime threads) exists in this process


class CliError(Exception):
    """A failure the user can act on; its message is one line, printed without a traceback."""


class Refused(CliError):
    """A workflow's update validator said no; its message is printed as is."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """--kubeconfig, the Temporal flags of `service.temporal`, --ui-url and --timeout."""
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file (default $KUBECONFIG)")
    temporal.add_arguments(p)
    p.add_argument(
        "--ui-url",
        default=links.default_ui(),
        help=f"Temporal UI for links (${links.UI_ENV}, default {links.DEFAULT_UI})",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=ANSWER_TIMEOUT,
        help=f"seconds to wait for a workflow's answer (default {ANSWER_TIMEOUT:.0f})",
    )


def namespaced(objects: str) -> argparse.ArgumentParser:
    """The parent parser of a namespaced verb: `add_arguments` and Kubernetes' -n/--namespace,
    as kubectl and vcctl spell it (it replaces Temporal's -n alias; Temporal's namespace stays
    --temporal-namespace)."""
    common = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
    add_arguments(common)
    common.add_argument(
        "-n",
        "--namespace",
        default=None,
        help=f"{objects} Kubernetes namespace (default: the kubeconfig context's)",
    )
    return common


class Connections:
    """The apiserver and Temporal as the flags say; each opened on first use."""

    def __init__(self, args: argparse.Namespace, temporal_client: Client | None = None) -> None:
        """temporal_client: an already connected client (None: connect on first use)."""
        self.kubeconfig: str | None = kube.kubeconfig_path(args.kubeconfig)  # None: default
        try:
            self.temporal_options = temporal.options_from(args)
        except ValueError as e:
            raise CliError(f"Temporal options: {e}") from None
        self.ui: str = args.ui_url
        self.timeout = timedelta(seconds=args.timeout)
        self._api: client.ApiClient | None = None  # None: not connected yet
        self._client = temporal_client  # None: not connected yet

    # -- Kubernetes ---------------------------------------------------------------------------

    @property
    def api(self) -> client.ApiClient:
        if self._api is None:
            try:
                self._api = kube.new_api(self.kubeconfig)
            except (ConfigException, OSError) as e:
                raise CliError(f"cannot load kubeconfig {self._kubeconfig_name}: {e}") from None
        return self._api

    def default_namespace(self) -> str:
        """The kubeconfig context's namespace, like kubectl; `default` when it names none."""
        try:
            _, active = config.list_kube_config_contexts(config_file=self.kubeconfig)  # type: ignore[no-untyped-call]
        except (ConfigException, OSError):
            return DEFAULT_NAMESPACE
        namespace = ((active or {}).get("context") or {}).get("namespace")
        return str(namespace) if namespace else DEFAULT_NAMESPACE

    @contextmanager
    def kube_call(self, what: str, missing: str | None = None) -> Iterator[None]:
        """Map apiserver failures; `missing` is the message for a 404 (None: a plain error)."""
        try:
            yield
        except client.ApiException as e:
            if e.status == 404 and missing is not None:
                raise CliError(missing) from None
            raise CliError(f"could not {what}: {_api_message(e)}") from None
        except (urllib3.exceptions.HTTPError, OSError) as e:
            host = self.api.configuration.host
            raise CliError(
                f"cannot reach the apiserver at {host} (kubeconfig {self._kubeconfig_name}): "
                f"{_short(e)}"
            ) from None

    @property
    def _kubeconfig_name(self) -> str:
        return self.kubeconfig or "~/.kube/config"

    # -- Temporal -----------------------------------------------------------------------------

    async def temporal(self) -> Client:
        if self._client is None:
            o = self.temporal_options
            global _temporal_opened
            _temporal_opened = True  # the runtime starts with the first attempt
            try:
                self._client = await temporal.connect(o)
            except (RuntimeError, ValueError, OSError) as e:
                raise CliError(
                    f"cannot reach Temporal at {o.address} (namespace {o.namespace}): {_short(e)}"
                ) from None
        return self._client

    @contextmanager
    def temporal_call(self, what: str, workflow_id: str) -> Iterator[None]:
        """Map Temporal failures; a validator's refusal becomes `Refused` with its message."""
        o = self.temporal_options
        try:
            yield
        except WorkflowUpdateFailedError as e:
            cause = e.cause
            message = getattr(cause, "message", None) or str(cause or e)
            raise Refused(message) from None
        except WorkflowQueryFailedError as e:
            raise CliError(f"could not {what}: {e.message}") from None
        except (WorkflowUpdateRPCTimeoutOrCancelledError, TimeoutError):
            raise CliError(
                f"could not {what}: no answer from workflow {workflow_id} within "
                f"{self.timeout.total_seconds():g}s; is a Caldera worker running?"
            ) from None
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                raise CliError(
                    f"could not {what}: workflow {workflow_id} in Temporal namespace "
                    f"{o.namespace} at {o.address}: {e.message}"
                ) from None
            if e.status in (RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED):
                raise CliError(f"cannot reach Temporal at {o.address}: {e.message}") from None
            raise CliError(f"could not {what}: Temporal at {o.address}: {e.message}") from None

    async def answer(self, call: Awaitable[T]) -> T:
        """Bound a call that needs a worker to answer (a query, an update): without one it
        would wait forever."""
        return await asyncio.wait_for(call, self.timeout.total_seconds())

    def url(self, workflow_id: str) -> str:
        return links.workflow_url(self.ui, self.temporal_options.namespace, workflow_id)


def guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A command's handler that prints `CliError`s (no traceback) and exits 1 on them."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except Refused as e:
            print(e, file=sys.stderr)
        except CliError as e:
            print(f"caldera: {e}", file=sys.stderr)
        except KeyboardInterrupt:
            return 130
        return 1

    return run


def finish(code: int) -> int:
    """The process's exit code; once a Temporal runtime exists, exit here without finalizing.

    The runtime's threads can abort a finalizing interpreter ("Fatal Python error:
    PyGILState_Release", temporalio/sdk-python#300; seen here after `job view`), turning a
    successful command into exit -6. The output is flushed first.
    """
    if _temporal_opened:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _api_message(e: client.ApiException) -> str:
    """The apiserver's own message (a webhook's refusal, a CEL rule) when the body has one."""
    try:
        body = json.loads(e.body or "")
    except ValueError:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    return str(message) if message else f"{e.status} {e.reason}"


def _short(e: BaseException) -> str:
    """The innermost reason of a connection failure ("Connection refused"), not its wrappers."""
    reason: object = getattr(e, "reason", None) or e
    text = str(reason)
    for marker in ("Connection refused", "timed out", "Name or service not known"):
        if marker in text:
            return marker.lower() if marker != "Connection refused" else "connection refused"
    return text.splitlines()[0] if text else type(e).__name__

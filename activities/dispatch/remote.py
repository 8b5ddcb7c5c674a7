"""Talking to a worker cluster from the manager: its client (`activities.dispatch.cluster_secrets`,
from its Secret), one request at a time with a short timeout, and the one rule for what counts as
the cluster not answering (`Unreachable`: no usable Secret, no connection, credentials refused, a
server error), which the dispatcher's activities report as an answer rather than raise. Everything
else an apiserver says goes through `errors.kube_call` as for the manager's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

import urllib3
from kubernetes import client

from activities import errors, kube
from activities.dispatch import cluster_secrets, clusters
from activities.messages import Message
from controllers.dispatch import copies
from models import vcjob
from models.dispatch import RemoteCopy

T = TypeVar("T")
TIMEOUT: Final = (3.0, 10.0)  # seconds to connect, to read: a cluster that hangs is unreachable
SERVER_ERRORS: Final = range(500, 600)
JOBS: Final = "jobs"


class Unreachable(Exception):
    """The cluster did not answer, or not usably; the message says why, one line."""


class CopyInput(Message):
    """Which copy: the manager Job's namespace, name and uid (its copies' origin)."""

    namespace: str
    name: str
    origin: str
    target: RemoteCopy


@contextlib.contextmanager
def reaching(cluster: str) -> Iterator[None]:
    """Failures that mean the cluster cannot be talked to, as Unreachable; the rest (a 403 on
    one call, a 422) go on to `errors.kube_call`."""
    try:
        yield
    except cluster_secrets.ClusterUnusable as e:
        raise Unreachable(str(e)) from None
    except client.ApiException as e:
        if e.status == clusters.UNAUTHORIZED or (e.status or 0) in SERVER_ERRORS or not e.status:
            raise Unreachable(f"cluster {cluster}: {e.status} {e.reason}") from None
        raise
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise Unreachable(clusters.unreachable(cluster, e)) from None


def api(cluster: str) -> client.ApiClient:
    with reaching(cluster):
        return cluster_secrets.api_for(cluster)


def call(cluster: str, what: str, request: Callable[[], T], ok: frozenset[int] = frozenset()) -> T:
    """One request to a worker cluster: Unreachable, or `errors.kube_call`'s mapping; None
    for a status in `ok`."""
    result: Any = None
    with errors.kube_call(f"{what} on cluster {cluster}", ok=ok), reaching(cluster):
        result = request()
    return result  # type: ignore[no-any-return]


def read(to: client.ApiClient, cluster: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The Job of that name on the cluster; None: there is none."""
    found = call(
        cluster,
        f"read job {namespace}/{name}",
        lambda: client.CustomObjectsApi(to).get_namespaced_custom_object(
            vcjob.GROUP, vcjob.VERSION, namespace, JOBS, name, _request_timeout=TIMEOUT
        ),
        ok=errors.GONE_OK,
    )
    return kube.as_dict(found) if found is not None else None


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = obj.get("metadata") or {}
    return found


def whose(obj: dict[str, Any]) -> tuple[str, int]:
    """The origin and generation a Job there carries ("", 0: not a dispatched copy)."""
    return copies.whose(meta(obj).get("annotations") or {})

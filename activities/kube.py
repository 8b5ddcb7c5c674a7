"""The one Kubernetes client the activities share, configured once per worker process.

KUBECONFIG (or ~/.kube/config) when present, else the in-cluster service account
(`service.kube`). Activities are sync functions on the worker's thread pool because the
official client blocks.
"""

from __future__ import annotations

import functools
from typing import Any

from kubernetes import client
from urllib3.response import BaseHTTPResponse

from service import kube

# Activity threads (worker.MAX_ACTIVITIES), the session's parallel status writes, the binding
# beside it and the pod writes: beyond this, every request past the pool redoes a TLS handshake.
CONNECTIONS = 128


@functools.cache
def api() -> client.ApiClient:
    """The client every activity shares."""
    return new_api()


def new_api() -> client.ApiClient:
    return kube.new_api(None, CONNECTIONS)


def core() -> client.CoreV1Api:
    return client.CoreV1Api(api())


def custom() -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api())


def unread(response: object) -> None:
    """Done with the raw response of a call made with `_preload_content=False`, whose answer
    nobody reads: the client skips deserialising it into typed models (a pod into V1Pod
    costs more than the request's own work in Python) and still raises ApiException, with
    status, reason and body, on a non-2xx answer. Its connection goes back to the pool
    rather than staying held by the unread body. Anything else (a test's fake client
    answers None) needs nothing."""
    if isinstance(response, BaseHTTPResponse):
        response.drain_conn()
        response.release_conn()


def body(doc: dict[str, Any]) -> Any:
    """The client takes plain mappings as request bodies; its stubs only name the V1 types."""
    return doc


def as_dict(obj: object) -> dict[str, Any]:
    """Custom-object calls return plain mappings typed as `object`."""
    if not isinstance(obj, dict):
        raise TypeError(f"expected a mapping from the apiserver, got {type(obj).__name__}")
    return obj

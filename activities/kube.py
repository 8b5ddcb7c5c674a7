"""The one Kubernetes client the activities share, configured once per worker process.

KUBECONFIG (or ~/.kube/config) when present, else the in-cluster service account
(`service.kube`). Activities are sync functions on the worker's thread pool because the
official client blocks.
"""

from __future__ import annotations

import functools
from typing import Any

from kubernetes import client

from service import kube

# Activity threads (worker.MAX_ACTIVITIES) plus the session's parallel status writes.
CONNECTIONS = 64


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


def body(doc: dict[str, Any]) -> Any:
    """The client takes plain mappings as request bodies; its stubs only name the V1 types."""
    return doc


def as_dict(obj: object) -> dict[str, Any]:
    """Custom-object calls return plain mappings typed as `object`."""
    if not isinstance(obj, dict):
        raise TypeError(f"expected a mapping from the apiserver, got {type(obj).__name__}")
    return obj

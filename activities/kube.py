"""The one Kubernetes client the activities share, configured once per worker process.

KUBECONFIG (or ~/.kube/config) when present, else the in-cluster service account. Activities
are sync functions on the worker's thread pool because the official client blocks.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from kubernetes import client, config


@functools.cache
def api() -> client.ApiClient:
    """The client every activity shares."""
    return new_api()


def new_api() -> client.ApiClient:
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        config.load_incluster_config()  # type: ignore[no-untyped-call]
        return client.ApiClient()
    loaded: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=os.environ.get("KUBECONFIG")
    )
    return loaded


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

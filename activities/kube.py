"""The one Kubernetes client the activities share, configured once per worker process.

KUBECONFIG (or ~/.kube/config) when present, else the in-cluster service account. Activities
are sync functions on the worker's thread pool because the official client blocks.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from kubernetes import client, config

# Activity threads (worker.MAX_ACTIVITIES) plus the session's parallel status writes.
CONNECTIONS = 64


@functools.cache
def api() -> client.ApiClient:
    """The client every activity shares."""
    return new_api()


def new_api(connections: int = CONNECTIONS) -> client.ApiClient:
    """A client keeping up to `connections` open: the client's default (cpu count x 5, 10
    here) is below the worker's concurrent activities, and every request beyond it paid a
    new TLS handshake ("Connection pool is full, discarding connection" in the log)."""
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=os.environ.get("KUBECONFIG"), client_configuration=configuration
        )
    configuration.connection_pool_maxsize = connections
    return client.ApiClient(configuration)


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

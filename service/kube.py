"""How every Caldera process builds its Kubernetes client: one rule for kubeconfig vs in-cluster.

The forwarder, the admission webhook and the `caldera` CLI all connect the same way, so an
operator who sets $KUBECONFIG (or runs in a pod) gets the same cluster from each of them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Final

from kubernetes import client, config

# How often a kubeconfig's credentials are looked at again (an expiring token is reloaded then).
REFRESH_EVERY: Final = 1.0


def kubeconfig_path(kubeconfig: str | None) -> str | None:
    """The kubeconfig file in use; None: the in-cluster account or the client's default file."""
    return kubeconfig or os.environ.get("KUBECONFIG") or None


def new_api(kubeconfig: str | None, connections: int | None = None) -> client.ApiClient:
    """KUBECONFIG (or ~/.kube/config) when given or present, else the in-cluster account.

    `connections`: how many connections the client keeps open (the client's default is cpu
    count x 5); a process with more concurrent callers than that redoes a TLS handshake for
    every request beyond it ("Connection pool is full, discarding connection").
    """
    path = kubeconfig_path(kubeconfig)
    configuration = client.Configuration()
    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, client_configuration=configuration
        )
        _refresh_at_most_every(configuration, REFRESH_EVERY)
    if connections is not None:
        configuration.connection_pool_maxsize = connections
    return client.ApiClient(configuration)


def _refresh_at_most_every(
    configuration: client.Configuration,
    seconds: float,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """A kubeconfig with a token makes the client re-apply the whole kubeconfig before every
    request (host, TLS files, proxy lookup in the environment: a few percent of a busy
    worker), in case the token expired. Once a second is soon enough for that."""
    refresh: Callable[[client.Configuration], None] | None = getattr(
        configuration, "refresh_api_key_hook", None
    )
    if refresh is None:
        return
    lock = threading.Lock()
    last = [float("-inf")]

    def throttled(c: client.Configuration) -> None:
        with lock:
            now = clock()
            if now - last[0] < seconds:
                return
            last[0] = now
        refresh(c)

    # The client's stubs type the hook as None; the client calls whatever is set.
    configuration.refresh_api_key_hook = throttled  # type: ignore[assignment]

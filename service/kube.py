"""How every Caldera process builds its Kubernetes client: one rule for kubeconfig vs in-cluster.

The forwarder, the admission webhook and the `caldera` CLI all connect the same way, so an
operator who sets $KUBECONFIG (or runs in a pod) gets the same cluster from each of them.
"""

from __future__ import annotations

import os

from kubernetes import client, config


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
    if connections is not None:
        configuration.connection_pool_maxsize = connections
    return client.ApiClient(configuration)

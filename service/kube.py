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


def new_api(kubeconfig: str | None) -> client.ApiClient:
    """KUBECONFIG (or ~/.kube/config) when given or present, else the in-cluster account.

    kubeconfig None: fall back to $KUBECONFIG, then the in-cluster service account.
    """
    path = kubeconfig_path(kubeconfig)
    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config()  # type: ignore[no-untyped-call]
        return client.ApiClient()
    loaded: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=path
    )
    return loaded

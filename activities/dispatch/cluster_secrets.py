"""The worker clusters' registrations: a labelled Secret each, and the client built from it.

A worker cluster is a Secret in Caldera's namespace (`CALDERA_CLUSTER_NAMESPACE`, default
`models.dispatch.DEFAULT_NAMESPACE`) labelled `caldera.dev/cluster: <name>` whose `kubeconfig`
key holds a kubeconfig for it (`models/dispatch.py` says why a Secret). Its client is built
once per process and kept while the Secret stays the same (uid and resourceVersion): editing
the Secret, say to rotate a token, gives the next caller a client of the new kubeconfig. A
kubeconfig that does not parse or is refused (`models.kubeconfig`) is `ClusterUnusable`, with
one sentence saying why. Apart from the probes (`activities/dispatch/clusters.py`) because the
activities that write to a worker cluster (`activities/dispatch/remote.py`) need its client, not its
probe.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import urllib3
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from activities import kube
from activities.dispatch.shared_reads import SharedReads
from models import kubeconfig
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE, DRAIN_ANNOTATION, KUBECONFIG_KEY

ENV_NAMESPACE: Final = "CALDERA_CLUSTER_NAMESPACE"
LIST_TIMEOUT: Final = 15.0  # seconds for the manager to list the clusters' Secrets
CONNECTIONS: Final = 16  # per worker cluster's client


class ClusterUnusable(Exception):
    """The cluster cannot be talked to; the message is the reason, one line."""


@dataclass(frozen=True)
class Registration:
    """One labelled Secret: which cluster it registers, and its kubeconfig (None: no key)."""

    cluster: str
    namespace: str
    secret: str
    version: str  # uid/resourceVersion: a client is rebuilt when this changes
    kubeconfig: bytes | None
    drain: str | None = None  # its caldera.dev/drain annotation as written (None: absent)

    @property
    def ref(self) -> str:
        return f"Secret {self.namespace}/{self.secret}"


def namespace() -> str:
    """Where the clusters' Secrets are: the worker's own namespace in a Helm install."""
    return os.environ.get(ENV_NAMESPACE) or DEFAULT_NAMESPACE


def registration(secret: Mapping[str, Any]) -> Registration:
    """The Secret as the apiserver lists it (JSON), read as a cluster's registration."""
    meta = secret.get("metadata") or {}
    data = secret.get("data") or {}
    encoded = data.get(KUBECONFIG_KEY)
    try:
        decoded = None if encoded is None else base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""  # the apiserver stores base64; anything else reads as an empty key
    return Registration(
        cluster=str((meta.get("labels") or {}).get(CLUSTER_LABEL, "")),
        namespace=str(meta.get("namespace", "")),
        secret=str(meta.get("name", "")),
        version=f"{meta.get('uid', '')}/{meta.get('resourceVersion', '')}",
        kubeconfig=decoded,
        drain=(meta.get("annotations") or {}).get(DRAIN_ANNOTATION),
    )


def drained(reg: Registration) -> bool:
    """The Secret drains its cluster; a value other than true or false is `ClusterUnusable`
    (a typo must not send jobs to a cluster its owner meant to drain)."""
    if reg.drain is None or reg.drain.strip().lower() == "false":
        return False
    if reg.drain.strip().lower() == "true":
        return True
    raise ClusterUnusable(
        f"{reg.ref}: annotation {DRAIN_ANNOTATION} must be true or false, not {reg.drain!r}"
    )


def registrations(
    manager: client.ApiClient | None = None, where: str | None = None, cluster: str | None = None
) -> list[Registration]:
    """The labelled Secrets (of one cluster, or all), by one list call on the manager; its
    failures (the manager unreachable, no RBAC to list Secrets there) are raised."""
    selector = f"{CLUSTER_LABEL}={cluster}" if cluster else CLUSTER_LABEL
    core = client.CoreV1Api(manager or kube.api())
    response: Any = core.list_namespaced_secret(  # raw: _preload_content=False
        where or namespace(),
        label_selector=selector,
        _preload_content=False,
        _request_timeout=LIST_TIMEOUT,
    )
    listed = json.loads(response.data)
    secrets = [registration(s) for s in listed.get("items") or []]
    return sorted((r for r in secrets if r.cluster), key=lambda r: (r.cluster, r.secret))


def list_clusters(manager: client.ApiClient | None = None, where: str | None = None) -> list[str]:
    """The names of every registered cluster (one list call)."""
    return sorted({r.cluster for r in registrations(manager, where)})


def duplicates(found: Sequence[Registration]) -> str:
    """'' for one Secret; the reason a cluster named by several Secrets is not used."""
    if len(found) < 2:
        return ""
    names = ", ".join(r.secret for r in found)
    return f"registered by {len(found)} Secrets ({names}); keep one"


@dataclass(frozen=True)
class _Built:
    version: str
    api: client.ApiClient
    server: str


_clients: dict[str, _Built] = {}
_building = threading.Lock()
# A cluster's Secrets as listed for the calls to it: a burst of calls (six per dispatched job)
# lists them once; a Secret rotated or removed counts from the next list, within this age.
REGISTRY_SECONDS: Final = 5.0
_registered: SharedReads[str, list[Registration]] = SharedReads(REGISTRY_SECONDS)


def _retries() -> urllib3.Retry:
    """One more try on a dropped connection (a pooled one the server closed), none on status."""
    return urllib3.Retry(total=1, connect=1, read=1, status=0, redirect=0, backoff_factor=0)


def build(reg: Registration) -> tuple[client.ApiClient, str]:
    """A client for the registration's kubeconfig, and its server; ClusterUnusable if none."""
    if reg.kubeconfig is None:
        raise ClusterUnusable(f"{reg.ref} has no `{KUBECONFIG_KEY}` key")
    if not reg.kubeconfig.strip():
        raise ClusterUnusable(f"{reg.ref}: `{KUBECONFIG_KEY}` is empty")
    try:
        parsed = kubeconfig.parse(reg.kubeconfig)
    except kubeconfig.KubeconfigError as e:
        raise ClusterUnusable(f"{reg.ref}: {e}") from None
    configuration = client.Configuration()
    try:
        config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
            parsed.document,
            context=parsed.context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, ValueError, TypeError, OSError) as e:
        raise ClusterUnusable(f"{reg.ref}: kubeconfig not loaded: {first_line(e)}") from None
    configuration.retries = _retries()
    configuration.connection_pool_maxsize = CONNECTIONS
    return client.ApiClient(configuration), parsed.server


def client_for(reg: Registration) -> tuple[client.ApiClient, str]:
    """The process's client for the cluster (and its server), rebuilt when the Secret changed."""
    with _building:
        built = _clients.get(reg.cluster)
        if built is not None and built.version == reg.version:
            return built.api, built.server
    api, server = build(reg)  # outside the lock: loading writes the certificates' temp files
    with _building:
        _clients[reg.cluster] = _Built(reg.version, api, server)
    return api, server


def api_for(cluster: str, manager: client.ApiClient | None = None) -> client.ApiClient:
    """The client for a registered cluster, for the activities that write there (its Secrets
    listed at most once per REGISTRY_SECONDS); ClusterUnusable (with the reason) when it has no
    single usable Secret or the Secrets cannot be listed. The manager not answering is raised
    as the client raises it (urllib3), for the activity's retries."""
    try:
        found = secrets_of(cluster, manager)
    except client.ApiException as e:
        raise ClusterUnusable(registry_unreadable(e)) from None
    if not found:
        raise ClusterUnusable(not_registered(cluster))
    if why := duplicates(found):
        raise ClusterUnusable(why)
    return client_for(found[0])[0]


def secrets_of(cluster: str, manager: client.ApiClient | None = None) -> list[Registration]:
    """The cluster's Secrets: listed on `manager` when given, else the process's list of at
    most REGISTRY_SECONDS ago; the list call's failures are raised."""
    if manager is not None:
        return registrations(manager, cluster=cluster)
    return _registered.get(cluster, lambda: registrations(cluster=cluster))


def is_drained(cluster: str) -> bool:
    """The cluster's one Secret drains it (the process's list of at most REGISTRY_SECONDS
    ago); a cluster with no usable Secret, or one that cannot be listed, is not drained here:
    the calls to it say why."""
    try:
        found = secrets_of(cluster)
        return len(found) == 1 and drained(found[0])
    except (ClusterUnusable, client.ApiException, urllib3.exceptions.HTTPError, OSError):
        return False


def first_line(e: BaseException) -> str:
    """An error's first line, for a one-sentence reason (its type when it says nothing)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def not_registered(cluster: str) -> str:
    """Why a cluster with no Secret is not usable."""
    return f"no Secret labelled {CLUSTER_LABEL}={cluster} in {namespace()}"


def registry_unreadable(e: client.ApiException) -> str:
    """Why no cluster is usable when the manager refuses to list the Secrets."""
    return f"cannot list the cluster Secrets in {namespace()}: {e.status} {e.reason}"

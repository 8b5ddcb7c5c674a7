"""The worker clusters registered on the manager: a client for each, and a probe of each.

A worker cluster is a Secret in Caldera's namespace (`CALDERA_CLUSTER_NAMESPACE`, default
`models.dispatch.DEFAULT_NAMESPACE`) labelled `caldera.dev/cluster: <name>` whose `kubeconfig`
key holds a kubeconfig for it (`models/dispatch.py` says why a Secret). Its client is built
once per process and kept while the Secret stays the same (uid and resourceVersion): editing
the Secret, say to rotate a token, gives the next caller a client of the new kubeconfig.

`probe` asks a cluster what the dispatcher and `caldera cluster list` need: whether it answers
(a short-timeout GET /version), its nodes, and its capacity (`scheduling.api.cluster_capacity`);
`read` is the same read with what the pods hold by queue (`scheduling.api.queue_usage`) and the
client, for the dispatcher's probe of a job's queue there (`activities.probes`).
A bad cluster never raises to the caller: no Secret, a Secret without `kubeconfig`, a
kubeconfig that does not parse or is refused (`models.kubeconfig`), an apiserver that does not
answer or refuses the credentials, each becomes one sentence in `ClusterStatus.error`.

`ProbeLoop` runs in the worker and publishes the probes as `caldera_cluster_*` gauges
(`service.metrics.CLUSTERS`). With no cluster registered it costs one list of labelled Secrets
in one namespace every `PROBE_SECONDS`, and serves no series.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import urllib3
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException
from temporalio import activity

from activities import kube
from activities.shared_reads import SharedReads
from models import kubeconfig
from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE, KUBECONFIG_KEY, ClusterStatus
from models.quantity import parse_quantity
from scheduling.api import queue_usage
from scheduling.api.cluster_capacity import capacity
from service import metrics

logger = logging.getLogger(__name__)

ENV_NAMESPACE: Final = "CALDERA_CLUSTER_NAMESPACE"
PROBE_TIMEOUT: Final = 3.0  # seconds to connect and to answer GET /version
READ_TIMEOUT: Final = 15.0  # seconds for one page of nodes or pods
PAGE_SIZE: Final = 500
PROBE_SECONDS: Final = 30.0  # the worker's probe loop: one round this often
MAX_PARALLEL: Final = 8  # clusters probed at once
CONNECTIONS: Final = 16  # per worker cluster's client
UNAUTHORIZED: Final = 401
FORBIDDEN: Final = 403
# Pods that hold nothing are not listed at all (the apiserver filters them).
UNFINISHED: Final = "status.phase!=Succeeded,status.phase!=Failed"


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
        _request_timeout=READ_TIMEOUT,
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


# -- clients -------------------------------------------------------------------------------------


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
        raise ClusterUnusable(f"{reg.ref}: kubeconfig not loaded: {_first_line(e)}") from None
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
        found = (
            registrations(manager, cluster=cluster)
            if manager is not None
            else _registered.get(cluster, lambda: registrations(cluster=cluster))
        )
    except client.ApiException as e:
        raise ClusterUnusable(_registry_unreadable(e)) from None
    if not found:
        raise ClusterUnusable(_not_registered(cluster))
    if why := duplicates(found):
        raise ClusterUnusable(why)
    return client_for(found[0])[0]


# -- probing ------------------------------------------------------------------------------------


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _not_registered(cluster: str) -> str:
    return f"no Secret labelled {CLUSTER_LABEL}={cluster} in {namespace()}"


def _registry_unreadable(e: client.ApiException) -> str:
    return f"cannot list the cluster Secrets in {namespace()}: {e.status} {e.reason}"


def unreachable(server: str, e: BaseException) -> str:
    """Why a connection failed, in the words a user looks for (not urllib3's wrappers)."""
    text = str(getattr(e, "reason", None) or e)
    if "CERTIFICATE_VERIFY_FAILED" in text or "doesn't match" in text:
        why = "TLS: its certificate does not match the kubeconfig's certificate-authority-data"
    elif "Connection refused" in text:
        why = "connection refused"
    elif "timed out" in text or "timeout" in text.lower():
        why = f"no answer within {PROBE_TIMEOUT:g}s"
    elif "Name or service not known" in text or "name resolution" in text:
        why = "host not found"
    else:
        why = _first_line(e)
    return f"unreachable: {server}: {why}"


def refused(server: str, e: client.ApiException, what: str) -> str:
    """An apiserver's refusal of the probe, with what the probe asked."""
    if e.status == UNAUTHORIZED:
        return f"unauthorised: {server} refused the kubeconfig's credentials (401)"
    if e.status == FORBIDDEN:
        return f"forbidden: the kubeconfig's user may not {what} on {server} (403)"
    return f"{server} answered {e.status} {e.reason} to {what}"


def _listed(call: Callable[..., Any], **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Every object of a list call, page by page, as JSON."""
    token: str | None = None
    while True:
        page_args: dict[str, Any] = {"limit": PAGE_SIZE, **kwargs}
        if token:
            page_args["_continue"] = token
        response = call(
            **page_args,
            _preload_content=False,
            _request_timeout=(PROBE_TIMEOUT, READ_TIMEOUT),
        )
        page = json.loads(response.data)
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


@dataclass(frozen=True)
class Reading:
    """One read of a cluster: its status and, when it answered, what its pods hold by queue
    (`scheduling.api.queue_usage`) and the client that read it, to read a queue there."""

    status: ClusterStatus
    usage: Mapping[str, queue_usage.Usage] = field(default_factory=dict)
    api: client.ApiClient | None = None  # None: it did not answer
    server: str = ""


def read_api(cluster: str, api: client.ApiClient, server: str) -> Reading:
    """Ask one cluster: /version, then its nodes and the pods on them."""
    now = datetime.now(UTC)
    down = ClusterStatus(name=cluster, reachable=False, probed_at=now)
    what = "GET /version"
    try:
        client.VersionApi(api).get_code(_request_timeout=(PROBE_TIMEOUT, PROBE_TIMEOUT))
        what = "list nodes"
        nodes = list(_listed(client.CoreV1Api(api).list_node))
        what = "list pods"
        pods = list(
            _listed(client.CoreV1Api(api).list_pod_for_all_namespaces, field_selector=UNFINISHED)
        )
    except client.ApiException as e:
        return Reading(down.model_copy(update={"error": refused(server, e, what)}))
    except (urllib3.exceptions.HTTPError, OSError) as e:
        return Reading(down.model_copy(update={"error": unreachable(server, e)}))
    except ValueError as e:  # not JSON: something else listens there
        error = f"{server} is no apiserver: {_first_line(e)}"
        return Reading(down.model_copy(update={"error": error}))
    figures = capacity(nodes, pods)
    status = ClusterStatus(
        name=cluster,
        reachable=True,
        nodes=figures.nodes,
        allocatable=figures.allocatable,
        free=figures.free,
        probed_at=now,
    )
    return Reading(status, queue_usage.usage_by_queue(pods), api, server)


def probe_api(cluster: str, api: client.ApiClient, server: str) -> ClusterStatus:
    return read_api(cluster, api, server).status


def read_registered(cluster: str, found: Sequence[Registration]) -> Reading:
    """Read a cluster given its Secrets (none, one, or a mistaken several)."""
    why = duplicates(found) if found else _not_registered(cluster)
    if why:
        return _down(cluster, why)
    try:
        api, server = client_for(found[0])
    except ClusterUnusable as e:
        return _down(cluster, str(e))
    return read_api(cluster, api, server)


def probe_registered(cluster: str, found: Sequence[Registration]) -> ClusterStatus:
    return read_registered(cluster, found).status


def read(cluster: str, manager: client.ApiClient | None = None) -> Reading:
    """One cluster's reading; every failure, the manager's included, is in its `error`."""
    try:
        found = (
            registrations(manager, cluster=cluster)
            if manager is not None
            else _registered.get(cluster, lambda: registrations(cluster=cluster))
        )
    except client.ApiException as e:
        return _down(cluster, _registry_unreadable(e))
    except (urllib3.exceptions.HTTPError, OSError) as e:
        return _down(cluster, f"manager {unreachable(_host(manager), e)}")
    return read_registered(cluster, found)


def probe(cluster: str, manager: client.ApiClient | None = None) -> ClusterStatus:
    """One cluster's status; every failure, the manager's included, is in its `error`."""
    return read(cluster, manager).status


def _down(cluster: str, error: str) -> Reading:
    return Reading(
        ClusterStatus(name=cluster, reachable=False, error=error, probed_at=datetime.now(UTC))
    )


def _host(manager: client.ApiClient | None) -> str:
    return str((manager or kube.api()).configuration.host)


def by_cluster(found: Iterable[Registration]) -> dict[str, list[Registration]]:
    grouped: dict[str, list[Registration]] = {}
    for r in found:
        grouped.setdefault(r.cluster, []).append(r)
    return grouped


def probe_all(
    manager: client.ApiClient | None = None, where: str | None = None
) -> list[ClusterStatus]:
    """Every registered cluster's status, probed side by side, by name; the manager's own
    failure to list the Secrets is raised (there is no cluster to say it of)."""
    grouped = by_cluster(registrations(manager, where))
    if not grouped:
        return []
    with ThreadPoolExecutor(min(MAX_PARALLEL, len(grouped)), "cluster-probe") as pool:
        done = pool.map(lambda item: probe_registered(*item), sorted(grouped.items()))
        return list(done)


@activity.defn(name="probe_cluster")
def probe_cluster(cluster: str) -> ClusterStatus:
    """`probe` as an activity, for the workflows that choose or watch clusters."""
    return probe(cluster)


# -- the worker's probe loop ---------------------------------------------------------------------


def free_figures(status: ClusterStatus) -> dict[str, float]:
    """`caldera_cluster_free`'s values: each resource in its base unit (cores, bytes, pods)."""
    return {name: float(parse_quantity(value)) for name, value in status.free.items()}


def publish(statuses: Iterable[ClusterStatus]) -> None:
    statuses = list(statuses)
    metrics.CLUSTERS.publish(
        {s.name: s.reachable for s in statuses},
        {s.name: free_figures(s) for s in statuses if s.reachable},
    )


class ProbeLoop:
    """The worker's probe of every registered cluster, every `every` seconds, on a thread."""

    def __init__(
        self,
        every: float = PROBE_SECONDS,
        probe_round: Callable[[], list[ClusterStatus]] = probe_all,
        published: Callable[[Iterable[ClusterStatus]], None] = publish,
    ) -> None:
        self._every = every
        self._probe_round = probe_round
        self._published = published
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cluster-probes", daemon=True)
        self._failing = ""  # the last round's failure, logged once until it changes
        self._errors: dict[str, str] = {}  # each cluster's last error, logged when it changes

    def round(self) -> list[ClusterStatus]:
        """One round: probe, publish, log what changed; a failed list keeps the last series."""
        try:
            statuses = self._probe_round()
        except (client.ApiException, urllib3.exceptions.HTTPError, OSError) as e:
            reason = f"{e.status} {e.reason}" if isinstance(e, client.ApiException) else str(e)
            if reason != self._failing:
                logger.warning(
                    "cluster secrets not listed namespace=%s error=%s", namespace(), reason
                )
            self._failing = reason
            return []
        self._failing = ""
        self._published(statuses)
        errors = {s.name: s.error for s in statuses}
        for name, error in errors.items():
            if error != self._errors.get(name, ""):
                if error:
                    logger.warning("cluster not usable cluster=%s error=%s", name, error)
                else:
                    logger.info("cluster reachable cluster=%s", name)
        self._errors = errors
        return statuses

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.round()
            except Exception:  # a bug here must not end the worker's probes for good
                logger.exception("cluster probe round failed")
            self._stopped.wait(self._every)

    def start(self) -> ProbeLoop:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

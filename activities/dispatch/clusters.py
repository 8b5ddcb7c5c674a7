"""The worker clusters' probes: whether each answers, its nodes and capacity, and its gauges.

`probe` asks a cluster what the dispatcher and `caldera cluster list` need: whether it answers
(a short-timeout GET /version), its nodes, and its capacity (`controllers.dispatch.capacity`);
`read` is the same read with what the pods hold by queue (`controllers.dispatch.queue_usage`)
and the client, for the dispatcher's probe of a job's queue there (`activities.dispatch.probes`).
The cluster's Secret and client are `activities/dispatch/cluster_secrets.py`'s. A bad cluster
never raises to the caller: no Secret, a Secret without `kubeconfig`, a kubeconfig that does not
parse or is refused, an apiserver that does not answer or refuses the credentials, each becomes
one sentence in `ClusterStatus.error`.

`ProbeLoop` runs in the worker and publishes the probes as `caldera_cluster_*` gauges
(`service.worker_registry.CLUSTERS`). With no cluster registered it costs one list of labelled
Secrets in one namespace every `PROBE_SECONDS`, and serves no series.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

import urllib3
from kubernetes import client
from temporalio import activity

from activities import kube
from activities.dispatch import cluster_secrets
from activities.dispatch.cluster_secrets import Registration
from controllers.dispatch import queue_usage
from controllers.dispatch.capacity import capacity
from models.dispatch import ClusterStatus
from models.quantity import parse_quantity
from service import worker_registry

logger = logging.getLogger(__name__)

PROBE_TIMEOUT: Final = 3.0  # seconds to connect and to answer GET /version
READ_TIMEOUT: Final = 15.0  # seconds for one page of nodes or pods
PAGE_SIZE: Final = 500
PROBE_SECONDS: Final = 30.0  # the worker's probe loop: one round this often
MAX_PARALLEL: Final = 8  # clusters probed at once
UNAUTHORIZED: Final = 401
FORBIDDEN: Final = 403
# Pods that hold nothing are not listed at all (the apiserver filters them).
UNFINISHED: Final = "status.phase!=Succeeded,status.phase!=Failed"


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
        why = cluster_secrets.first_line(e)
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
    (`controllers.dispatch.queue_usage`) and the client that read it, to read a queue there."""

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
        error = f"{server} is no apiserver: {cluster_secrets.first_line(e)}"
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
    why = cluster_secrets.duplicates(found) if found else cluster_secrets.not_registered(cluster)
    if why:
        return _down(cluster, why)
    try:
        drained = cluster_secrets.drained(found[0])
        api, server = cluster_secrets.client_for(found[0])
    except cluster_secrets.ClusterUnusable as e:
        return _down(cluster, str(e))
    reading = read_api(cluster, api, server)
    if not drained:
        return reading
    return replace(reading, status=reading.status.model_copy(update={"drained": True}))


def probe_registered(cluster: str, found: Sequence[Registration]) -> ClusterStatus:
    return read_registered(cluster, found).status


def read(cluster: str, manager: client.ApiClient | None = None) -> Reading:
    """One cluster's reading; every failure, the manager's included, is in its `error`."""
    try:
        found = cluster_secrets.secrets_of(cluster, manager)
    except client.ApiException as e:
        return _down(cluster, cluster_secrets.registry_unreadable(e))
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
    grouped = by_cluster(cluster_secrets.registrations(manager, where))
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
    worker_registry.CLUSTERS.publish(
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
                    "cluster secrets not listed namespace=%s error=%s",
                    cluster_secrets.namespace(),
                    reason,
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

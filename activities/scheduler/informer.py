"""The scheduler worker's view of the cluster: an informer cache, not a relist per session.

One reflector per kind keeps a store of the objects the scheduler reads (nodes, every pod,
PVs, PVCs, storage and priority classes, CSINodes, PodGroups, queues, HyperNodes,
PodDisruptionBudgets, ResourceQuotas, NamespaceQueues, and DRA's ResourceSlices,
DeviceClasses and ResourceClaims), updated by watch events. A session copies the stores and
decides on that copy, so a session costs no apiserver reads. The copy may lag the apiserver
by a watch event: that is what the SchedulerWorkflow's assumed placements are for
(a pod just bound is assumed until the cache shows its node), as in Volcano's scheduler cache.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubernetes import client

from activities import kube
from activities.messages import Arrivals
from models import namespacequeue, scheduling, topology
from scheduling.cache import arrivals
from service import reflector

logger = logging.getLogger(__name__)

SYNC_TIMEOUT: Final = 60.0  # seconds a session waits for the first lists


def _calls(api: client.ApiClient) -> dict[str, reflector.ListCall]:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    resource = client.ResourceV1Api(api)
    custom_list = functools.partial(
        custom.list_cluster_custom_object, scheduling.GROUP, scheduling.VERSION
    )
    return {
        "nodes": core.list_node,
        "pods": core.list_pod_for_all_namespaces,
        "pvcs": core.list_persistent_volume_claim_for_all_namespaces,
        "pvs": core.list_persistent_volume,
        "classes": client.StorageV1Api(api).list_storage_class,
        "csinodes": client.StorageV1Api(api).list_csi_node,
        "priority": client.SchedulingV1Api(api).list_priority_class,
        # The pdb plugin's budgets (read whether or not the configuration runs it: cheap).
        "pdbs": client.PolicyV1Api(api).list_pod_disruption_budget_for_all_namespaces,
        # The resourcequota plugin's namespace quotas (their status; read whether or not it runs).
        "resourcequotas": core.list_resource_quota_for_all_namespaces,
        "podgroups": functools.partial(custom_list, "podgroups"),
        "queues": functools.partial(custom_list, "queues"),
        # Tenants' queues, every namespace (a cluster without the CRD lists none).
        "namespacequeues": reflector.optional(
            "namespacequeues", functools.partial(custom_list, namespacequeue.PLURAL)
        ),
        "hypernodes": functools.partial(
            custom.list_cluster_custom_object, topology.GROUP, topology.VERSION, topology.PLURAL
        ),
        # Dynamic Resource Allocation: the devices, their classes, and the claims for them.
        "slices": reflector.optional("slices", resource.list_resource_slice),
        "deviceclasses": reflector.optional("deviceclasses", resource.list_device_class),
        "resourceclaims": reflector.optional(
            "resourceclaims", resource.list_resource_claim_for_all_namespaces
        ),
    }


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class Store:
    """The current objects of one kind, by namespace/name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[str, Any]] = {}
        self.synced = threading.Event()

    def replace(self, objects: list[reflector.Obj]) -> None:
        with self._lock:
            self._objects = {_key(o): dict(o) for o in objects}
        self.synced.set()

    def apply(self, type_: reflector.WatchType, obj: reflector.Obj) -> dict[str, Any] | None:
        """Apply one change; the object it replaced (None: none)."""
        with self._lock:
            if type_ == "DELETED":
                return self._objects.pop(_key(obj), None)
            before = self._objects.get(_key(obj))
            self._objects[_key(obj)] = dict(obj)
            return before

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._objects

    def items(self) -> list[dict[str, Any]]:
        """A copy of the list; the objects themselves are replaced, never mutated, by watches."""
        with self._lock:
            return list(self._objects.values())


class ClusterCache:
    """Stores for every kind a session reads, each kept by its own reflector thread, and the
    count of arrivals (`scheduling.cache.arrivals`) per scheduler, which a waiting session
    waits on."""

    def __init__(self, calls: Mapping[str, reflector.ListCall]) -> None:
        self._stores = {kind: Store() for kind in calls}
        self._reflectors = [
            reflector.Reflector(
                f"scheduler-{kind}", call, self._stores[kind].replace, self._applier(kind)
            )
            for kind, call in calls.items()
        ]
        # Counts are this process's own: a mark from another worker (or an earlier process)
        # carries another token and is never waited on.
        self._token = uuid.uuid4().hex
        self._arrived: dict[str, int] = {}
        self._arrival = threading.Condition()

    def _applier(self, kind: str) -> Callable[[reflector.WatchType, reflector.Obj], None]:
        store = self._stores[kind]

        def apply(type_: reflector.WatchType, obj: reflector.Obj) -> None:
            before = store.apply(type_, obj)
            name = arrivals.woken(kind, type_, before, obj)
            if name is not None:
                with self._arrival:
                    self._arrived[name] = self._arrived.get(name, 0) + 1
                    self._arrival.notify_all()

        return apply

    def arrivals(self, scheduler: str) -> Arrivals:
        """Where the count of `scheduler`'s arrivals stands now."""
        with self._arrival:
            return Arrivals(token=self._token, count=self._arrived.get(scheduler, 0))

    def wait_for_work(
        self, scheduler: str, since: Arrivals | None, seconds: float, alive: Callable[[], None]
    ) -> bool:
        """Wait up to `seconds` for an arrival after `since`, calling `alive` about once a
        second; True when work arrived, False when the time ran out. A mark of another process
        (the last session ran on another worker) says nothing of this one's counts: arrivals
        from now on count then, as a session on a timer would have waited its period."""
        deadline = time.monotonic() + seconds
        with self._arrival:
            seen = self._arrived.get(scheduler, 0)
            if since is not None and since.token == self._token:
                seen = since.count
            while self._arrived.get(scheduler, 0) <= seen:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrival.wait(min(left, 1.0))
                alive()
        return True

    def start(self) -> None:
        for r in self._reflectors:
            r.start()

    def stop(self) -> None:
        for r in self._reflectors:
            r.stop()

    def wait_synced(self, timeout: float) -> list[str]:
        """Wait for every first list; the kinds still missing after `timeout`."""
        for store in self._stores.values():
            store.synced.wait(timeout)
        return [kind for kind, store in self._stores.items() if not store.synced.is_set()]

    def read(self) -> dict[str, list[dict[str, Any]]]:
        return {kind: store.items() for kind, store in self._stores.items()}

    def has(self, kind: str, key: str) -> bool | None:
        """Whether the store holds `key` ("<ns>/<name>", "/<name>" cluster-wide); None: not
        listed yet, so it cannot say."""
        store = self._stores[kind]
        return key in store if store.synced.is_set() else None


_started: list[ClusterCache] = []  # the process's one cache, once the first session made it
_starting = threading.Lock()


def cluster() -> ClusterCache:
    """The worker process's cache, started on the first session (its own client: watches hold
    connections that the activities' shared pool must not lose)."""
    with _starting:
        if not _started:
            cache = ClusterCache(_calls(kube.new_api()))
            cache.start()
            _started.append(cache)
            logger.info("cluster cache started")
        return _started[0]


def node_known(name: str) -> bool | None:
    """Whether the cache holds node `name`; None where no cache runs or it has not listed
    nodes yet (the caller asks the apiserver). Never starts a cache."""
    return _started[0].has("nodes", f"/{name}") if _started else None

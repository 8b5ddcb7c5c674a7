"""The scheduler worker's view of the cluster: an informer cache, not a relist per session.

One reflector per kind keeps a store of the objects the scheduler reads (nodes, every pod,
PVs, PVCs, storage and priority classes, CSINodes, PodGroups, queues, HyperNodes), updated by
watch events. A session copies the stores and decides on that copy, so a session costs no
apiserver reads. The copy may lag the apiserver by a watch event: that is what the
SchedulerWorkflow's assumed placements are for (a pod just bound is assumed until the cache
shows its node), as in Volcano's scheduler cache.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Mapping
from typing import Any, Final

from kubernetes import client

from activities import kube
from models import scheduling, topology
from service import reflector

logger = logging.getLogger(__name__)

SYNC_TIMEOUT: Final = 60.0  # seconds a session waits for the first lists


def _calls(api: client.ApiClient) -> dict[str, reflector.ListCall]:
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
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
        "podgroups": functools.partial(custom_list, "podgroups"),
        "queues": functools.partial(custom_list, "queues"),
        "hypernodes": functools.partial(
            custom.list_cluster_custom_object, topology.GROUP, topology.VERSION, topology.PLURAL
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

    def apply(self, type_: reflector.WatchType, obj: reflector.Obj) -> None:
        with self._lock:
            if type_ == "DELETED":
                self._objects.pop(_key(obj), None)
            else:
                self._objects[_key(obj)] = dict(obj)

    def items(self) -> list[dict[str, Any]]:
        """A copy of the list; the objects themselves are replaced, never mutated, by watches."""
        with self._lock:
            return list(self._objects.values())


class ClusterCache:
    """Stores for every kind a session reads, each kept by its own reflector thread."""

    def __init__(self, calls: Mapping[str, reflector.ListCall]) -> None:
        self._stores = {kind: Store() for kind in calls}
        self._reflectors = [
            reflector.Reflector(
                f"scheduler-{kind}", call, self._stores[kind].replace, self._stores[kind].apply
            )
            for kind, call in calls.items()
        ]

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


@functools.cache
def cluster() -> ClusterCache:
    """The worker process's cache, started on the first session (its own client: watches hold
    connections that the activities' shared pool must not lose)."""
    cache = ClusterCache(_calls(kube.new_api()))
    cache.start()
    logger.info("cluster cache started")
    return cache

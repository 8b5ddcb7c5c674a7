"""Objects on the apiserver, as the CLI reads and writes them: Volcano's Jobs, Queues, Commands,
JobFlows and JobTemplates, and (read only) the pods of Volcano Jobs.

The apiserver is the source of truth for what exists and its status (the workflows write it);
every call goes through `Connections.kube_call`, so a missing object reads
"job ns/a not found" and an unreachable apiserver names its address and kubeconfig.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubernetes import client

from cli.clients import KUBE_TIMEOUT, CliError, Connections
from models import bus, jobflow, scheduling, vcjob

Obj = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str
    noun: str  # how messages name one ("job ns/a", "queue q")
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def ref(self, name: str, namespace: str) -> str:
        return f"{self.noun} {namespace}/{name}" if self.namespaced else f"{self.noun} {name}"


JOBS: Final = Kind(vcjob.GROUP, vcjob.VERSION, "jobs", "job", namespaced=True)
QUEUES: Final = Kind(scheduling.GROUP, scheduling.VERSION, "queues", "queue", namespaced=False)
COMMANDS: Final = Kind(bus.GROUP, bus.VERSION, "commands", "command", namespaced=True)
JOBFLOWS: Final = Kind(jobflow.GROUP, jobflow.VERSION, "jobflows", "jobflow", namespaced=True)
JOBTEMPLATES: Final = Kind(
    jobflow.GROUP, jobflow.VERSION, "jobtemplates", "jobtemplate", namespaced=True
)
JSON_PATCH: Final = "application/json-patch+json"


class Resources:
    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    def get(self, kind: Kind, name: str, namespace: str = "") -> Obj:
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"read {ref}", missing=f"{ref} not found"):
            got = self._call(_GET, kind, _scope(kind, namespace), name)
        return _obj(got, ref)

    def find(self, kind: Kind, name: str, namespace: str = "") -> Obj | None:
        """As `get`; None: there is no such object."""
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"read {ref}"):
            try:
                got = self._call(_GET, kind, _scope(kind, namespace), name)
            except client.ApiException as e:
                if e.status == 404:
                    return None
                raise
        return _obj(got, ref)

    def list(self, kind: Kind, namespace: str = "") -> list[Obj]:
        """Every object of `kind`; namespace "": in all namespaces (or cluster-scoped)."""
        where = f"in namespace {namespace}" if namespace else "in all namespaces"
        with self._conn.kube_call(f"list {kind.plural} {where}"):
            listed = self._call(_LIST, kind, namespace if kind.namespaced and namespace else None)
        items = _obj(listed, f"the {kind.plural} list").get("items") or []
        return [item for item in items if isinstance(item, dict)]

    def create(self, kind: Kind, body: Obj, namespace: str = "") -> Obj:
        meta = body.get("metadata") or {}
        name = meta.get("name") or f"{meta.get('generateName', '')}…"
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"create {ref}"):
            created = self._call(_CREATE, kind, _scope(kind, namespace), body)
        return _obj(created, ref)

    def delete(self, kind: Kind, name: str, namespace: str = "") -> None:
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"delete {ref}", missing=f"{ref} not found"):
            self._call(_DELETE, kind, _scope(kind, namespace), name)

    def patch(self, kind: Kind, name: str, operations: Sequence[Obj], namespace: str = "") -> Obj:
        """A JSON Patch (RFC 6902): an `add` sets a field whole, replacing what was there."""
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"update {ref}", missing=f"{ref} not found"):
            patched = self._call(
                _PATCH, kind, _scope(kind, namespace), name, operations, _content_type=JSON_PATCH
            )
        return _obj(patched, ref)

    def pods(self, namespace: str = "", selector: str | None = None) -> Sequence[Obj]:
        """Pods as the apiserver writes them (camelCase); namespace "": in all namespaces."""
        api = client.CoreV1Api(self._conn.api)
        where = f"in namespace {namespace}" if namespace else "in all namespaces"
        with self._conn.kube_call(f"list pods {where}"):
            if namespace:
                listed = api.list_namespaced_pod(
                    namespace, label_selector=selector, _request_timeout=KUBE_TIMEOUT
                )
            else:
                listed = api.list_pod_for_all_namespaces(
                    label_selector=selector, _request_timeout=KUBE_TIMEOUT
                )
        as_sent = self._conn.api.sanitize_for_serialization(listed)  # type: ignore[no-untyped-call]
        plain = _obj(as_sent, "the pods list")
        return [item for item in plain.get("items") or [] if isinstance(item, dict)]

    def _call(
        self, calls: _Scoped, kind: Kind, namespace: str | None, *args: object, **options: object
    ) -> object:
        """The call in `namespace`, or cluster-wide when it is None."""
        api = client.CustomObjectsApi(self._conn.api)
        in_namespace, cluster_wide = calls
        group, version, plural = kind.group, kind.version, kind.plural
        options["_request_timeout"] = KUBE_TIMEOUT
        if namespace is not None:
            return in_namespace(api, group, version, namespace, plural, *args, **options)
        return cluster_wide(api, group, version, plural, *args, **options)


# The generated client's two forms of each call: in a namespace, and cluster-wide.
_Scoped = tuple[Callable[..., object], Callable[..., object]]
_API = client.CustomObjectsApi
_GET: Final = (_API.get_namespaced_custom_object, _API.get_cluster_custom_object)
_LIST: Final = (_API.list_namespaced_custom_object, _API.list_cluster_custom_object)
_CREATE: Final = (_API.create_namespaced_custom_object, _API.create_cluster_custom_object)
_DELETE: Final = (_API.delete_namespaced_custom_object, _API.delete_cluster_custom_object)
_PATCH: Final = (_API.patch_namespaced_custom_object, _API.patch_cluster_custom_object)


def _scope(kind: Kind, namespace: str) -> str | None:
    """Where a call on one object goes: its namespace, or None for a cluster-scoped kind."""
    return namespace if kind.namespaced else None


def _obj(value: object, what: str) -> Obj:
    if not isinstance(value, dict):
        raise CliError(f"{what}: the apiserver did not answer with an object")
    return value

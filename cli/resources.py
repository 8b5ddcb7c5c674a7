"""Volcano objects on the apiserver, as the CLI reads and writes them: Jobs, Queues, Commands.

The apiserver is the source of truth for what exists and its status (the workflows write it);
every call goes through `Connections.kube_call`, so a missing object reads
"job ns/a not found" and an unreachable apiserver names its address and kubeconfig.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from kubernetes import client

from cli.clients import KUBE_TIMEOUT, CliError, Connections
from models import bus, scheduling, vcjob

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


class Resources:
    def __init__(self, conn: Connections) -> None:
        self._conn = conn

    @property
    def _custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self._conn.api)

    def get(self, kind: Kind, name: str, namespace: str = "") -> Obj:
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"read {ref}", missing=f"{ref} not found"):
            if kind.namespaced:
                got = self._custom.get_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    namespace,
                    kind.plural,
                    name,
                    _request_timeout=KUBE_TIMEOUT,
                )
            else:
                got = self._custom.get_cluster_custom_object(
                    kind.group, kind.version, kind.plural, name, _request_timeout=KUBE_TIMEOUT
                )
        return _obj(got, ref)

    def list(self, kind: Kind, namespace: str = "") -> list[Obj]:
        """Every object of `kind`; namespace "": in all namespaces (or cluster-scoped)."""
        where = f"in namespace {namespace}" if namespace else "in all namespaces"
        with self._conn.kube_call(f"list {kind.plural} {where}"):
            if kind.namespaced and namespace:
                listed = self._custom.list_namespaced_custom_object(
                    kind.group, kind.version, namespace, kind.plural, _request_timeout=KUBE_TIMEOUT
                )
            else:
                listed = self._custom.list_cluster_custom_object(
                    kind.group, kind.version, kind.plural, _request_timeout=KUBE_TIMEOUT
                )
        items = _obj(listed, f"the {kind.plural} list").get("items") or []
        return [item for item in items if isinstance(item, dict)]

    def create(self, kind: Kind, body: Obj, namespace: str = "") -> Obj:
        meta = body.get("metadata") or {}
        name = meta.get("name") or f"{meta.get('generateName', '')}…"
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"create {ref}"):
            if kind.namespaced:
                created = self._custom.create_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    namespace,
                    kind.plural,
                    body,
                    _request_timeout=KUBE_TIMEOUT,
                )
            else:
                created = self._custom.create_cluster_custom_object(
                    kind.group, kind.version, kind.plural, body, _request_timeout=KUBE_TIMEOUT
                )
        return _obj(created, ref)

    def delete(self, kind: Kind, name: str, namespace: str = "") -> None:
        ref = kind.ref(name, namespace)
        with self._conn.kube_call(f"delete {ref}", missing=f"{ref} not found"):
            if kind.namespaced:
                self._custom.delete_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    namespace,
                    kind.plural,
                    name,
                    _request_timeout=KUBE_TIMEOUT,
                )
            else:
                self._custom.delete_cluster_custom_object(
                    kind.group, kind.version, kind.plural, name, _request_timeout=KUBE_TIMEOUT
                )


def _obj(value: object, what: str) -> Obj:
    if not isinstance(value, dict):
        raise CliError(f"{what}: the apiserver did not answer with an object")
    return value

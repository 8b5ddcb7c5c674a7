"""deploy/base grants each process exactly the Kubernetes access its code uses, and no more.

The table is tests/access.py; these checks read the manifests offline. tests/e2e/test_deploy.py
asks a real apiserver the same questions.
"""

from __future__ import annotations

import pytest

from tests import access

PROCESSES = sorted(access.NEEDS)
DOCS = access.manifests()


@pytest.mark.parametrize("process", PROCESSES)
def test_every_client_call_in_the_code_is_in_the_table(process: str) -> None:
    calls = access.client_calls(access.ENTRY[process])
    missing = sorted(calls - set(access.NEEDS[process]))
    assert not missing, f"add to tests/access.py NEEDS (and deploy/base RBAC): {missing}"
    stale = sorted(set(access.NEEDS[process]) - calls)
    assert not stale, f"no longer called, drop from tests/access.py and the RBAC: {stale}"


@pytest.mark.parametrize("process", PROCESSES)
def test_the_rbac_grants_exactly_what_the_table_needs(process: str) -> None:
    granted = access.granted(DOCS, process)
    needed = set(access.needed(process))
    assert sorted(map(str, needed - granted)) == [], "needed but not granted"
    assert sorted(map(str, granted - needed)) == [], "granted but no code needs it"


@pytest.mark.parametrize(
    ("process", "permission"),
    [(proc, p) for proc in PROCESSES for p in access.needed(proc)],
    ids=str,
)
def test_needed_access_is_allowed(process: str, permission: access.Permission) -> None:
    assert access.allows(DOCS, process, permission)


@pytest.mark.parametrize(
    ("process", "permission"),
    [(proc, p) for proc in PROCESSES for p in access.DENIED[proc]],
    ids=str,
)
def test_least_privilege_refusals(process: str, permission: access.Permission) -> None:
    assert not access.allows(DOCS, process, permission)


def test_the_forwarder_cannot_create_pods_nor_read_secrets() -> None:
    """Least privilege, spelled out: the forwarder only lists and watches pods and never sees a
    Secret; the worker reaches Secrets only by name (no list, no watch), but for listing the
    worker clusters' Secrets in Caldera's own namespace."""
    forwarder = access.granted(DOCS, "caldera-forwarder")
    assert not {p for p in forwarder if p.resource.startswith("pods") and p.verb != "list"} - {
        access.Permission("watch", "pods")
    }
    assert not {p for p in forwarder if p.resource == "secrets"}
    worker_secrets = {
        (p.verb, p.namespace)
        for p in access.granted(DOCS, "caldera-worker")
        if p.resource == "secrets"
    }
    anywhere = {(verb, None) for verb in ("get", "create", "update", "delete")}
    assert worker_secrets == anywhere | {("list", access.NAMESPACE)}


def test_each_deployment_runs_under_its_own_account() -> None:
    accounts = {name for name, _ in access.containers(DOCS)}
    assert accounts == {"caldera-worker", "caldera-forwarder", "caldera-webhook"}
    declared = {d["metadata"]["name"] for d in DOCS if d["kind"] == "ServiceAccount"}
    assert accounts <= declared


@pytest.mark.parametrize("directory", ["crds", "admission", "queues", "webhook"])
def test_included_directories_list_every_manifest(directory: str) -> None:
    """deploy/base includes these through their `Kustomization`; a new file must be listed."""
    path = access.DEPLOY / directory
    listed = set(access._kustomization(path)["resources"])
    assert listed == {p.name for p in path.glob("*.yaml")}


def test_tenants_manage_namespace_queues_through_kubernetes_roles_and_nothing_else() -> None:
    """Volcano's NamespaceQueue design: a namespace's admin or editor manages its
    NamespaceQueues (not their status, not the cluster Queues); its viewer reads them. The
    roles are aggregated, never bound by Caldera."""
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    roles = {
        d["metadata"]["name"]: d
        for d in DOCS
        if d["kind"] == "ClusterRole"
        and any(k.startswith(aggregate) for k in d["metadata"].get("labels") or {})
    }
    assert set(roles) == {"caldera-namespacequeue-editor", "caldera-namespacequeue-viewer"}
    into = {n: sorted((r["metadata"]["labels"] or {}).items()) for n, r in roles.items()}
    assert into == {
        "caldera-namespacequeue-editor": [
            (f"{aggregate}admin", "true"),
            (f"{aggregate}edit", "true"),
        ],
        "caldera-namespacequeue-viewer": [(f"{aggregate}view", "true")],
    }
    rules = {n: r["rules"] for n, r in roles.items()}
    assert rules == {
        "caldera-namespacequeue-editor": [
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["namespacequeues"],
                "verbs": ["create", "update", "patch", "delete", "get", "list", "watch"],
            }
        ],
        "caldera-namespacequeue-viewer": [
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "resources": ["namespacequeues"],
                "verbs": ["get", "list", "watch"],
            }
        ],
    }
    bound = {
        d["roleRef"]["name"] for d in DOCS if d["kind"] in ("RoleBinding", "ClusterRoleBinding")
    }
    assert not bound & set(roles)

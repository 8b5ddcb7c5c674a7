"""`caldera docs rbac`: the reference page of who may do what, rendered from deploy/base.

docs/reference/rbac.md is this module's output, never edited by hand: the RBAC a reader is told
about is the RBAC `kubectl apply -k deploy/base` (and the Helm chart, which renders the same
objects) installs. `tests/unit/cli/test_reference.py` fails when the page on disk differs from
`rbac_page()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

BASE: Final = Path(__file__).resolve().parents[1] / "deploy" / "base"
PAGE: Final = Path(__file__).resolve().parents[1] / "docs" / "reference" / "rbac.md"
COMMAND: Final = "caldera docs rbac > docs/reference/rbac.md"

# Verbs in the order a reader expects them (reads, then writes); any other verb sorts after.
_VERBS: Final = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")

_INTRO: Final = f"""\
# RBAC

<!-- Generated from deploy/base/rbac-*.yaml by `{COMMAND}`; do not edit by hand. -->

Each process runs under its own ServiceAccount in `caldera-system` with only the access its code
uses. RBAC only ever grants: what the table of an account does not list, that account may not
do. "cluster-wide" is through a ClusterRoleBinding (every namespace, and cluster-scoped objects
such as nodes); "`caldera-system`" through a RoleBinding in that namespace alone.

- `tests/access.py` maps every Kubernetes client call of each process to the permission it
  needs, and lists what each must be refused (`DENIED`: the worker cannot list or watch
  Secrets outside `caldera-system`, the forwarder cannot create pods or read Secrets, ...);
  `tests/unit/deploy/test_rbac.py` fails when the code, that table and `deploy/base/rbac-*.yaml`
  differ.
- `tests/e2e/test_deploy.py` asks a real apiserver the same questions (SubjectAccessReviews) and
  runs the worker and the forwarder under their own tokens.
- Secrets come through the ClusterRole `caldera-worker-ssh-secrets`, bound apart: only the ssh
  job plugin uses them (one key pair per job), so without it delete the ClusterRoleBinding
  `caldera-worker-ssh-secrets`, or bind the role with RoleBindings in chosen namespaces.
  The Role `caldera-worker-clusters` lets the worker list the Secrets of `caldera-system`
  alone, where the worker clusters are registered
  ([Many clusters, one queue](../user-guide/clusters.md)).
- The Helm chart renders the same objects (`tests/unit/deploy/test_helm.py`).
- This page is generated from those files:

      {COMMAND}

  and `tests/unit/cli/test_reference.py` fails when it is stale.
"""


@dataclass(frozen=True, order=True)
class Grant:
    """One row: what `account` may do to `resource` of `group`, and through which role."""

    account: str
    group: str  # "" is the core group
    resource: str  # "pods" or a subresource, "pods/binding"
    names: tuple[str, ...]  # () is any object
    role: str  # "ClusterRole caldera-worker"
    scope: str  # "" is cluster-wide (a ClusterRoleBinding), else the RoleBinding's namespace
    verbs: tuple[str, ...]


def load(base: Path = BASE) -> list[dict[str, Any]]:
    """Every object of deploy/base/rbac-*.yaml, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted(base.glob("rbac-*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _verb_order(verb: str) -> tuple[int, str]:
    return (_VERBS.index(verb), "") if verb in _VERBS else (len(_VERBS), verb)


def grants(docs: Iterable[dict[str, Any]]) -> list[Grant]:
    """The rules of every role, per account bound to it; verbs of one resource merged."""
    docs = list(docs)
    roles = {
        (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d.get("rules", [])
        for d in docs
        if d["kind"] in ("Role", "ClusterRole")
    }
    merged: dict[tuple[str, str, str, tuple[str, ...], str, str], set[str]] = {}
    for binding in docs:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        scope = binding["metadata"].get("namespace", "")
        ref = binding["roleRef"]
        role_ns = scope if ref["kind"] == "Role" else ""
        rules = roles[(ref["kind"], role_ns, ref["name"])]
        for subject in binding["subjects"]:
            if subject["kind"] != "ServiceAccount":
                continue
            for rule in rules:
                for group in rule.get("apiGroups", [""]):
                    for resource in rule["resources"]:
                        names = tuple(rule.get("resourceNames", ()))
                        role = f"{ref['kind']} {ref['name']}"
                        key = (subject["name"], group, resource, names, role, scope)
                        merged.setdefault(key, set()).update(rule["verbs"])
    return sorted(Grant(*key, tuple(sorted(v, key=_verb_order))) for key, v in merged.items())


def _row(g: Grant) -> str:
    group = f"`{g.group}`" if g.group else "core"
    names = ", ".join(f"`{n}`" for n in g.names) or "any"
    kind, name = g.role.split(" ", 1)
    scope = f"`{g.scope}`" if g.scope else "cluster-wide"
    return (
        f"| {group} | `{g.resource}` | {', '.join(g.verbs)} | {names} | {kind} `{name}` | {scope} |"
    )


def _tables(all_grants: list[Grant]) -> Iterator[str]:
    accounts = sorted({g.account for g in all_grants}, key=_account_order)
    for account in accounts:
        yield f"\n## `{account}`\n"
        yield "| API group | resource | verbs | names | through | where |"
        yield "|---|---|---|---|---|---|"
        yield from (_row(g) for g in all_grants if g.account == account)


def _account_order(account: str) -> tuple[int, str]:
    order = ("caldera-worker", "caldera-forwarder", "caldera-webhook")
    return (order.index(account), "") if account in order else (len(order), account)


_AGGREGATE: Final = "rbac.authorization.k8s.io/aggregate-to-"
_TENANTS: Final = """
## Tenants

These ClusterRoles are bound to no one: Kubernetes aggregates them into its user-facing roles
`admin`, `edit` and `view`, so a RoleBinding that makes someone `admin` or `edit` of a
namespace lets them manage the NamespaceQueues there
([Namespace queues](../user-guide/namespace-queues.md)), and `view` lets them read them.
Nothing else of Caldera's comes with those roles.
"""


def _aggregated(docs: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The ClusterRoles aggregated into Kubernetes' admin, edit and view roles."""
    roles = []
    for d in docs:
        labels = d["metadata"].get("labels") or {} if d["kind"] == "ClusterRole" else {}
        into = sorted(
            k.removeprefix(_AGGREGATE)
            for k, v in labels.items()
            if k.startswith(_AGGREGATE) and v == "true"
        )
        if into:
            roles.append((d, into))
    if not roles:
        return
    yield _TENANTS
    yield "| ClusterRole | aggregated into | API group | resource | verbs |"
    yield "|---|---|---|---|---|"
    for role, into in roles:
        for rule in role.get("rules", []):
            for group in rule.get("apiGroups", [""]):
                for resource in rule["resources"]:
                    verbs = ", ".join(sorted(rule["verbs"], key=_verb_order))
                    yield (
                        f"| `{role['metadata']['name']}` | {', '.join(into)} | "
                        f"`{group or 'core'}` | `{resource}` | {verbs} |"
                    )


def rbac_page(base: Path = BASE) -> str:
    """docs/reference/rbac.md as it must read for the manifests in `base`."""
    docs = load(base)
    return _INTRO + "\n".join([*_tables(grants(docs)), *_aggregated(docs)]) + "\n"

"""The committed CRDs are exactly what `caldera crds` generates, and they are structural."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cel
import pytest
import yaml

from cli import crds
from models import crd

pytestmark = pytest.mark.unit

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
CRD_DIR = DEPLOY / "crds"


@pytest.mark.parametrize("where", [CRD_DIR, DEPLOY / "helm" / "caldera" / "crds"], ids=str)
def test_committed_manifests_match_generated(where: Path) -> None:
    generated = crds.rendered()
    on_disk = {p.name: p.read_text() for p in where.glob("*.yaml")}
    stale = sorted(
        n for n in generated.keys() | on_disk.keys() if generated.get(n) != on_disk.get(n)
    )
    assert not stale, f"run `make crds`: stale or extra manifests {stale} in {where}"


def _walk(node: dict[str, Any], path: str) -> list[str]:
    """Paths of schema nodes that break the structural-schema rules."""
    bad = []
    special = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
        "x-kubernetes-int-or-string"
    )
    if "type" not in node and not special:
        bad.append(f"{path}: no type")
    for key in ("$ref", "anyOf", "oneOf", "allOf", "title"):
        if key in node:
            bad.append(f"{path}: {key}")
    for name, child in node.get("properties", {}).items():
        bad += _walk(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        bad += _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        bad += _walk(node["additionalProperties"], f"{path}{{}}")
    return bad


@pytest.mark.parametrize("spec", crd.CRDS, ids=lambda s: s.plural)
def test_schema_is_structural(spec: crd.CrdSpec) -> None:
    assert _walk(crd.openapi_schema(spec), spec.kind) == []


def _manifest(plural: str) -> dict[str, Any]:
    (path,) = CRD_DIR.glob(f"*_{plural}.yaml")
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


@pytest.mark.parametrize(
    ("plural", "short", "columns"),
    [
        ("jobs", ["vcjob", "vj"], ["Status", "minAvailable", "Runnings", "Age", "Queue"]),
        ("queues", ["q", "queue-v1beta1"], ["State", "Weight", "Parent", "Age"]),
        (
            "podgroups",
            ["pg", "podgroup-v1beta1"],
            ["Status", "minMember", "Runnings", "Age", "Queue"],
        ),
        ("commands", ["command"], ["Action", "Target", "Age"]),
        ("namespacequeues", ["nq"], ["PARENT", "STATE", "AGE"]),
    ],
)
def test_names_and_printer_columns_match_volcano(
    plural: str, short: list[str], columns: list[str]
) -> None:
    doc = _manifest(plural)
    assert doc["spec"]["names"]["shortNames"] == short
    version = doc["spec"]["versions"][0]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == columns
    assert ("subresources" in version) == (plural != "commands")


def test_queue_and_maxretry_defaults_are_applied_by_the_apiserver() -> None:
    spec = _manifest("jobs")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert spec["spec"]["properties"]["queue"]["default"] == "default"
    assert spec["spec"]["properties"]["maxRetry"]["default"] == 3
    queue = _manifest("queues")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert queue["spec"]["properties"]["weight"]["default"] == 1


@pytest.mark.parametrize(
    ("plural", "path"),
    [
        ("jobs", ("networkTopology",)),
        ("jobs", ("tasks", "[]", "partitionPolicy", "networkTopology")),
        ("podgroups", ("networkTopology",)),
        ("podgroups", ("subGroupPolicy", "[]", "networkTopology")),
    ],
    ids=lambda v: v if isinstance(v, str) else ".".join(v),
)
def test_every_network_topology_refuses_both_tier_limits(
    plural: str, path: tuple[str, ...]
) -> None:
    """Volcano's webhooks' validateNetworkTopology, for a Job's, its partitions', a PodGroup's
    and its sub-groups' network topology: the CRD's CEL rule, evaluated here."""
    node = _manifest(plural)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    node = node["properties"]["spec"]
    for name in path:
        node = node["items"] if name == "[]" else node["properties"][name]
    (rule,) = node["x-kubernetes-validations"]
    both = {"highestTierAllowed": 1, "highestTierName": "rack"}
    assert not cel.evaluate(rule["rule"], {"self": both})
    assert rule["message"] == "highestTierAllowed and highestTierName must not both be set"
    for one in ({"highestTierAllowed": 1}, {"highestTierName": "rack"}, {}):
        assert cel.evaluate(rule["rule"], {"self": one})


def test_namespace_queue_crd_is_namespaced_with_volcano_defaults() -> None:
    """Volcano's NamespaceQueue design: `nq`, namespaced, status apart; the apiserver fills
    spec.parent (cluster/default) and spec.dequeueStrategy (traverse) when omitted."""
    doc = _manifest("namespacequeues")
    assert (doc["spec"]["scope"], doc["spec"]["names"]["shortNames"]) == ("Namespaced", ["nq"])
    version = doc["spec"]["versions"][0]
    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("PARENT", ".spec.parent"),
        ("STATE", ".status.state"),
        ("AGE", ".metadata.creationTimestamp"),
    ]
    assert version["subresources"] == {"status": {}}
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["parent"]["default"] == "cluster/default"
    assert spec["dequeueStrategy"] == {
        "enum": ["fifo", "traverse"],
        "type": "string",
        "default": "traverse",
    }
    assert spec["priority"]["minimum"] == 0


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ({"parent": "dept"}, True),
        ({"parent": "cluster/research"}, True),
        ({}, True),
        ({"parent": "training"}, False),
        ({"parent": "cluster/root"}, False),
    ],
    ids=["local", "cluster", "omitted", "itself", "root"],
)
def test_namespace_queue_cel_rules_refuse_itself_and_root_as_parent(
    spec: dict[str, str], allowed: bool
) -> None:
    schema = _manifest("namespacequeues")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    obj = {"metadata": {"name": "training"}, "spec": spec}
    results = [cel.evaluate(r["rule"], {"self": obj}) for r in schema["x-kubernetes-validations"]]
    assert all(results) is allowed


@pytest.mark.parametrize(
    ("allowed", "ok"),
    [(["*"], True), (["team-a", "team-b"], True), ([], True), (["*", "team-a"], False)],
    ids=["every", "listed", "none", "star-and-name"],
)
def test_queue_allowed_namespaces_star_stands_alone(allowed: list[str], ok: bool) -> None:
    queue = _manifest("queues")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    node = queue["properties"]["spec"]["properties"]["allowedNamespaces"]
    assert node["items"]["pattern"] == r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$"
    (rule,) = node["x-kubernetes-validations"]
    assert bool(cel.evaluate(rule["rule"], {"self": allowed})) is ok


def test_a_job_queue_may_name_a_namespace_queue() -> None:
    """`namespace/` and a 253-character queue name fit the Job's spec.queue."""
    spec = _manifest("jobs")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert spec["spec"]["properties"]["queue"]["maxLength"] == len("namespace/") + 253

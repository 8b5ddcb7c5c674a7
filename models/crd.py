"""CustomResourceDefinitions generated from the models, so the models stay the one source.

Pydantic's JSON Schema is turned into a Kubernetes structural schema: `$ref`s inlined,
`Optional` unwrapped, titles and Python-side defaults dropped, free-form mappings marked
`x-kubernetes-preserve-unknown-fields`. Only defaults declared with `x-crd-default` become
apiserver defaults. CEL rules declared on the models (`x-kubernetes-validations`) are kept
where they were declared, so the apiserver rejects what Volcano's admission webhook rejects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel

from models import bus, cronjob, jobflow, namespacequeue, scheduling, topology, vcjob

_DROP: Final = frozenset({"title", "default", "$defs"})


@dataclass(frozen=True)
class CrdSpec:
    model: type[BaseModel]
    group: str
    version: str
    kind: str
    plural: str
    short_names: tuple[str, ...]
    namespaced: bool
    columns: tuple[dict[str, Any], ...]
    categories: tuple[str, ...] = ("volcano", "caldera")
    status: bool = True
    rules: bool = True  # False: no CEL rules of the model (a kind Volcano stores unchecked)


def _age() -> dict[str, Any]:
    return {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


CRDS: Final = (
    CrdSpec(
        model=vcjob.Job,
        group=vcjob.GROUP,
        version=vcjob.VERSION,
        kind="Job",
        plural="jobs",
        short_names=("vcjob", "vj"),
        namespaced=True,
        columns=(
            {"name": "Status", "type": "string", "jsonPath": ".status.state.phase"},
            {"name": "minAvailable", "type": "integer", "jsonPath": ".status.minAvailable"},
            {"name": "Runnings", "type": "integer", "jsonPath": ".status.running"},
            _age(),
            {"name": "Queue", "type": "string", "jsonPath": ".spec.queue", "priority": 1},
        ),
    ),
    CrdSpec(
        model=scheduling.Queue,
        group=scheduling.GROUP,
        version=scheduling.VERSION,
        kind="Queue",
        plural="queues",
        short_names=("q", "queue-v1beta1"),
        namespaced=False,
        columns=(
            {"name": "State", "type": "string", "jsonPath": ".status.state"},
            {"name": "Weight", "type": "integer", "jsonPath": ".spec.weight"},
            {"name": "Parent", "type": "string", "jsonPath": ".spec.parent"},
            _age(),
        ),
    ),
    CrdSpec(
        model=namespacequeue.NamespaceQueue,
        group=scheduling.GROUP,
        version=scheduling.VERSION,
        kind=namespacequeue.KIND,
        plural=namespacequeue.PLURAL,
        short_names=("nq",),
        namespaced=True,
        # Spelled as Volcano's design prints them (kubectl shows every header in capitals).
        columns=(
            {"name": "PARENT", "type": "string", "jsonPath": ".spec.parent"},
            {"name": "STATE", "type": "string", "jsonPath": ".status.state"},
            {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ),
    ),
    CrdSpec(
        model=scheduling.PodGroup,
        group=scheduling.GROUP,
        version=scheduling.VERSION,
        kind="PodGroup",
        plural="podgroups",
        short_names=("pg", "podgroup-v1beta1"),
        namespaced=True,
        columns=(
            {"name": "Status", "type": "string", "jsonPath": ".status.phase"},
            {"name": "minMember", "type": "integer", "jsonPath": ".spec.minMember"},
            {"name": "Runnings", "type": "integer", "jsonPath": ".status.running"},
            _age(),
            {"name": "Queue", "type": "string", "jsonPath": ".spec.queue", "priority": 1},
        ),
    ),
    CrdSpec(
        model=bus.Command,
        group=bus.GROUP,
        version=bus.VERSION,
        kind="Command",
        plural="commands",
        short_names=("command",),
        namespaced=True,
        columns=(
            {"name": "Action", "type": "string", "jsonPath": ".action"},
            {"name": "Target", "type": "string", "jsonPath": ".target.name"},
            _age(),
        ),
        status=False,
    ),
    CrdSpec(
        model=jobflow.JobFlow,
        group=jobflow.GROUP,
        version=jobflow.VERSION,
        kind=jobflow.FLOW_KIND,
        plural="jobflows",
        short_names=("jf",),
        namespaced=True,
        columns=({"name": "Status", "type": "string", "jsonPath": ".status.state.phase"}, _age()),
    ),
    CrdSpec(
        model=jobflow.JobTemplate,
        group=jobflow.GROUP,
        version=jobflow.VERSION,
        kind=jobflow.TEMPLATE_KIND,
        plural="jobtemplates",
        short_names=("jt",),
        namespaced=True,
        columns=(_age(),),
        rules=False,  # a template's Job spec is checked when a Job is made from it
    ),
    CrdSpec(
        model=cronjob.CronJob,
        group=vcjob.GROUP,
        version=vcjob.VERSION,
        kind=cronjob.KIND,
        plural=cronjob.PLURAL,
        short_names=("cronvcjob", "cronvj"),
        namespaced=True,
        columns=(
            {"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule"},
            {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"},
            {"name": "Last Schedule", "type": "date", "jsonPath": ".status.lastScheduleTime"},
            _age(),
        ),
    ),
    CrdSpec(
        model=topology.HyperNode,
        group=topology.GROUP,
        version=topology.VERSION,
        kind=topology.KIND,
        plural=topology.PLURAL,
        short_names=("hn",),
        namespaced=False,
        columns=(
            # Tier is a string column in Volcano's CRD too, so `kubectl get hn` reads the same.
            {"name": "Tier", "type": "string", "jsonPath": ".spec.tier"},
            {"name": "TierName", "type": "string", "jsonPath": ".spec.tierName"},
            {"name": "NodeCount", "type": "integer", "jsonPath": ".status.nodeCount"},
            _age(),
        ),
    ),
)


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    """Rewrite one JSON Schema node into its structural-schema form."""
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs)
    any_of = node.get("anyOf")
    if any_of is not None:
        options = [o for o in any_of if o != {"type": "null"}]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if node.get("x-kubernetes-int-or-string"):
            return {"x-kubernetes-int-or-string": True, **_strip(rest)}
        if len(options) == 1:
            return _structural({**options[0], **rest}, defs)
        raise ValueError(f"cannot express anyOf {any_of!r} in a structural schema")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "x-crd-default":
            out["default"] = value
        elif key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out[key] = {k: _structural(v, defs) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, defs)
        else:
            out[key] = value
    if "properties" in out:
        # extra="allow" keeps unknown fields in Python; the apiserver prunes them, as Volcano's.
        out.pop("additionalProperties", None)
    elif out.get("additionalProperties") is True or ("type" not in out and _free_form(out)):
        out.pop("additionalProperties", None)
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _free_form(node: dict[str, Any]) -> bool:
    return not any(k in node for k in ("properties", "items", "enum", "x-kubernetes-int-or-string"))


def _without_rules(node: Any) -> Any:
    """The schema without any `x-kubernetes-validations`, at every depth."""
    if isinstance(node, list):
        return [_without_rules(n) for n in node]
    if not isinstance(node, dict):
        return node
    return {k: _without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}


def _strip(node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in _DROP}


def openapi_schema(spec: CrdSpec) -> dict[str, Any]:
    raw = spec.model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    schema: dict[str, Any] = _structural(raw, defs)
    if not spec.rules:
        schema = _without_rules(schema)
    props = schema["properties"]
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    props["metadata"] = {"type": "object"}
    schema.pop("required", None)
    if "spec" in raw.get("required", ()):
        schema["required"] = ["spec"]
    return schema


def crd_manifest(spec: CrdSpec) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": spec.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": openapi_schema(spec)},
        "additionalPrinterColumns": list(spec.columns),
    }
    if spec.status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{spec.plural}.{spec.group}"},
        "spec": {
            "group": spec.group,
            "names": {
                "kind": spec.kind,
                "listKind": f"{spec.kind}List",
                "plural": spec.plural,
                "singular": spec.kind.lower(),
                "shortNames": list(spec.short_names),
                "categories": list(spec.categories),
            },
            "scope": "Namespaced" if spec.namespaced else "Cluster",
            "versions": [version],
        },
    }


def all_manifests() -> dict[str, dict[str, Any]]:
    """File name → CRD manifest, for every API type Caldera serves."""
    return {f"{s.group}_{s.plural}.yaml": crd_manifest(s) for s in CRDS}

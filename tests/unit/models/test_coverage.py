"""docs/reference/volcano-api-fields.md is the page the coverage tables print, and the tables
classify every field of the Job, Queue and PodGroup specs the CRDs in deploy/crds/ declare:
each field path once (itself or a subtree above it, such as the pod template), and no entry
for a field the schemas lack. A field Volcano adds, once the models and CRDs carry it, fails
here until it is classified."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from models import plugins
from models.coverage import page
from models.coverage.entries import Honoured, KindCoverage, Refused, WithoutEffect

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "reference" / "volcano-api-fields.md"
KINDS = {kind.kind: kind for kind in page.KINDS}
# Volcano's job plugins (pkg/controllers/job/plugins/factory.go at ed72c7c), which `spec.plugins`
# may name: each run by Caldera or refused at admission.
VOLCANO_JOB_PLUGINS = frozenset(
    {"ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray"}
)


def _schema(kind: KindCoverage) -> Mapping[str, Any]:
    crd = yaml.safe_load((ROOT / "deploy" / "crds" / kind.crd).read_text())
    assert crd["spec"]["names"]["kind"] == kind.kind
    (version,) = (v for v in crd["spec"]["versions"] if v["storage"])
    assert f"{crd['spec']['group']}/{version['name']}" == kind.api_version
    schema: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _walk(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, bool]]:
    """Every field path below `path`, and whether it is a leaf (nothing declared below it)."""
    properties = schema.get("properties")
    items = schema.get("items")
    if isinstance(items, Mapping) and items.get("properties"):
        yield from _walk(items, path + "[]")
        return
    if not properties:
        yield path, True
        return
    yield path, False
    for name, sub in properties.items():
        yield from _walk(sub, f"{path}.{name}")


def _spec_paths(kind: KindCoverage) -> dict[str, bool]:
    """The spec's field paths (status is Caldera's output, metadata Kubernetes')."""
    spec = _schema(kind)["properties"]["spec"]
    return {p: leaf for p, leaf in _walk(spec, "spec") if p != "spec"}


def _covers(entry: str, path: str) -> bool:
    return path == entry or path.startswith((entry + ".", entry + "[]"))


def test_the_committed_page_is_the_generated_one() -> None:
    assert PAGE.read_text() == page.page(), "regenerate: python -m models.coverage > " + str(PAGE)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_field_the_crd_declares_is_classified_once(name: str) -> None:
    kind = KINDS[name]
    paths = _spec_paths(kind)
    unknown = sorted(set(kind.fields) - set(paths))
    assert not unknown, f"{name}: entries for fields the CRD does not declare: {unknown}"
    for leaf in (p for p, is_leaf in paths.items() if is_leaf):
        covering = [e for e in kind.fields if _covers(e, leaf)]
        assert len(covering) == 1, f"{name}: {leaf} is classified by {covering or 'nothing'}"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_no_entry_sits_under_another(name: str) -> None:
    entries = list(KINDS[name].fields)
    nested = [(a, b) for a in entries for b in entries if a != b and _covers(a, b)]
    assert not nested


def test_the_pod_template_is_one_entry_kubernetes_owns() -> None:
    job = KINDS["Job"]
    assert "spec.tasks[].template" in job.fields
    assert not any(p.startswith("spec.tasks[].template.") for p in job.fields)


def test_every_entry_says_where_or_why() -> None:
    for kind in page.KINDS:
        for path, entry in kind.fields.items():
            match entry:
                case Honoured(where=where):
                    assert where, path
                case WithoutEffect(why=why):
                    assert why.strip(), path
                case Refused(where=where, why=why):
                    assert where.startswith("admission/") and why, path


def test_every_reader_named_is_a_file_of_the_repository() -> None:
    for kind in page.KINDS:
        for path, entry in kind.fields.items():
            if isinstance(entry, Honoured | Refused):
                for reader in entry.where.split(", "):
                    assert (ROOT / reader).exists(), f"{kind.kind} {path}: no {reader}"


def test_every_volcano_job_plugin_is_run_or_refused() -> None:
    assert plugins.IMPLEMENTED | plugins.VOLCANO_ONLY == VOLCANO_JOB_PLUGINS
    assert not plugins.IMPLEMENTED & plugins.VOLCANO_ONLY


def test_the_page_counts_every_entry_and_names_the_job_plugins_run() -> None:
    text = PAGE.read_text()
    for kind in page.KINDS:
        assert sum(page.counts(kind)) == len(kind.fields)
        for path in kind.fields:
            assert f"| `{path}` |" in text
    for name in plugins.IMPLEMENTED:
        assert f"`{name}`" in text

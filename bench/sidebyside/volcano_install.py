"""What the real Volcano side installs from a Volcano source tree: its CRDs (in place of
Caldera's: delete, then create), its webhook configurations (the chart's template, rendered
here with the clientConfig pointed at a loopback URL) and the default scheduler conf."""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes import client

from activities import kube

CHART: Final = Path("installer/helm/chart/volcano")
BINARIES: Final = ("vc-webhook-manager", "vc-controller-manager", "vc-scheduler")
# vc-webhook-manager's own default, when the chart's values cannot be read.
DEFAULT_ADMISSIONS: Final = (
    "/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/pods/mutate,"
    "/queues/mutate,/queues/validate"
)
WEBHOOK_PREFIX: Final = "volcano-admission-service"
_DIRECTIVE: Final = re.compile(r"^\s*\{\{-?[^}]*-?\}\}\s*$")


@dataclass(frozen=True)
class Layout:
    crds: list[Path]
    webhooks: Path | None  # the chart's webhooks.yaml; None: the manager registers itself
    scheduler_conf: Path
    admissions: str  # --enabled-admission


def missing(bin_dir: Path | None, src: Path | None) -> str | None:
    """Why the side cannot run; None when it can."""
    if bin_dir is None or src is None:
        return "no --volcano-bin/--volcano-src given"
    absent = [b for b in BINARIES if not (bin_dir / b).is_file()]
    if absent:
        return f"{bin_dir} lacks {', '.join(absent)}"
    try:
        find(src)
    except FileNotFoundError as e:
        return str(e)
    return None


def _first(src: Path, *patterns: str) -> list[Path]:
    for pattern in patterns:
        found = sorted(p for p in src.glob(pattern) if p.is_file())
        if found:
            return found
    return []


def find(src: Path) -> Layout:
    crds = _first(src, f"{CHART}/crd/bases/*.yaml", "installer/**/crd/bases/*.yaml")
    crds += _first(src, f"{CHART}/charts/*/crd/bases/*.yaml")
    conf = _first(
        src, f"{CHART}/config/volcano-scheduler.conf", "installer/**/volcano-scheduler.conf"
    )
    if not crds or not conf:
        raise FileNotFoundError(f"{src}: no installer/ CRDs or volcano-scheduler.conf")
    hooks = _first(src, f"{CHART}/templates/webhooks.yaml")
    return Layout(
        crds=sorted(set(crds)),
        webhooks=hooks[0] if hooks else None,
        scheduler_conf=conf[0],
        admissions=_admissions(src / CHART / "values.yaml"),
    )


def _admissions(values: Path) -> str:
    """The chart's enabled_admissions (what a default install runs)."""
    try:
        doc = yaml.safe_load(values.read_text())
        found = (doc.get("custom") or {}).get("enabled_admissions")
    except (OSError, yaml.YAMLError, AttributeError):
        found = None
    return str(found).strip() if found else DEFAULT_ADMISSIONS


def crd_documents(layout: Layout) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in layout.crds:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


def render_webhooks(layout: Layout, base_url: str, ca: bytes) -> list[dict[str, Any]]:
    """The chart's webhook configurations with every directive line dropped (all guarded
    blocks kept), then only those for enabled paths, each calling `base_url + path`."""
    if layout.webhooks is None:
        return []
    text = layout.webhooks.read_text()
    lines = [line for line in text.splitlines() if not _DIRECTIVE.match(line)]
    text = "\n".join(lines).replace("{{ .Release.Namespace }}", "volcano-system")
    text = text.replace("{{ .Release.Name }}", "volcano")
    enabled = {p.strip() for p in layout.admissions.split(",") if p.strip()}
    bundle = base64.b64encode(ca).decode()
    rendered: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(text):
        if not doc or not str(doc.get("kind", "")).endswith("WebhookConfiguration"):
            continue
        doc["metadata"] = {k: v for k, v in doc["metadata"].items() if v is not None}
        hooks = []
        for hook in doc.get("webhooks") or []:
            path = (hook.get("clientConfig", {}).get("service") or {}).get("path", "")
            if path in enabled:
                hook["clientConfig"] = {"url": f"{base_url}{path}", "caBundle": bundle}
                hooks.append(hook)
        if hooks:
            rendered.append({**doc, "webhooks": hooks})
    return rendered


def create_webhooks(api: client.ApiClient, docs: list[dict[str, Any]]) -> None:
    reg = client.AdmissionregistrationV1Api(api)
    for doc in docs:
        delete_webhooks(api, [doc["metadata"]["name"]])
        if doc["kind"] == "MutatingWebhookConfiguration":
            reg.create_mutating_webhook_configuration(kube.body(doc))
        else:
            reg.create_validating_webhook_configuration(kube.body(doc))


def delete_webhooks(api: client.ApiClient, names: list[str] | None = None) -> list[str]:
    """Delete the named configurations (None: every `volcano-admission-service*`)."""
    reg = client.AdmissionregistrationV1Api(api)
    pairs: list[tuple[Any, Any]] = [
        (reg.list_mutating_webhook_configuration, reg.delete_mutating_webhook_configuration),
        (reg.list_validating_webhook_configuration, reg.delete_validating_webhook_configuration),
    ]
    deleted: list[str] = []
    for lister, deleter in pairs:
        for item in lister().items:
            name = item.metadata.name if item.metadata else ""
            wanted = name in names if names is not None else name.startswith(WEBHOOK_PREFIX)
            if name and wanted:
                try:
                    deleter(name)
                    deleted.append(name)
                except client.ApiException as e:
                    if e.status != 404:
                        raise
    return deleted


def delete_crds(api: client.ApiClient, names: list[str], timeout: float = 180) -> None:
    """Delete CRDs (their objects go with them) and wait until none is left."""
    ext = client.ApiextensionsV1Api(api)
    for name in names:
        try:
            ext.delete_custom_resource_definition(name)
        except client.ApiException as e:
            if e.status != 404:
                raise
    deadline = time.monotonic() + timeout
    left = set(names)
    while left and time.monotonic() < deadline:
        for name in sorted(left):
            try:
                ext.read_custom_resource_definition(name)
            except client.ApiException as e:
                if e.status != 404:
                    raise
                left.discard(name)
        if left:
            time.sleep(0.5)
    if left:
        raise RuntimeError(f"CRDs still present after {timeout:.0f}s: {sorted(left)}")


def create_crds(api: client.ApiClient, docs: list[dict[str, Any]], created: list[str]) -> None:
    """Create each CRD, appending its name to `created` as soon as it exists."""
    ext = client.ApiextensionsV1Api(api)
    for doc in docs:
        doc["metadata"] = {"name": doc["metadata"]["name"]}
        doc.pop("status", None)
        ext.create_custom_resource_definition(kube.body(doc))
        created.append(doc["metadata"]["name"])

"""The dev stack's registration and the production manifest describe the same webhooks, and
the decision core stays free of I/O."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.devstack import webhook
from tests.unit import test_layering

MANIFEST = test_layering.ROOT / "deploy" / "webhook" / "validating-webhook.yaml"
SERVICE = {
    "service": {
        "namespace": "caldera-system",
        "name": "caldera-webhook",
        "path": webhook.PATH,
        "port": 443,
    },
    "caBundle": "",
}


def test_production_manifest_matches_dev_registration() -> None:
    assert yaml.safe_load(MANIFEST.read_text()) == webhook.configuration(SERVICE)


def test_local_registration_calls_loopback_with_the_ca(tmp_path: Path) -> None:
    (tmp_path / webhook.CA_FILE).write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    doc = webhook.local_configuration(18443, tmp_path)
    configs = [h["clientConfig"] for h in doc["webhooks"]]
    loopback = {
        "url": "https://127.0.0.1:18443/validate",
        "caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
    }
    assert configs == [loopback] * 5
    summary = [
        (h["name"], h["rules"][0]["resources"], h["rules"][0]["operations"])
        for h in doc["webhooks"]
    ]
    assert summary == [
        ("jobs.admission.caldera.dev", ["jobs"], ["CREATE", "UPDATE"]),
        ("podgroups.admission.caldera.dev", ["podgroups"], ["CREATE"]),
        ("queues.admission.caldera.dev", ["queues"], ["CREATE", "UPDATE", "DELETE"]),
        ("jobflows.admission.caldera.dev", ["jobflows"], ["CREATE", "UPDATE"]),
        ("cronjobs.admission.caldera.dev", ["cronjobs"], ["CREATE", "UPDATE"]),
    ]


PURE = (
    "__init__.py",
    "rules.py",
    "templates.py",
    "jobspec.py",
    "queueresources.py",
    "jobflows.py",
    "cronjobs.py",
)


@pytest.mark.parametrize("module", PURE)
def test_admission_core_imports_no_io(module: str) -> None:
    path = test_layering.ROOT / "admission" / module
    own = {"admission", *(f"admission.{m.removesuffix('.py')}" for m in PURE)}
    imported = test_layering._imports(path) - own
    assert sorted(n for n in imported if test_layering._forbidden(n)) == []
    assert test_layering._imports(path).isdisjoint({"http", "http.server", "ssl", "urllib3"})

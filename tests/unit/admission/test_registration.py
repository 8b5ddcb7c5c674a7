"""The dev stack's registration and the production manifest describe the same webhooks (the
decision core's freedom from I/O is the `admission-core-pure` import contract)."""

from __future__ import annotations

from pathlib import Path

import yaml

from cli.devstack import webhook

MANIFEST = Path(__file__).resolve().parents[3] / "deploy" / "webhook" / "validating-webhook.yaml"
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
    assert configs == [loopback] * 6
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
        (
            "namespacequeues.admission.caldera.dev",
            ["namespacequeues"],
            ["CREATE", "UPDATE", "DELETE"],
        ),
    ]

"""The Helm chart (deploy/helm/caldera) with a real helm: it lints, renders with its defaults
the objects of the kustomize base (rendered by kubectl's kustomize) but the Namespace, and
its values change what they say they change. `tests/e2e/test_helm.py` installs it with
`--dry-run=server` against a real apiserver."""

from __future__ import annotations

import base64
import functools
import subprocess
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509

from cli.devstack import controlplane

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
CHART = DEPLOY / "helm" / "caldera"
NAMESPACE = "caldera-system"
Obj = dict[str, Any]
Key = tuple[str, str, str]


@functools.cache
def _bin() -> Path:
    return controlplane.build_binaries("helm")


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _objects(text: str) -> dict[Key, Obj]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d for d in docs}


def render(*values: str, namespace: str = NAMESPACE) -> dict[Key, Obj]:
    argv = [str(_bin() / "helm"), "template", "caldera", str(CHART), "--namespace", namespace]
    argv += ["--include-crds", *(a for v in values for a in ("--set", v))]
    done = _run(*argv)
    assert done.returncode == 0, done.stderr
    return _objects(done.stdout)


def _kustomized() -> dict[Key, Obj]:
    done = _run(str(_bin() / "kubectl"), "kustomize", str(DEPLOY / "base"))
    assert done.returncode == 0, done.stderr
    return _objects(done.stdout)


def _container(objects: dict[Key, Obj], component: str) -> Obj:
    deployment = objects[("Deployment", NAMESPACE, f"caldera-{component}")]
    container: Obj = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def test_lint() -> None:
    done = _run(str(_bin() / "helm"), "lint", str(CHART), "--strict")
    assert done.returncode == 0, done.stdout + done.stderr


def test_defaults_render_the_kustomize_base() -> None:
    chart, base = render(), _kustomized()
    assert set(base) - set(chart) == {("Namespace", "", NAMESPACE)}  # --create-namespace's
    assert set(chart) - set(base) == set()
    for key, obj in chart.items():
        expected = base[key]
        if key[0] == "CustomResourceDefinition":
            # Helm installs crds/ as they are: kustomize's part-of label is not on them.
            expected = {**expected, "metadata": {"name": key[2]}}
        assert obj == expected, key


def test_values_set_replicas_resources_image_and_temporal() -> None:
    objects = render(
        "worker.replicas=5",
        "worker.resources.requests.cpu=2",
        "image.repository=registry.example.com/caldera",
        "image.tag=1.2.3",
        "temporal.address=temporal.prod:7233",
        "temporal.namespace=batch",
        "temporal.tls.enabled=true",
        "temporal.tls.serverName=temporal.prod",
    )
    worker = objects[("Deployment", NAMESPACE, "caldera-worker")]
    assert worker["spec"]["replicas"] == 5
    assert _container(objects, "worker")["resources"]["requests"]["cpu"] == 2
    for component in ("worker", "forwarder", "webhook"):
        assert _container(objects, component)["image"] == "registry.example.com/caldera:1.2.3"
    data = objects[("ConfigMap", NAMESPACE, "caldera-config")]["data"]
    assert data["TEMPORAL_ADDRESS"] == "temporal.prod:7233"
    assert data["TEMPORAL_NAMESPACE"] == "batch"
    assert data["TEMPORAL_TLS_CERT"] == "/etc/caldera/temporal-tls/tls.crt"
    assert data["TEMPORAL_TLS_SERVER_NAME"] == "temporal.prod"


def test_secrets_are_made_from_values_only_when_given() -> None:
    assert not [k for k in render() if k[0] == "Secret"]
    objects = render("temporal.apiKey=k3y", "codec.key=c2VjcmV0", "codec.keyId=2026")
    assert objects[("Secret", NAMESPACE, "caldera-temporal")]["stringData"] == {"api-key": "k3y"}
    codec = objects[("Secret", NAMESPACE, "caldera-codec")]["stringData"]
    assert codec == {"key": "c2VjcmV0", "key-id": "2026"}


def test_self_signed_webhook_tls_gives_a_serving_secret_its_ca_signs() -> None:
    objects = render("webhook.tls.mode=self-signed", namespace="batch-system")
    secret = objects[("Secret", "batch-system", "caldera-webhook-tls")]
    registration = objects[("ValidatingWebhookConfiguration", "", "caldera-admission")]
    bundles = {w["clientConfig"]["caBundle"] for w in registration["webhooks"]}
    assert len(bundles) == 1
    ca = x509.load_pem_x509_certificate(base64.b64decode(bundles.pop()))
    serving = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "caldera-webhook.batch-system.svc" in names.get_values_for_type(x509.DNSName)


def test_cert_manager_mode_issues_the_certificate_and_injects_the_ca() -> None:
    objects = render("webhook.tls.mode=cert-manager")
    registration = objects[("ValidatingWebhookConfiguration", "", "caldera-admission")]
    assert registration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/caldera-webhook"
    }
    certificate = objects[("Certificate", NAMESPACE, "caldera-webhook")]
    assert certificate["spec"]["secretName"] == "caldera-webhook-tls"
    assert f"caldera-webhook.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]


def test_an_unknown_tls_mode_is_refused_by_name() -> None:
    argv = [str(_bin() / "helm"), "template", "caldera", str(CHART)]
    done = _run(*argv, "--set", "webhook.tls.mode=openssl")
    assert done.returncode != 0
    assert 'webhook.tls.mode must be manual, self-signed or cert-manager, not "openssl"' in (
        done.stderr
    )


def test_cluster_wide_objects_can_be_left_to_an_earlier_install() -> None:
    kept = render(
        "queues.create=false",
        "admissionPolicy.create=false",
        "webhook.register=false",
        "tenantRoles.create=false",
    )
    left = set(render()) - set(kept)
    assert {k[0] for k in left} == {
        "ClusterRole",
        "Queue",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
    }
    roles = sorted(k[2] for k in left if k[0] == "ClusterRole")
    assert roles == ["caldera-namespacequeue-editor", "caldera-namespacequeue-viewer"]

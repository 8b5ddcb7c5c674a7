"""The admission webhook on the dev stack: its TLS files and its registration.

The apiserver calls webhooks over HTTPS only and checks the serving certificate against the
`caBundle` of the registration, so the stack makes its own small CA with the `openssl` CLI
(as `controlplane` does for the service-account key) and a serving certificate for
IP:127.0.0.1, kept in the stack's directory and reused on the next start.

The registration (`caldera-admission`) points at `https://127.0.0.1:<port>/validate`; the
production manifest in `deploy/webhook/` has the same webhooks with a Service reference
instead, and a unit test keeps the two in step.

With `failurePolicy: Fail` a registration whose process is gone refuses every write it covers,
so the dev-stack webhook withdraws its own registration when it stops (`withdraw`), and Queue
UPDATEs only reach the webhook when `spec.parent` changes (a match condition): after a crash
the registration stays behind, and the installer re-applies `root` and `default` on the next
`caldera dev up` before that run's webhook replaces it.
"""

from __future__ import annotations

import base64
import copy
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Final

from kubernetes import client

from activities import kube
from models import jobflow, namespacequeue, scheduling, vcjob

NAME: Final = "caldera-admission"
PATH: Final = "/validate"
CA_FILE: Final = "ca.crt"
CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
DAYS: Final = "3650"
# Anything but an UPDATE, or an UPDATE that changes the spec (labels, finalizers and status
# writes never call the webhook).
SPEC_CHANGED: Final = "request.operation != 'UPDATE' || object.spec != oldObject.spec"


def ensure_certs(directory: Path) -> Path:
    """A CA and a serving certificate for IP:127.0.0.1 in `directory` (kept if present)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / CA_FILE, directory / "ca.key"
    cert, key = directory / CERT_FILE, directory / KEY_FILE
    if all(p.exists() for p in (ca, ca_key, cert, key)):
        return directory
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", DAYS,
        "-subj", "/CN=caldera-webhook-ca", "-keyout", ca_key, "-out", ca,
    )  # fmt: skip
    csr, extensions = directory / "tls.csr", directory / "tls.ext"
    extensions.write_text(
        "subjectAltName = IP:127.0.0.1\n"
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
    )
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=caldera-webhook",
        "-keyout", key, "-out", csr,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-days", DAYS,
        "-set_serial", f"0x{uuid.uuid4().hex}", "-extfile", extensions, "-out", cert,
    )  # fmt: skip
    return directory


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def configuration(client_config: dict[str, Any]) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration: jobs on CREATE and spec-changing UPDATE, podgroups on
    CREATE, queues on CREATE, spec-changing UPDATE and DELETE, jobflows and cronjobs on CREATE
    and spec-changing UPDATE, namespacequeues on CREATE, spec-changing UPDATE and DELETE, each
    calling `client_config` (a URL or a Service, plus caBundle). NamespaceQueues come last, so
    the index of every earlier webhook (an overlay's caBundle path) stays as it was."""

    def hook(name: str, group: str, version: str, plural: str, *operations: str) -> dict[str, Any]:
        return {
            "name": f"{name}.admission.caldera.dev",
            "clientConfig": copy.deepcopy(client_config),
            "rules": [
                {
                    "apiGroups": [group],
                    "apiVersions": [version],
                    "operations": list(operations),
                    "resources": [plural],
                    "scope": "*",
                }
            ],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 5,
        }

    queues = hook(
        "queues", scheduling.GROUP, scheduling.VERSION, "queues", "CREATE", "UPDATE", "DELETE"
    )
    queues["matchConditions"] = [{"name": "spec-change", "expression": SPEC_CHANGED}]
    jobs = hook("jobs", vcjob.GROUP, vcjob.VERSION, "jobs", "CREATE", "UPDATE")
    jobs["matchConditions"] = [{"name": "spec-change", "expression": SPEC_CHANGED}]
    flows = hook("jobflows", jobflow.GROUP, jobflow.VERSION, "jobflows", "CREATE", "UPDATE")
    flows["matchConditions"] = [{"name": "spec-change", "expression": SPEC_CHANGED}]
    crons = hook("cronjobs", vcjob.GROUP, vcjob.VERSION, "cronjobs", "CREATE", "UPDATE")
    crons["matchConditions"] = [{"name": "spec-change", "expression": SPEC_CHANGED}]
    namespace_queues = hook(
        "namespacequeues",
        scheduling.GROUP,
        scheduling.VERSION,
        namespacequeue.PLURAL,
        "CREATE",
        "UPDATE",
        "DELETE",
    )
    namespace_queues["matchConditions"] = [{"name": "spec-change", "expression": SPEC_CHANGED}]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME},
        "webhooks": [
            jobs,
            hook("podgroups", scheduling.GROUP, scheduling.VERSION, "podgroups", "CREATE"),
            queues,
            flows,
            crons,
            namespace_queues,
        ],
    }


def local_configuration(port: int, cert_dir: Path) -> dict[str, Any]:
    """The registration for a webhook serving on 127.0.0.1:`port` with the certs of `cert_dir`."""
    bundle = base64.b64encode((cert_dir / CA_FILE).read_bytes()).decode()
    return configuration({"url": f"https://127.0.0.1:{port}{PATH}", "caBundle": bundle})


def register(api: client.ApiClient, doc: dict[str, Any]) -> None:
    """Create the configuration, or replace the one an earlier start left (its port is gone)."""
    registrations = client.AdmissionregistrationV1Api(api)
    try:
        registrations.create_validating_webhook_configuration(kube.body(doc))
    except client.ApiException as e:
        if e.status != 409:
            raise
        current = registrations.read_validating_webhook_configuration(NAME)
        version = current.metadata.resource_version if current.metadata else None
        body = {**doc, "metadata": {**doc["metadata"], "resourceVersion": version}}
        registrations.replace_validating_webhook_configuration(NAME, kube.body(body))


def wait_enforced(api: client.ApiClient, timeout: float = 30) -> None:
    """Until the apiserver calls the webhook: the dry-run probe is refused by it.

    The apiserver picks up a new or replaced registration asynchronously (an informer).
    """
    deadline = time.monotonic() + timeout
    outcome = _probe(api)
    while outcome != _REFUSED and time.monotonic() < deadline:
        time.sleep(0.2)
        outcome = _probe(api)
    if outcome != _REFUSED:
        raise RuntimeError(f"webhook {NAME} not enforced after {timeout:.0f}s: {outcome}")


def withdraw(api: client.ApiClient, url: str, timeout: float = 5) -> bool:
    """Delete the registration if it still calls `url`, then wait until the apiserver stops
    calling it; False when it was someone else's or the apiserver kept calling.

    A stopping dev-stack webhook calls this while it still serves: with `failurePolicy: Fail`,
    a registration left behind would refuse every Job, PodGroup, Queue, JobFlow, CronJob and
    NamespaceQueue write until the next start replaces it (the e2e suite starts and stops the
    controllers once per module).
    """
    registrations = client.AdmissionregistrationV1Api(api)
    try:
        current = registrations.read_validating_webhook_configuration(NAME)
    except client.ApiException as e:
        if e.status == 404:
            return False
        raise
    if not any(h.client_config.url == url for h in current.webhooks or []):
        return False  # a newer start registered its own port: not ours to remove
    version = current.metadata.resource_version if current.metadata else None
    try:
        registrations.delete_validating_webhook_configuration(
            NAME, body=kube.body({"preconditions": {"resourceVersion": version}})
        )
    except client.ApiException as e:
        if e.status in (404, 409):
            return False  # deleted or replaced meanwhile
        raise
    deadline = time.monotonic() + timeout
    while _probe(api) == _REFUSED:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


_REFUSED: Final = "refused by the webhook"


def _probe(api: client.ApiClient) -> str:
    """Ask for a dry-run Queue under a missing parent: only the webhook refuses it.

    Dry-run requests run admission (the webhooks declare no side effects) and store nothing.
    """
    probe = {
        "apiVersion": scheduling.API_VERSION,
        "kind": "Queue",
        "metadata": {"name": "caldera-webhook-probe"},
        "spec": {"parent": "caldera-webhook-probe-missing-parent"},
    }
    try:
        client.CustomObjectsApi(api).create_cluster_custom_object(
            scheduling.GROUP, scheduling.VERSION, "queues", probe, dry_run="All"
        )
    except client.ApiException as e:
        if e.status == 403 and "does not exist" in str(e.body):
            return _REFUSED
        if e.status == 409:
            return "admitted without the webhook"  # a queue of that name exists: storage said so
        return f"{e.status}: {e.body}"
    return "admitted without the webhook"

"""The chart against a real apiserver: `helm install --dry-run=server` renders it with the
cluster's lookups and checks it against the cluster (kinds known, nothing it would make
already owned by another release) without creating anything."""

from __future__ import annotations

import subprocess
import uuid

from kubernetes import client

from cli.devstack import controlplane
from tests.e2e.conftest import E2EStack
from tests.unit.deploy.test_helm import CHART


def test_helm_install_dry_run_server(api: client.ApiClient, e2e_stack: E2EStack) -> None:
    namespace = f"helm-{uuid.uuid4().hex[:6]}"
    helm = controlplane.build_binaries("helm") / "helm"
    done = subprocess.run(
        [
            str(helm),
            "install",
            "caldera",
            str(CHART),
            "--namespace",
            namespace,
            "--create-namespace",
            "--dry-run=server",
            "--set",
            "webhook.tls.mode=self-signed",
            # The e2e stack's own install made these cluster-wide objects: not the release's.
            "--set",
            "queues.create=false,admissionPolicy.create=false,webhook.register=false,"
            "tenantRoles.create=false",
            "--kubeconfig",
            e2e_stack.kubeconfig,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "STATUS: pending-install" in done.stdout, done.stdout
    assert f"name: caldera-worker\n  namespace: {namespace}" in done.stdout
    # Nothing was made: no namespace, no release Secret.
    names = {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert namespace not in names

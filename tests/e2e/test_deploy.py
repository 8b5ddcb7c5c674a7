"""deploy/base on a real apiserver.

1. `kubectl kustomize deploy/base` renders, and the apiserver accepts every object
   (`kubectl apply --server-side --dry-run=server`), with no Pod Security warning under the
   namespace's `restricted` level. The namespace and the RBAC objects are applied for real
   first: a dry run of a namespaced object needs its namespace to exist, and the access
   reviews below read the real roles. Nothing else is created (no Deployment: this control
   plane runs no ReplicaSet controller, and the webhook registration with
   `failurePolicy: Fail` would refuse every Job of the session).
2. SubjectAccessReviews: each ServiceAccount may do every row of tests/access.py's table for
   its process and none of the refusals listed there; impersonated requests agree.
3. The worker and the forwarder, started from the Deployments' commands and ConfigMap with
   their own ServiceAccount's token instead of the admin's, run a gang-scheduled Job with a
   volume and the ssh and svc plugins to completion, and consume an AbortJob Command, with
   no request refused (nothing logged as 403 or Forbidden).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic
from temporalio.client import Client

from cli.devstack import controlplane, devices, install, processes, temporal_dev
from cli.devstack.processes import Process
from models import keys
from service import codec_server
from tests import access
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import E2EStack, eventually, register_namespace

RBAC_KINDS = {
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}
PROCESSES = sorted(access.NEEDS)
DRY_RUN = (
    "--server-side",
    "--dry-run=server",
    "--force-conflicts",
    "--field-manager=caldera-check",
)


@pytest.fixture(scope="module")
def kubectl() -> Path:
    return controlplane.build_binaries("dev") / "kubectl"


def _kustomize(kubectl: Path, directory: str) -> str:
    out = subprocess.run(
        [str(kubectl), "kustomize", str(access.DEPLOY / directory)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


@pytest.fixture(scope="module")
def rendered(kubectl: Path) -> str:
    return _kustomize(kubectl, "base")


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def deployed(api: client.ApiClient, rendered: str) -> Iterator[list[dict[str, Any]]]:
    """The namespace, RBAC objects and ConfigMaps (the worker reads the scheduler's) applied
    for real; at the end, the ones this fixture made are removed again. Those the stack
    already held (the tenant ClusterRoles the dev installer puts in) stay: later modules use
    them."""
    docs = _docs(rendered)
    dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
    applied = [d for d in docs if d["kind"] in RBAC_KINDS or d["kind"] == "ConfigMap"]
    made = [d for d in applied if not _exists(dyn, d)]
    for doc in applied:
        install.apply(api, doc)
    yield docs
    for doc in reversed(made):
        try:
            _resource(dyn, doc).delete(
                name=doc["metadata"]["name"], namespace=doc["metadata"].get("namespace")
            )
        except client.ApiException as e:
            if e.status != 404:
                raise


def _resource(dyn: Any, doc: dict[str, Any]) -> Any:
    return dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])


def _exists(dyn: Any, doc: dict[str, Any]) -> bool:
    try:
        _resource(dyn, doc).get(
            name=doc["metadata"]["name"], namespace=doc["metadata"].get("namespace")
        )
    except client.ApiException as e:
        if e.status == 404:
            return False
        raise
    return True


def _dry_run(kubectl: Path, stack: E2EStack, text: str) -> subprocess.CompletedProcess[str]:
    # --force-conflicts: an earlier module's dev-stack webhook registration may share the name
    # caldera-admission under another field manager; a dry run changes nothing either way.
    return subprocess.run(
        [str(kubectl), "apply", *DRY_RUN, "-f", "-"],
        input=text,
        env={**os.environ, "KUBECONFIG": stack.kubeconfig},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("directory", ["base", "codec-server"])
def test_every_object_is_accepted_by_the_apiserver(
    kubectl: Path, e2e_stack: E2EStack, deployed: list[dict[str, Any]], directory: str
) -> None:
    text = _kustomize(kubectl, directory)
    docs = _docs(text)
    out = _dry_run(kubectl, e2e_stack, text)
    assert out.returncode == 0, out.stderr
    accepted = [line for line in out.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(accepted) == len(docs), out.stdout
    for doc in docs:
        name = doc["metadata"]["name"]
        assert any(f"/{name} " in line for line in accepted), f"{doc['kind']} {name}"
    assert "PodSecurity" not in out.stderr and "Warning" not in out.stderr, out.stderr


def test_a_pod_breaking_the_restricted_level_would_be_reported(
    kubectl: Path, e2e_stack: E2EStack, deployed: list[dict[str, Any]], rendered: str
) -> None:
    """Guards the check above: the namespace's Pod Security level is really enforced."""
    (worker,) = [
        d
        for d in _docs(rendered)
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "caldera-worker"
    ]
    del worker["spec"]["template"]["spec"]["securityContext"]
    out = _dry_run(kubectl, e2e_stack, yaml.safe_dump(worker))
    assert "violate PodSecurity" in out.stderr


def test_the_cert_manager_overlay_issues_the_secret_the_webhook_mounts(kubectl: Path) -> None:
    docs = _docs(_kustomize(kubectl, "cert-manager"))
    (cert,) = [d for d in docs if d["kind"] == "Certificate" and not d["spec"].get("isCA")]
    (hook,) = [d for d in docs if d["kind"] == "Deployment" and "webhook" in d["metadata"]["name"]]
    volumes = hook["spec"]["template"]["spec"]["volumes"]
    assert cert["spec"]["secretName"] in {v["secret"]["secretName"] for v in volumes}
    (service,) = [d for d in docs if d["kind"] == "Service"]
    dns = f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert dns in cert["spec"]["dnsNames"]
    (registration,) = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    injected = registration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert injected == f"{cert['metadata']['namespace']}/{cert['metadata']['name']}"


def _user(account: str) -> str:
    return f"system:serviceaccount:{access.NAMESPACE}:{account}"


def _review(api: client.ApiClient, account: str, p: access.Permission) -> bool:
    resource, _, subresource = p.resource.partition("/")
    spec = client.V1SubjectAccessReviewSpec(
        user=_user(account),
        groups=[
            "system:serviceaccounts",
            f"system:serviceaccounts:{access.NAMESPACE}",
            "system:authenticated",
        ],
        resource_attributes=client.V1ResourceAttributes(
            namespace=p.namespace or "",
            verb=p.verb,
            group=p.group,
            resource=resource,
            subresource=subresource or None,
            name=p.name,
        ),
    )
    review = client.AuthorizationV1Api(api).create_subject_access_review(
        client.V1SubjectAccessReview(spec=spec)
    )
    return bool(review.status.allowed)


@pytest.mark.parametrize(
    ("account", "permission"),
    [(a, p) for a in PROCESSES for p in access.needed(a)],
    ids=str,
)
def test_the_apiserver_allows_what_the_code_needs(
    api: client.ApiClient,
    deployed: list[dict[str, Any]],
    account: str,
    permission: access.Permission,
) -> None:
    assert _review(api, account, permission)


@pytest.mark.parametrize(
    ("account", "permission"),
    [(a, p) for a in PROCESSES for p in access.DENIED[a]],
    ids=str,
)
def test_the_apiserver_refuses_the_rest(
    api: client.ApiClient,
    deployed: list[dict[str, Any]],
    account: str,
    permission: access.Permission,
) -> None:
    assert not _review(api, account, permission)


def _as(stack: E2EStack, account: str) -> client.ApiClient:
    impersonating = controlplane.api_client(stack.kubeconfig)
    impersonating.set_default_header("Impersonate-User", _user(account))
    return impersonating


def _status(call: Any) -> int:
    try:
        call()
    except client.ApiException as e:
        return int(e.status)
    return 200


def test_real_requests_agree_with_the_reviews(
    e2e_stack: E2EStack, deployed: list[dict[str, Any]], namespace: str
) -> None:
    pod = {
        "metadata": {"name": "probe"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    secret = {"metadata": {"name": "probe-ssh"}, "stringData": {"id_rsa": "x"}}
    forwarder = client.CoreV1Api(_as(e2e_stack, "caldera-forwarder"))
    worker = client.CoreV1Api(_as(e2e_stack, "caldera-worker"))
    webhook = client.CustomObjectsApi(_as(e2e_stack, "caldera-webhook"))
    assert _status(lambda: forwarder.create_namespaced_pod(namespace, pod)) == 403
    assert _status(lambda: forwarder.list_pod_for_all_namespaces(limit=1)) == 200
    assert _status(lambda: forwarder.read_namespaced_secret("probe-ssh", namespace)) == 403
    assert _status(lambda: worker.create_namespaced_secret(namespace, secret)) == 200
    assert _status(lambda: worker.read_namespaced_secret("probe-ssh", namespace)) == 200
    assert _status(lambda: worker.list_namespaced_secret(namespace)) == 403
    assert _status(lambda: worker.delete_namespaced_secret("probe-ssh", namespace)) == 200
    queues = ("scheduling.volcano.sh", "v1beta1", "queues")
    assert _status(lambda: webhook.get_cluster_custom_object(*queues, "default")) == 200
    patch = {"metadata": {"labels": {"x": "y"}}}
    assert _status(lambda: webhook.patch_cluster_custom_object(*queues, "default", patch)) == 403


# --- the processes themselves, under their own ServiceAccounts ---


def _kubeconfig(api: client.ApiClient, stack: E2EStack, account: str, out: Path) -> Path:
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    token = client.CoreV1Api(api).create_namespaced_service_account_token(
        account, access.NAMESPACE, request
    )
    config = yaml.safe_load(Path(stack.kubeconfig).read_text())
    config["users"] = [{"name": account, "user": {"token": token.status.token}}]
    config["contexts"][0]["context"]["user"] = account
    path = out / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def _container(docs: list[dict[str, Any]], account: str) -> dict[str, Any]:
    (found,) = [c for a, c in access.containers(docs) if a == account]
    return found


# The Secret caldera-codec as an operator would create it: payloads are encrypted end to end.
CODEC_KEY = base64.b64encode(os.urandom(32)).decode()
SECRETS = {("caldera-codec", "key"): CODEC_KEY, ("caldera-codec", "key-id"): "e2e-1"}


def _local(
    docs: list[dict[str, Any]], account: str, overrides: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The container's command and environment (ConfigMap, SECRETS), as this machine runs them."""
    container = _container(docs, account)
    (config,) = [
        d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "caldera-config"
    ]
    env: dict[str, str] = {}
    for e in container.get("env") or []:
        source = e.get("valueFrom") or {}
        if "value" in e:
            env[e["name"]] = e["value"]
        elif "fieldRef" in source:
            env[e["name"]] = access.NAMESPACE  # metadata.namespace
        elif "configMapKeyRef" in source and source["configMapKeyRef"]["key"] in config["data"]:
            env[e["name"]] = config["data"][source["configMapKeyRef"]["key"]]
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            if (ref["name"], ref["key"]) in SECRETS:
                env[e["name"]] = SECRETS[(ref["name"], ref["key"])]
    env.update(overrides)
    argv = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["command"]]
    prefix = {"python": [sys.executable], "caldera": [sys.executable, "-m", "cli.main"]}
    return [*prefix[argv[0]], *argv[1:]], env


@pytest.fixture(scope="module")
async def temporal_namespace(e2e_stack: E2EStack) -> str:
    """A Temporal namespace of this module's own: its encrypted histories stay apart from the
    session's other workers, which have no key."""
    name = f"caldera-deploy-{uuid.uuid4().hex[:6]}"
    await register_namespace(e2e_stack.temporal_address, name)
    return name


@pytest.fixture(scope="module")
def deployed_processes(
    api: client.ApiClient,
    e2e_stack: E2EStack,
    deployed: list[dict[str, Any]],
    temporal_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Process]]:
    work = tmp_path_factory.mktemp("deployed")
    overrides = {
        "TEMPORAL_ADDRESS": e2e_stack.temporal_address,  # the session's Temporal
        "TEMPORAL_NAMESPACE": temporal_namespace,
        "CALDERA_METRICS_ADDRESS": "",  # no listener off loopback
        "CALDERA_SCHEDULER_OVERRIDE": "",  # Caldera's gang scheduler binds the pods
    }
    started: dict[str, Process] = {}
    try:
        for account, ready in (
            ("caldera-worker", "worker started"),
            ("caldera-forwarder", "leader elected"),
        ):
            argv, env = _local(deployed, account, overrides)
            env["KUBECONFIG"] = str(_kubeconfig(api, e2e_stack, account, work))
            p = processes.start(account, argv, work / "logs", env)
            started[account] = p
            processes.wait_until(p, lambda p=p, r=ready: r in processes.log_text(p), 60, "ready")
        yield started
    finally:
        for p in reversed(started.values()):
            processes.stop(p)


def _refusals(started: dict[str, Process]) -> dict[str, list[str]]:
    """The lines where RBAC refused an account ("User ... cannot create resource ..."). Other
    403s are not the accounts' fault: a namespace being deleted refuses new pods to anyone."""
    pattern = re.compile(r"\bcannot [a-z]+ (resource|path)\b")
    return {
        name: [line for line in processes.log_text(p).splitlines() if pattern.search(line)]
        for name, p in started.items()
    }


def test_the_deployed_accounts_run_a_job_through_every_side_effect(
    api: client.ApiClient, namespace: str, deployed_processes: dict[str, Process]
) -> None:
    claim = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": controlplane.STORAGE_CLASS,
        "resources": {"requests": {"storage": "1Gi"}},
    }
    name = f"rbac-{uuid.uuid4().hex[:6]}"
    doc = (
        make_job(name, namespace=namespace)
        .task("w", replicas=2, template=volcano.template({volcano.RUN: "8"}))
        .spec(
            minAvailable=2,
            schedulerName="volcano",
            plugins={"ssh": [], "svc": [], "env": []},
            volumes=[{"mountPath": "/data", "volumeClaim": claim}],
        )
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs", doc
    )
    # The plugins' objects live while the job runs (Volcano removes them once it finishes).
    volcano.phase_becomes(api, namespace, name, "Running", timeout=120)
    core = client.CoreV1Api(api)
    assert core.read_namespaced_secret(f"{name}-ssh", namespace).data  # the ssh plugin's pair
    assert core.read_namespaced_service(name, namespace).spec.cluster_ip == "None"
    # The PodGroup lives while the job runs (it is deleted once the job finishes).
    (group,) = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
    )["items"]
    assert group["status"]["phase"] not in ("", "Pending")  # written by the scheduler session
    volcano.phase_becomes(api, namespace, name, "Completed", timeout=120)
    pods = [
        p for p in core.list_namespaced_pod(namespace).items if p.metadata.name.startswith(name)
    ]
    assert len(pods) == 2 and all(p.spec.node_name for p in pods)  # bound by the worker
    # The worker wrote the claim name it generated into the Job's spec (its one spec write).
    claim_name = volcano.job(api, namespace, name)["spec"]["volumes"][0]["volumeClaimName"]
    pvc = core.read_namespaced_persistent_volume_claim(claim_name, namespace)
    assert pvc.status.phase == "Bound"
    assert _refusals(deployed_processes) == {a: [] for a in deployed_processes}


def test_the_deployed_worker_allocates_and_reserves_a_pods_device_claim(
    api: client.ApiClient, namespace: str, deployed_processes: dict[str, Process]
) -> None:
    """DRA under the worker's own token: the claim's finalizer (update), its allocation and
    reservedFor (resourceclaims/status, checked against resourceclaims/binding too), from the
    session nodes' `gpu.caldera.dev` slices (cli/devstack/devices.py)."""
    resource = client.ResourceV1Api(api)
    request = {"name": "gpu", "exactly": {"deviceClassName": devices.DEVICE_CLASS, "count": 1}}
    template = {
        "metadata": {"name": "one-gpu"},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }
    resource.create_namespaced_resource_claim_template(namespace, template)
    pod = volcano.template({volcano.RUN: "600"})
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    doc = (
        make_job("gpu", namespace=namespace)
        .task("w", replicas=1, template=pod)
        .spec(schedulerName="volcano")
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs", doc
    )
    volcano.phase_becomes(api, namespace, "gpu", "Running", timeout=120)
    [claim] = resource.list_namespaced_resource_claim(namespace).items
    [result] = claim.status.allocation.devices.results
    assert result.driver == devices.DRIVER
    assert "resource.kubernetes.io/delete-protection" in (claim.metadata.finalizers or [])
    [bound] = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    assert (result.pool, [r.name for r in claim.status.reserved_for]) == (
        bound.spec.node_name,
        [bound.metadata.name],
    )
    assert _refusals(deployed_processes) == {a: [] for a in deployed_processes}


def test_the_deployed_forwarder_consumes_a_command(
    api: client.ApiClient, namespace: str, deployed_processes: dict[str, Process]
) -> None:
    doc = (
        make_job("long", namespace=namespace)
        .task("w", replicas=1, template=volcano.template({volcano.RUN: "600"}))
        .spec(schedulerName="volcano")
        .manifest()
    )
    custom = client.CustomObjectsApi(api)
    created = custom.create_namespaced_custom_object(*volcano.JOBS, namespace, "jobs", doc)
    volcano.phase_becomes(api, namespace, "long", "Running", timeout=120)
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "long-abortjob"},
        "action": "AbortJob",
        "target": {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "long",
            "uid": created["metadata"]["uid"],
            "controller": True,
        },
    }
    custom.create_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", namespace, "commands", command
    )
    volcano.phase_becomes(api, namespace, "long", "Aborted", timeout=60)
    listed = custom.list_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", namespace, "commands"
    )
    assert listed["items"] == []  # deleted by the forwarder's account
    eventually(
        lambda: not client.CoreV1Api(api).list_namespaced_pod(namespace).items,
        60,
        "the aborted job's pod deleted by the worker's account",
    )
    assert _refusals(deployed_processes) == {a: [] for a in deployed_processes}


def _payload_texts(doc: Any) -> list[bytes]:
    """The decoded `data` of every payload in `temporal workflow show -o json` output."""
    if isinstance(doc, dict):
        found = [base64.b64decode(doc["data"])] if "metadata" in doc and "data" in doc else []
        return found + [t for v in doc.values() for t in _payload_texts(v)]
    if isinstance(doc, list):
        return [t for v in doc for t in _payload_texts(v)]
    return []


async def test_histories_are_encrypted_and_the_codec_server_shows_them(
    api: client.ApiClient,
    namespace: str,
    e2e_stack: E2EStack,
    temporal_namespace: str,
    deployed_processes: dict[str, Process],
    tmp_path: Path,
) -> None:
    secret = f"db-password-{uuid.uuid4().hex}"
    template = volcano.template({volcano.RUN: "1"})
    template["spec"]["containers"][0]["env"] = [{"name": "DB_PASSWORD", "value": secret}]
    doc = (
        make_job("secretive", namespace=namespace)
        .task("w", replicas=1, template=template)
        .spec(schedulerName="volcano")
        .manifest()
    )
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs", doc
    )
    volcano.phase_becomes(api, namespace, "secretive", "Completed", timeout=120)
    wid = keys.job_workflow_id(namespace, "secretive")

    # What the Temporal service stores: ciphertext only.
    plain = await Client.connect(e2e_stack.temporal_address, namespace=temporal_namespace)
    history = await plain.get_workflow_handle(wid).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert {p.metadata["encoding"] for p in started.input.payloads} == {b"binary/encrypted"}
    assert {p.metadata["encryption-key-id"] for p in started.input.payloads} == {b"e2e-1"}
    assert secret.encode() not in b"".join(e.SerializeToString() for e in history.events)

    # What an operator sees through the codec server.
    port = processes.free_port()
    server = processes.start(
        "codec-server",
        [sys.executable, "-m", "cli.main", "codec-server", f"--port={port}"],
        tmp_path,
        {
            "CALDERA_CODEC_KEY": CODEC_KEY,
            "CALDERA_CODEC_KEY_ID": SECRETS[("caldera-codec", "key-id")],
            "CALDERA_CODEC_TOKEN": "operator-token",
        },
    )
    try:
        processes.wait_until(
            server, lambda: codec_server.READY_LINE in processes.log_text(server), 30, "ready"
        )
        show = [temporal_dev.binary(), "workflow", "show", "-w", wid, "-o", "json"]
        show += ["--address", e2e_stack.temporal_address, "-n", temporal_namespace]
        codec = [f"--codec-endpoint=http://127.0.0.1:{port}", "--codec-auth=Bearer operator-token"]
        without = subprocess.run(show, capture_output=True, text=True, check=True, timeout=60)
        decoded = subprocess.run(
            [*show, *codec], capture_output=True, text=True, check=True, timeout=60
        )
    finally:
        processes.stop(server)
    assert not any(secret.encode() in t for t in _payload_texts(json.loads(without.stdout)))
    assert any(secret.encode() in t for t in _payload_texts(json.loads(decoded.stdout)))

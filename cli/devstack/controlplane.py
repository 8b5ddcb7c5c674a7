"""The local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok, on loopback with free ports, a static admin token and the
apiserver's self-signed certificate.

Binaries come from `deploy/devcluster/build.sh dev` (built once per machine into the cache).
Startup order follows envtest and kwokctl: etcd → apiserver → kubeconfig → the rest → nodes.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import yaml
from kubernetes import client, config
from pydantic import BaseModel

from activities import kube
from cli.devstack import devices, processes
from cli.devstack import nodes as fake_nodes
from cli.devstack.processes import PortSet, Process

REPO: Final = Path(__file__).resolve().parents[2]
BUILD_SCRIPT: Final = REPO / "deploy" / "devcluster" / "build.sh"
CALDERA_STAGES: Final = Path(__file__).with_name("caldera-stages.yaml")
STORAGE_CLASS: Final = "standard"
KCM_CONTROLLERS: Final = (
    "garbage-collector-controller",
    "namespace-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "job-controller",
    # Pods of ReplicaSets (and so Deployments) and StatefulSets, for PodGroups of any workload.
    "replicaset-controller",
    "deployment-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
    "pod-garbage-collector-controller",
    # DRA: a pod's ResourceClaimTemplates become claims, and the claims of pods gone are
    # released (reservedFor) and deleted; the devices come from cli/devstack/devices.py.
    "resourceclaim-controller",
    # PodDisruptionBudgets' status (disruptionsAllowed), which the pdb plugin reads.
    "disruption-controller",
    # ResourceQuotas' status (hard, and used as pods come and go), which the resourcequota
    # plugin reads; the apiserver's ResourceQuota admission charges pods as they are created.
    "resourcequota-controller",
    # Kubernetes' own PodGroups (GenericWorkload): the finalizer the PodGroupProtection
    # admission puts on each is taken off once no pod names it (without it one never goes).
    "podgroup-protection-controller",
    # Kubernetes' admin, edit and view roles take in the ClusterRoles labelled to join them:
    # Caldera's tenant roles for NamespaceQueues (deploy/base/rbac-tenant.yaml).
    "clusterrole-aggregation-controller",
)
# Kubernetes' own gang API (KEP-4671: Workloads, PodGroups, a pod's spec.schedulingGroup),
# beta and off by default in 1.37; `models.kube_gangs` says how Caldera serves it.
FEATURE_GATES: Final = "--feature-gates=GenericWorkload=true"
# The apiserver alone also keeps a batch/v1 Job's spec.scheduling (WorkloadWithJob, alpha; the
# field is dropped without it), which Caldera's Job controller follows
# (`controllers.batchjob.workload`). kube-controller-manager is not given it: its built-in Job
# controller, the benchmarks' peer, must keep making no Workload for every Job.
APISERVER_FEATURE_GATES: Final = f"{FEATURE_GATES},WorkloadWithJob=true"
RUNTIME_CONFIG: Final = "--runtime-config=scheduling.k8s.io/v1beta1=true"


class ControlPlane(BaseModel):
    """A running control plane: where it lives and what was started."""

    workdir: str
    kubeconfig: str
    server: str
    bin_dir: str  # where kubectl and the control-plane binaries live
    processes: list[Process]


def build_binaries(target: str, *more: str) -> Path:
    """Build (or reuse) the binaries of build.sh's targets (`dev`, `helm`, `server`, `all`);
    returns their directory. What is built is reported on stderr as it goes, one line per
    binary (a cold `server` build takes minutes); cached binaries are not listed."""
    argv = [str(BUILD_SCRIPT), "-q", target, *more]
    sys.stderr.flush()
    try:
        # Its progress lines to this process's stderr (fd 2): stdout stays the caller's.
        subprocess.run(argv, check=True, stdout=2)
    except subprocess.CalledProcessError as e:
        raise processes.StartupError(
            f"{BUILD_SCRIPT.relative_to(REPO)} {' '.join(argv[2:])} failed"
            f" (exit {e.returncode}): see its lines above"
        ) from e
    out = subprocess.run(
        [str(BUILD_SCRIPT), "--bin-dir"], check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    return Path(out.strip())


def _credentials(d: Path) -> str:
    pki = d / "pki"
    pki.mkdir(parents=True, exist_ok=True)
    if not (pki / "sa.key").exists():
        subprocess.run(
            ["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            ["openssl", "rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub")],
            check=True,
            capture_output=True,
        )
    token = secrets.token_hex(16)
    (d / "tokens.csv").write_text(f'{token},admin,admin-uid,"system:masters"\n')
    return token


def _kubeconfig(d: Path, server: str, token: str) -> Path:
    path = d / "kubeconfig"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "caldera",
                "cluster": {
                    "server": server,
                    "certificate-authority": str(d / "pki" / "apiserver.crt"),
                },
            }
        ],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [{"name": "caldera", "context": {"cluster": "caldera", "user": "admin"}}],
        "current-context": "caldera",
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _ports(d: Path) -> PortSet:
    """Ports kept across restarts of one work dir, so etcd's stored member URLs stay valid."""
    path = d / "ports.json"
    if path.exists():
        saved = PortSet(json.loads(path.read_text()))
        if all(processes.port_free(p) for p in saved.ports.values()):
            return saved
    ports = PortSet.pick("etcd", "peer", "apiserver", "kcm", "scheduler")
    path.write_text(json.dumps(ports.ports))
    return ports


def _kwok_config(d: Path, bin_dir: Path) -> Path:
    upstream = sorted((bin_dir.parent / "stages").glob("*.yaml"))
    parts = [p.read_text() for p in upstream] + [CALDERA_STAGES.read_text()]
    path = d / "kwok.yaml"
    path.write_text("\n---\n".join(parts))
    return path


def start(workdir: Path, template: fake_nodes.NodeTemplate, timeout: float = 120.0) -> ControlPlane:
    """Start everything and return once the fake nodes are Ready."""
    bin_dir = build_binaries("dev")
    d = workdir
    d.mkdir(parents=True, exist_ok=True)
    logs = d / "logs"
    ports = _ports(d)
    token = _credentials(d)
    started: list[Process] = []
    try:
        etcd = processes.start(
            "etcd",
            [
                str(bin_dir / "etcd"),
                "--name=node0",
                f"--data-dir={d / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{ports['etcd']}",
                f"--advertise-client-urls=http://127.0.0.1:{ports['etcd']}",
                f"--listen-peer-urls=http://127.0.0.1:{ports['peer']}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{ports['peer']}",
                f"--initial-cluster=node0=http://127.0.0.1:{ports['peer']}",
                "--initial-cluster-state=new",
                "--unsafe-no-fsync=true",
                "--auto-compaction-retention=1",
                "--log-level=warn",
            ],
            logs,
        )
        started.append(etcd)
        processes.wait_until(
            etcd,
            lambda: processes.http_ok(f"http://127.0.0.1:{ports['etcd']}/health"),
            30,
            "healthy",
        )

        server = f"https://127.0.0.1:{ports['apiserver']}"
        apiserver = processes.start(
            "kube-apiserver",
            [
                str(bin_dir / "kube-apiserver"),
                f"--etcd-servers=http://127.0.0.1:{ports['etcd']}",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['apiserver']}",
                f"--cert-dir={d / 'pki'}",
                f"--token-auth-file={d / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={d / 'pki' / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'pki' / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--allow-privileged=true",
                "--enable-priority-and-fairness=false",
                APISERVER_FEATURE_GATES,
                RUNTIME_CONFIG,
                "--profiling=false",
                "--v=1",
            ],
            logs,
        )
        started.append(apiserver)
        processes.wait_until(
            apiserver,
            lambda: processes.http_ok(f"{server}/readyz", insecure=True),
            timeout,
            "ready",
        )
        kubeconfig = _kubeconfig(d, server, token)

        common = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            "--leader-elect=false",
            FEATURE_GATES,
            "--v=1",
        ]
        started.append(
            processes.start(
                "kube-controller-manager",
                [
                    str(bin_dir / "kube-controller-manager"),
                    *common,
                    f"--secure-port={ports['kcm']}",
                    f"--controllers={','.join(KCM_CONTROLLERS)}",
                    "--use-service-account-credentials=false",
                    "--enable-hostpath-provisioner=true",
                    f"--service-account-private-key-file={d / 'pki' / 'sa.key'}",
                    f"--root-ca-file={d / 'pki' / 'apiserver.crt'}",
                    "--kube-api-qps=200",
                    "--kube-api-burst=400",
                ],
                logs,
            )
        )
        started.append(
            processes.start(
                "kube-scheduler",
                [
                    str(bin_dir / "kube-scheduler"),
                    *common,
                    f"--secure-port={ports['scheduler']}",
                ],
                logs,
            )
        )
        started.append(
            processes.start(
                "kwok",
                [
                    str(bin_dir / "kwok"),
                    f"--kubeconfig={kubeconfig}",
                    f"--config={_kwok_config(d, bin_dir)}",
                    "--manage-all-nodes=false",
                    f"--manage-nodes-with-annotation-selector={fake_nodes.KWOK_SELECTOR}",
                    "--cidr=10.244.0.0/16",
                ],
                logs,
            )
        )
        plane = ControlPlane(
            workdir=str(d),
            kubeconfig=str(kubeconfig),
            server=server,
            bin_dir=str(bin_dir),
            processes=started,
        )
        _seed(plane, template, timeout)
        return plane
    except BaseException:
        for p in reversed(started):
            processes.stop(p)
        raise


def api_client(kubeconfig: str) -> client.ApiClient:
    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig
    )
    return api


def _seed(plane: ControlPlane, template: fake_nodes.NodeTemplate, timeout: float) -> None:
    """The dev StorageClass and the fake nodes; waits for every node to be Ready."""
    api = api_client(plane.kubeconfig)
    storage = client.StorageV1Api(api)
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "kubernetes.io/host-path",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    try:
        storage.create_storage_class(kube.body(sc))
    except client.ApiException as e:
        if e.status != 409:  # already there from an earlier start of this work dir
            raise
    ensure_nodes(api, template, timeout)


def ensure_nodes(api: client.ApiClient, template: fake_nodes.NodeTemplate, timeout: float) -> None:
    """The template's nodes, made if missing, with their GPUs published (none: nothing is
    touched, so a template without GPUs leaves other nodes' slices alone); waits for Ready."""
    core = client.CoreV1Api(api)
    existing = {n.metadata.name for n in core.list_node().items if n.metadata}
    for name in template.names():
        if name not in existing:
            core.create_node(kube.body(template.manifest(name)))
    devices.publish(api, template.names(), template.gpus)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = {n.metadata.name for n in core.list_node().items if n.metadata and _ready(n)}
        if ready.issuperset(template.names()):
            return
        time.sleep(0.3)
    raise processes.StartupError(f"fake nodes not Ready after {timeout:.0f}s: check kwok's log")


def _ready(node: client.V1Node) -> bool:
    conditions = node.status.conditions or [] if node.status else []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def stop(plane: ControlPlane, remove: bool = False) -> None:
    """Stop in reverse start order, by PID; optionally delete the work directory."""
    for p in reversed(plane.processes):
        processes.stop(p)
    if remove:
        shutil.rmtree(plane.workdir, ignore_errors=True)

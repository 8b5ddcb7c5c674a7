"""Which Kubernetes permissions each Caldera process needs, call by call, and what it must not have.

`NEEDS` is the table behind deploy/base/rbac-*.yaml: for every Kubernetes client method a
process's code refers to (found by `client_calls`, which walks the process's own import
closure, so a new call anywhere fails the unit test until it is listed here), the permissions
that call needs. Custom-object calls name their resources here because the method alone does
not say which. List endpoints handed to `service/reflector.py` are listed *and watched*.

`DENIED` is what least privilege means for each process; the unit test evaluates both tables
against the manifests offline and tests/e2e/test_deploy.py asks a real apiserver
(SubjectAccessReview) after applying the RBAC objects.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes import client

ROOT: Final = Path(__file__).resolve().parents[1]
DEPLOY: Final = ROOT / "deploy"
NAMESPACE: Final = "caldera-system"
LEASE: Final = "caldera-forwarder"


@dataclass(frozen=True, order=True)
class Permission:
    verb: str
    resource: str  # "pods" or "pods/binding"
    group: str = ""
    namespace: str | None = None  # None: in every namespace (or cluster-scoped)
    name: str | None = None  # None: any object

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        name = f" {self.name}" if self.name else ""
        group = f".{self.group}" if self.group else ""
        return f"{self.verb} {self.resource}{group}{name}{where}"


def _p(verbs: str, resource: str, group: str = "", **kw: str) -> tuple[Permission, ...]:
    return tuple(Permission(v, resource, group, **kw) for v in verbs.split())


BATCH, SCHED, BUS = "batch.volcano.sh", "scheduling.volcano.sh", "bus.volcano.sh"
FLOW = "flow.volcano.sh"
TOPOLOGY = "topology.volcano.sh"
RESOURCE = "resource.k8s.io"  # Dynamic Resource Allocation
KUBE_SCHED = "scheduling.k8s.io"  # Kubernetes' own gang API (Workloads, PodGroups)
Calls = Mapping[tuple[str, str], tuple[Permission, ...]]

# (file, client method) → permissions, per process.
NEEDS: Final[Mapping[str, Calls]] = {
    "caldera-worker": {
        ("activities/scheduler/binding.py", "create_namespaced_pod_binding"): _p(
            "create", "pods/binding"
        ),
        ("activities/scheduler/binding.py", "read_namespaced_pod"): _p("get", "pods"),
        ("activities/scheduler/binding.py", "read_node"): _p("get", "nodes"),
        ("activities/scheduler/binding.py", "patch_namespaced_pod_status"): _p(
            "patch", "pods/status"
        ),
        ("activities/scheduler/volume_binding.py", "read_namespaced_persistent_volume_claim"): _p(
            "get", "persistentvolumeclaims"
        ),
        ("activities/scheduler/volume_binding.py", "patch_namespaced_persistent_volume_claim"): _p(
            "patch", "persistentvolumeclaims"
        ),
        ("activities/scheduler/volume_binding.py", "read_persistent_volume"): _p(
            "get", "persistentvolumes"
        ),
        ("activities/scheduler/volume_binding.py", "patch_persistent_volume"): _p(
            "patch", "persistentvolumes"
        ),
        # The scheduler's cluster cache: list then watch through service/reflector.py.
        ("activities/scheduler/informer.py", "list_node"): _p("list watch", "nodes"),
        ("activities/scheduler/informer.py", "list_pod_for_all_namespaces"): _p(
            "list watch", "pods"
        ),
        ("activities/scheduler/informer.py", "list_persistent_volume_claim_for_all_namespaces"): _p(
            "list watch", "persistentvolumeclaims"
        ),
        ("activities/scheduler/informer.py", "list_persistent_volume"): _p(
            "list watch", "persistentvolumes"
        ),
        ("activities/scheduler/informer.py", "list_storage_class"): _p(
            "list watch", "storageclasses", "storage.k8s.io"
        ),
        ("activities/scheduler/informer.py", "list_csi_node"): _p(
            "list watch", "csinodes", "storage.k8s.io"
        ),
        ("activities/scheduler/informer.py", "list_priority_class"): _p(
            "list watch", "priorityclasses", "scheduling.k8s.io"
        ),
        ("activities/scheduler/informer.py", "list_pod_disruption_budget_for_all_namespaces"): _p(
            "list watch", "poddisruptionbudgets", "policy"
        ),
        ("activities/scheduler/informer.py", "list_resource_quota_for_all_namespaces"): _p(
            "list watch", "resourcequotas"
        ),
        # Dynamic Resource Allocation in the cache: the devices, their classes, the claims.
        ("activities/scheduler/informer.py", "list_resource_slice"): _p(
            "list watch", "resourceslices", RESOURCE
        ),
        ("activities/scheduler/informer.py", "list_device_class"): _p(
            "list watch", "deviceclasses", RESOURCE
        ),
        ("activities/scheduler/informer.py", "list_resource_claim_for_all_namespaces"): _p(
            "list watch", "resourceclaims", RESOURCE
        ),
        # A placed pod's claims before its binding (activities/scheduler/resourceclaims.py): read,
        # the finalizer by a normal update, then allocation and reservedFor in the status.
        ("activities/scheduler/resourceclaims.py", "read_namespaced_resource_claim"): _p(
            "get", "resourceclaims", RESOURCE
        ),
        ("activities/scheduler/resourceclaims.py", "replace_namespaced_resource_claim"): _p(
            "update", "resourceclaims", RESOURCE
        ),
        ("activities/scheduler/resourceclaims.py", "replace_namespaced_resource_claim_status"): _p(
            "update", "resourceclaims/status", RESOURCE
        ),
        ("activities/scheduler/informer.py", "list_cluster_custom_object"): (
            _p("list watch", "podgroups", SCHED)
            + _p("list watch", "queues", SCHED)
            + _p("list watch", "namespacequeues", SCHED)
            + _p("list watch", "hypernodes", TOPOLOGY)
        ),
        ("activities/controllers/hypernodes.py", "list_node"): _p("list", "nodes"),
        ("activities/controllers/hypernodes.py", "list_cluster_custom_object"): _p(
            "list", "hypernodes", TOPOLOGY
        ),
        ("activities/controllers/hypernodes.py", "create_cluster_custom_object"): _p(
            "create", "hypernodes", TOPOLOGY
        ),
        ("activities/controllers/hypernodes.py", "patch_cluster_custom_object"): _p(
            "patch", "hypernodes", TOPOLOGY
        ),
        ("activities/controllers/hypernodes.py", "patch_cluster_custom_object_status"): _p(
            "patch", "hypernodes/status", TOPOLOGY
        ),
        ("activities/controllers/hypernodes.py", "delete_cluster_custom_object"): _p(
            "delete", "hypernodes", TOPOLOGY
        ),
        ("activities/kube_events.py", "create_namespaced_event"): _p("create", "events"),
        # batch/v1 Jobs managed by Caldera (BatchJobWorkflow): pods, status, TTL deletion.
        ("activities/controllers/batchpods.py", "create_namespaced_pod"): _p("create", "pods"),
        ("activities/controllers/batchpods.py", "read_namespaced_pod"): _p("get", "pods"),
        ("activities/controllers/batchpods.py", "patch_namespaced_pod"): _p("patch", "pods"),
        ("activities/controllers/batchpods.py", "delete_namespaced_pod"): _p("delete", "pods"),
        ("activities/controllers/batchjobs.py", "patch_namespaced_job_status"): _p(
            "patch", "jobs/status", "batch"
        ),
        ("activities/controllers/batchjobs.py", "delete_namespaced_job"): _p(
            "delete", "jobs", "batch"
        ),
        ("activities/controllers/batchjobs.py", "create_namespaced_custom_object"): _p(
            "create", "podgroups", SCHED
        ),
        # A Job with spec.scheduling: its Kubernetes Workload and PodGroup, made (read back when
        # they exist) and given a changed gang minCount.
        ("activities/controllers/batchjobs.py", "create_namespaced_workload"): _p(
            "create", "workloads", KUBE_SCHED
        ),
        ("activities/controllers/batchjobs.py", "read_namespaced_workload"): _p(
            "get", "workloads", KUBE_SCHED
        ),
        ("activities/controllers/batchjobs.py", "patch_namespaced_workload"): _p(
            "patch", "workloads", KUBE_SCHED
        ),
        ("activities/controllers/batchjobs.py", "create_namespaced_pod_group"): _p(
            "create", "podgroups", KUBE_SCHED
        ),
        ("activities/controllers/batchjobs.py", "read_namespaced_pod_group"): _p(
            "get", "podgroups", KUBE_SCHED
        ),
        ("activities/controllers/batchjobs.py", "patch_namespaced_pod_group"): _p(
            "patch", "podgroups", KUBE_SCHED
        ),
        ("activities/controllers/jobs.py", "delete_namespaced_custom_object"): _p(
            "delete", "jobs", BATCH
        ),
        (
            "activities/controllers/volume_claims.py",
            "create_namespaced_persistent_volume_claim",
        ): _p("create", "persistentvolumeclaims"),
        ("activities/controllers/volume_claims.py", "read_namespaced_persistent_volume_claim"): _p(
            "get", "persistentvolumeclaims"
        ),
        ("activities/controllers/volume_claims.py", "get_namespaced_custom_object"): _p(
            "get", "jobs", BATCH
        ),
        ("activities/controllers/volume_claims.py", "replace_namespaced_custom_object"): _p(
            "update", "jobs", BATCH
        ),
        # Plugins: svc (ConfigMap, Service, NetworkPolicy), ssh (the Secret <job>-ssh) and ray
        # (the Service <job>-head-svc).
        ("activities/controllers/plugins.py", "read_namespaced_config_map"): _p(
            "get", "configmaps"
        ),
        # The scheduler's configuration (CALDERA_SCHEDULER_CONFIGMAP).
        ("activities/configmaps.py", "read_namespaced_config_map"): _p("get", "configmaps"),
        ("activities/controllers/plugins.py", "create_namespaced_config_map"): _p(
            "create", "configmaps"
        ),
        ("activities/controllers/plugins.py", "replace_namespaced_config_map"): _p(
            "update", "configmaps"
        ),
        ("activities/controllers/plugins.py", "delete_namespaced_config_map"): _p(
            "delete", "configmaps"
        ),
        ("activities/controllers/plugins.py", "create_namespaced_service"): _p(
            "create", "services"
        ),
        ("activities/controllers/plugins.py", "delete_namespaced_service"): _p(
            "delete", "services"
        ),
        ("activities/controllers/plugins.py", "create_namespaced_network_policy"): _p(
            "create", "networkpolicies", "networking.k8s.io"
        ),
        ("activities/controllers/plugins.py", "delete_namespaced_network_policy"): _p(
            "delete", "networkpolicies", "networking.k8s.io"
        ),
        ("activities/controllers/plugins.py", "read_namespaced_secret"): _p("get", "secrets"),
        ("activities/controllers/plugins.py", "create_namespaced_secret"): _p("create", "secrets"),
        ("activities/controllers/plugins.py", "replace_namespaced_secret"): _p("update", "secrets"),
        ("activities/controllers/plugins.py", "delete_namespaced_secret"): _p("delete", "secrets"),
        ("activities/controllers/podgroups.py", "list_priority_class"): _p(
            "list", "priorityclasses", "scheduling.k8s.io"
        ),
        ("activities/controllers/podgroups.py", "create_namespaced_custom_object"): _p(
            "create", "podgroups", SCHED
        ),
        ("activities/controllers/podgroups.py", "get_namespaced_custom_object"): _p(
            "get", "podgroups", SCHED
        ),
        ("activities/controllers/podgroups.py", "patch_namespaced_custom_object"): _p(
            "patch", "podgroups", SCHED
        ),
        ("activities/controllers/podgroups.py", "delete_namespaced_custom_object"): _p(
            "delete", "podgroups", SCHED
        ),
        # PodGroups for pods Caldera did not create (PodGroupWorkflow).
        ("activities/controllers/workloads.py", "read_namespaced_replica_set"): _p(
            "get", "replicasets", "apps"
        ),
        ("activities/controllers/workloads.py", "read_namespaced_stateful_set"): _p(
            "get", "statefulsets", "apps"
        ),
        ("activities/controllers/workloads.py", "read_namespaced_daemon_set"): _p(
            "get", "daemonsets", "apps"
        ),
        ("activities/controllers/workloads.py", "read_namespaced_deployment"): _p(
            "get", "deployments", "apps"
        ),
        ("activities/controllers/workloads.py", "read_namespaced_job"): _p("get", "jobs", "batch"),
        # A Kubernetes PodGroup's Workload, read for its annotations (its queue).
        ("activities/controllers/workloads.py", "read_namespaced_workload"): _p(
            "get", "workloads", KUBE_SCHED
        ),
        ("activities/controllers/workloads.py", "create_namespaced_custom_object"): _p(
            "create", "podgroups", SCHED
        ),
        ("activities/controllers/workloads.py", "get_namespaced_custom_object"): _p(
            "get", "podgroups", SCHED
        ),
        ("activities/controllers/workloads.py", "patch_namespaced_custom_object"): _p(
            "patch", "podgroups", SCHED
        ),
        ("activities/controllers/workloads.py", "patch_namespaced_pod"): _p("patch", "pods"),
        ("activities/scheduler/evictions.py", "patch_namespaced_pod_status"): _p(
            "patch", "pods/status"
        ),
        ("activities/scheduler/evictions.py", "delete_namespaced_pod"): _p("delete", "pods"),
        ("activities/controllers/pods.py", "create_namespaced_pod"): _p("create", "pods"),
        ("activities/controllers/pods.py", "patch_namespaced_pod"): _p("patch", "pods"),
        ("activities/controllers/pods.py", "read_namespaced_pod"): _p("get", "pods"),
        ("activities/controllers/pods.py", "delete_namespaced_pod"): _p("delete", "pods"),
        ("activities/controllers/queues.py", "patch_cluster_custom_object"): _p(
            "patch", "queues", SCHED
        ),
        ("activities/controllers/queues.py", "patch_cluster_custom_object_status"): _p(
            "patch", "queues/status", SCHED
        ),
        ("activities/scheduler/sessions.py", "patch_cluster_custom_object_status"): _p(
            "patch", "queues/status", SCHED
        ),
        # A NamespaceQueue's status.allocated.
        ("activities/scheduler/sessions.py", "patch_namespaced_custom_object_status"): _p(
            "patch", "podgroups/status", SCHED
        )
        + _p("patch", "namespacequeues/status", SCHED),
        # NamespaceQueues (NamespaceQueueWorkflow): every NamespaceQueue and Queue read to place
        # one in its hierarchy; its state, conditions and counters written.
        ("activities/controllers/namespacequeues.py", "list_cluster_custom_object"): _p(
            "list", "namespacequeues", SCHED
        )
        + _p("list", "queues", SCHED),
        ("activities/controllers/namespacequeues.py", "patch_namespaced_custom_object_status"): _p(
            "patch", "namespacequeues/status", SCHED
        ),
        # PodGroupInitiallyScheduled on the Kubernetes PodGroup a mirrored gang stands for.
        ("activities/scheduler/sessions.py", "patch_namespaced_pod_group_status"): _p(
            "patch", "podgroups/status", KUBE_SCHED
        ),
        # Job, CronJob and JobFlow status (write_job_status, write_cron_job_status,
        # write_flow_status).
        ("activities/status.py", "patch_namespaced_custom_object_status"): (
            _p("patch", "jobs/status", BATCH)
            + _p("patch", "cronjobs/status", BATCH)
            + _p("patch", "jobflows/status", FLOW)
        ),
        # JobFlows (JobFlowWorkflow): Jobs from JobTemplates, the flow's and templates' status.
        ("activities/controllers/jobflows.py", "get_namespaced_custom_object"): _p(
            "get", "jobtemplates", FLOW
        ),
        ("activities/controllers/jobflows.py", "create_namespaced_custom_object"): _p(
            "create", "jobs", BATCH
        ),
        ("activities/controllers/jobflows.py", "delete_namespaced_custom_object"): _p(
            "delete", "jobs", BATCH
        ),
        ("activities/controllers/jobflows.py", "list_namespaced_custom_object"): _p(
            "list", "jobs", BATCH
        ),
        ("activities/controllers/jobflows.py", "replace_namespaced_custom_object_status"): _p(
            "update", "jobtemplates/status", FLOW
        ),
        # CronJobs (CronRunWorkflow): each run's Job, read back when its name is taken.
        ("activities/controllers/cronjobs.py", "create_namespaced_custom_object"): _p(
            "create", "jobs", BATCH
        ),
        ("activities/controllers/cronjobs.py", "get_namespaced_custom_object"): _p(
            "get", "jobs", BATCH
        ),
        # Worker clusters (activities/dispatch/cluster_secrets.py): their registration Secrets,
        # labelled, in Caldera's namespace alone. The probe's own calls
        # (activities/dispatch/clusters.py) go to the worker clusters, with the Secret's kubeconfig:
        # nothing of the manager's.
        ("activities/dispatch/cluster_secrets.py", "list_namespaced_secret"): _p(
            "list", "secrets", namespace=NAMESPACE
        ),
        ("activities/dispatch/clusters.py", "get_code"): (),
        ("activities/dispatch/clusters.py", "list_node"): (),
        ("activities/dispatch/clusters.py", "list_pod_for_all_namespaces"): (),
        ("activities/dispatch/probes.py", "get_cluster_custom_object"): (),  # the job's queue there
        # Dispatched Jobs (DispatchWorkflow): the manager's Job gets its dispatched-to
        # annotation by a read and an update (activities/dispatch/mirroring.py; its status and
        # Events go by the writes above). The calls to the copies go to the worker clusters, with
        # the Secret's kubeconfig: nothing of the manager's.
        ("activities/dispatch/mirroring.py", "get_namespaced_custom_object"): _p(
            "get", "jobs", BATCH
        ),
        ("activities/dispatch/mirroring.py", "replace_namespaced_custom_object"): _p(
            "update", "jobs", BATCH
        ),
        ("activities/dispatch/remote.py", "get_namespaced_custom_object"): (),
        ("activities/dispatch/copies.py", "create_namespace"): (),
        ("activities/dispatch/copies.py", "get_cluster_custom_object"): (),
        ("activities/dispatch/copies.py", "create_namespaced_custom_object"): (),
        ("activities/dispatch/copies.py", "delete_namespaced_custom_object"): (),
        ("activities/dispatch/copies.py", "replace_namespaced_custom_object"): (),  # a spec change
        ("activities/dispatch/follow.py", "patch_namespaced_custom_object"): (),
        ("activities/dispatch/follow.py", "list_namespaced_event"): (),
        ("activities/dispatch/copywatch.py", "list_cluster_custom_object"): (),
    },
    "caldera-forwarder": {
        ("forwarder/kube.py", "list_pod_for_all_namespaces"): _p("list watch", "pods"),
        # Kubernetes' own PodGroups, which pods of Caldera's scheduler may name.
        ("forwarder/kube.py", "list_pod_group_for_all_namespaces"): _p(
            "list watch", "podgroups", KUBE_SCHED
        ),
        ("forwarder/kube.py", "list_cluster_custom_object"): (
            _p("list watch", "jobs", BATCH)
            + _p("list watch", "podgroups", SCHED)
            + _p("list watch", "queues", SCHED)
            + _p("list watch", "namespacequeues", SCHED)
            + _p("list watch", "commands", BUS)
            + _p("list watch", "jobflows", FLOW)
            + _p("list watch", "jobtemplates", FLOW)
            + _p("list watch", "cronjobs", BATCH)
        ),
        ("forwarder/kube.py", "delete_namespaced_custom_object"): _p("delete", "commands", BUS),
        # Every batch/v1 Job; those with Caldera's spec.managedBy are picked client side.
        ("forwarder/kube.py", "list_job_for_all_namespaces"): _p("list watch", "jobs", "batch"),
        # Namespaces being deleted: their workflows are told at once.
        ("forwarder/kube.py", "list_namespace"): _p("list watch", "namespaces"),
        ("forwarder/leader.py", "read_namespaced_lease"): _p(
            "get", "leases", "coordination.k8s.io", namespace=NAMESPACE, name=LEASE
        ),
        ("forwarder/leader.py", "replace_namespaced_lease"): _p(
            "update", "leases", "coordination.k8s.io", namespace=NAMESPACE, name=LEASE
        ),
        ("forwarder/leader.py", "create_namespaced_lease"): _p(
            "create", "leases", "coordination.k8s.io", namespace=NAMESPACE
        ),
    },
    "caldera-webhook": {
        ("admission/lookup.py", "get_cluster_custom_object"): _p("get", "queues", SCHED),
        ("admission/lookup.py", "list_cluster_custom_object"): (
            _p("list watch", "queues", SCHED) + _p("list watch", "namespacequeues", SCHED)
        ),
        ("admission/lookup.py", "get_namespaced_custom_object"): _p(
            "get", "namespacequeues", SCHED
        ),
        # A namespace's NamespaceQueues, and its PodGroups when one of them is deleted.
        ("admission/lookup.py", "list_namespaced_custom_object"): (
            _p("list", "namespacequeues", SCHED) + _p("list", "podgroups", SCHED)
        ),
    },
}

# Needed without a client call of its own: owner references with blockOwnerDeletion on a Job
# (pods, PodGroups, plugin objects; pods of batch/v1 Jobs) need `update jobs/finalizers` on
# clusters that run the OwnerReferencesPermissionEnforcement admission plugin.
IMPLICIT: Final[Mapping[str, tuple[Permission, ...]]] = {
    "caldera-worker": (
        _p("update", "jobs/finalizers", BATCH)
        + _p("update", "jobs/finalizers", "batch")
        # The PodGroup of a bare pod blocks the pod's deletion
        # (activities/controllers/workloads.py).
        + _p("update", "pods/finalizers")
        # A flow's Jobs block the JobFlow's deletion (activities/controllers/jobflows.py).
        + _p("update", "jobflows/finalizers", FLOW)
        # A CronJob's Jobs block the CronJob's deletion (activities/controllers/cronjobs.py).
        + _p("update", "cronjobs/finalizers", BATCH)
        # A claim's status update that changes allocation or reservedFor is also checked
        # against the synthetic resourceclaims/binding (apiserver 1.36+, the gate
        # DRAResourceClaimGranularStatusAuthorization, on by default), as kube-scheduler's is.
        + _p("update", "resourceclaims/binding", RESOURCE)
    ),
}

# Where each process's code starts (its import closure is scanned for client calls).
ENTRY: Final[Mapping[str, str]] = {
    "caldera-worker": "worker",
    "caldera-forwarder": "forwarder.main",
    "caldera-webhook": "admission.server",
}

ANY_NS = "team-a"  # a namespace none of the processes is tied to
DENIED: Final[Mapping[str, tuple[Permission, ...]]] = {
    "caldera-worker": (
        *_p("list watch", "secrets"),
        *_p("list watch", "secrets", namespace=ANY_NS),
        # It writes status and generated claim names (an update: the webhook admits no other
        # spec change); it never patches a Job nor watches them (it creates a JobFlow's Jobs
        # and lists a JobTemplate's by label). Flows and templates it never changes.
        *_p("patch watch", "jobs", BATCH),
        *_p("update patch", "jobflows", FLOW),
        *_p("update patch delete", "jobtemplates", FLOW),
        *_p("create delete", "nodes"),
        # Devices are a DRA driver's to publish, their classes the admin's; the claims'
        # spec is the user's (the ResourceClaim controller makes and deletes claims).
        *_p("create update delete", "resourceslices", RESOURCE),
        *_p("create update delete", "deviceclasses", RESOURCE),
        *_p("create delete", "resourceclaims", RESOURCE, namespace=ANY_NS),
        *_p("create delete", "commands", BUS),
        # A NamespaceQueue's spec is its tenant's: the worker writes only its status.
        *_p("create update patch delete", "namespacequeues", SCHED),
        *_p("get", "leases", "coordination.k8s.io", namespace=NAMESPACE, name=LEASE),
        *_p("create", "clusterroles", "rbac.authorization.k8s.io"),
        *_p("create", "serviceaccounts/token", namespace=ANY_NS),
        *_p("create", "pods/exec", namespace=ANY_NS),
    ),
    "caldera-forwarder": (
        *_p("create delete patch", "pods"),
        *_p("create", "pods/binding"),
        *_p("patch", "pods/status"),
        *_p("get list watch", "secrets"),
        *_p("get", "secrets", namespace=ANY_NS, name="job-ssh"),
        *_p("create update patch delete", "jobs", BATCH),
        *_p("create", "commands", BUS),
        *_p("patch", "podgroups/status", SCHED),
        *_p("patch", "namespacequeues/status", SCHED),
        *_p("create", "events"),
        *_p("get update", "leases", "coordination.k8s.io", namespace=NAMESPACE, name="other"),
        *_p("get", "leases", "coordination.k8s.io", namespace="kube-system", name=LEASE),
    ),
    "caldera-webhook": (
        *_p("create update patch delete", "queues", SCHED),
        *_p("patch update", "queues/status", SCHED),
        *_p("create update patch delete", "namespacequeues", SCHED),
        *_p("patch", "namespacequeues/status", SCHED),
        *_p("get watch", "podgroups", SCHED),
        *_p("get list", "pods"),
        *_p("get list", "secrets"),
        *_p("create", "events"),
        *_p("create", "leases", "coordination.k8s.io", namespace=NAMESPACE),
    ),
}


@functools.cache
def _api_methods() -> frozenset[str]:
    """Every endpoint method of the generated client (`*Api` classes)."""
    names: set[str] = set()
    for attr in dir(client):  # the package loads its classes lazily, on attribute access
        cls = getattr(client, attr) if attr.endswith("Api") else None
        if inspect.isclass(cls):
            members = vars(cls)  # an endpoint `m` always has its `m_with_http_info`
            names |= {m for m in members if f"{m}_with_http_info" in members}
    return frozenset(names)


def _module_file(module: str) -> Path | None:
    base = ROOT / module.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def import_closure(entry: str) -> dict[str, Path]:
    """The project's own modules `entry` imports, directly or not (absolute imports only)."""
    seen: dict[str, Path] = {}
    todo = [entry]
    while todo:
        module = todo.pop()
        path = _module_file(module)
        if module in seen or path is None:
            continue
        seen[module] = path
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return seen


def client_calls(entry: str) -> set[tuple[str, str]]:
    """(file, method) for every Kubernetes client endpoint the process's code refers to."""
    methods = _api_methods()
    found = set()
    for path in import_closure(entry).values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in methods:
                found.add((str(path.relative_to(ROOT)), node.attr))
    return found


def needed(process: str) -> tuple[Permission, ...]:
    perms = {p for ps in NEEDS[process].values() for p in ps} | set(IMPLICIT.get(process, ()))
    return tuple(sorted(perms))


# --- the manifests, read without kustomize (the e2e test renders them with kubectl) ---


def _kustomization(directory: Path) -> dict[str, Any]:
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        path = directory / name
        if path.is_file():
            doc: dict[str, Any] = yaml.safe_load(path.read_text())
            return doc
    raise FileNotFoundError(f"no kustomization in {directory}")


def manifests(directory: Path = DEPLOY / "base") -> list[dict[str, Any]]:
    """Every object the kustomization's `resources` name, recursively (no transformers)."""
    docs: list[dict[str, Any]] = []
    for entry in _kustomization(directory).get("resources", []):
        path = (directory / entry).resolve()
        if path.is_dir():
            docs += manifests(path)
        else:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _rule_allows(rule: Mapping[str, Any], p: Permission) -> bool:
    def has(key: str, value: str) -> bool:
        values = rule.get(key) or []
        return "*" in values or value in values

    names = rule.get("resourceNames") or []
    return (
        has("verbs", p.verb)
        and has("apiGroups", p.group)
        and has("resources", p.resource)
        and (not names or p.name in names)
    )


def allows(docs: list[dict[str, Any]], account: str, p: Permission) -> bool:
    """The RBAC authorizer's answer for system:serviceaccount:caldera-system:<account>."""
    roles = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
        for d in docs
        if d["kind"] in ("ClusterRole", "Role")
    }
    for binding in docs:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
        if not any(
            {k: s.get(k) for k in ("kind", "name", "namespace")} == subject
            for s in binding.get("subjects") or []
        ):
            continue
        scope = binding["metadata"].get("namespace")  # None: cluster-wide
        if scope is not None and p.namespace != scope:
            continue
        ref = binding["roleRef"]
        role_ns = scope if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        if role is not None and any(_rule_allows(r, p) for r in role.get("rules") or []):
            return True
    return False


def containers(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(service account, container) of every Deployment."""
    for d in docs:
        if d["kind"] == "Deployment":
            spec = d["spec"]["template"]["spec"]
            for c in spec["containers"]:
                yield spec["serviceAccountName"], c


def granted(docs: list[dict[str, Any]], account: str) -> set[Permission]:
    """Everything the account's bindings grant, rule by rule (a wildcard is an error)."""
    roles = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
        for d in docs
        if d["kind"] in ("ClusterRole", "Role")
    }
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    out: set[Permission] = set()
    for binding in docs:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding") or not any(
            {k: s.get(k) for k in ("kind", "name", "namespace")} == subject
            for s in binding.get("subjects") or []
        ):
            continue
        scope = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role.get("rules") or []:
            fields = [rule.get(k) or [] for k in ("verbs", "apiGroups", "resources")]
            if any("*" in f for f in fields):
                raise ValueError(f"wildcard in {ref['name']}: {rule}")
            for verb in fields[0]:
                for group in fields[1]:
                    for resource in fields[2]:
                        for name in rule.get("resourceNames") or [None]:
                            out.add(Permission(verb, resource, group, scope, name))
    return out

"""batch/v1 Job writes: the status subresource, the TTL-after-finished deletion, the
PodGroup of a Job whose pods Caldera's gang scheduler places, and the Kubernetes Workload and
PodGroup of a Job with `spec.scheduling` (`controllers.batchjob.workload`).

The status is replaced whole with a JSON patch that first tests `metadata.uid`: the workflow
is the Job's only status writer and orders its own writes, and the test makes sure a status
never lands on a newer Job of the same name (422, non-retryable: that Job has its own
workflow). A Job already gone needs no status. The deletion is foreground with a uid
precondition, like the TTL-after-finished controller's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kubernetes import client
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube, kube_events
from activities.messages import (
    BatchJobInput,
    BatchJobStatusInput,
    DeleteJobInput,
    Done,
    GangMinCountInput,
    JobWorkloadResult,
)
from controllers.batchjob import podspec, workload
from models import batchv1, scheduling

_JSON_PATCH: Final = "application/json-patch+json"
_MERGE_PATCH: Final = "application/merge-patch+json"


@activity.defn(name="write_batch_job_status")
def write_batch_job_status(request: BatchJobStatusInput) -> Done:
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/uid", "value": request.uid},
        {"op": "add", "path": "/status", "value": request.status.dump()},
    ]
    with errors.kube_call(
        f"write status of job {request.namespace}/{request.name}", ok=errors.GONE_OK
    ):
        client.BatchV1Api(kube.api()).patch_namespaced_job_status(
            request.name,
            request.namespace,
            patch,
            _content_type="application/json-patch+json",
        )
    return Done()


@activity.defn(name="delete_batch_job")
def delete_batch_job(request: DeleteJobInput) -> Done:
    options = client.V1DeleteOptions(
        propagation_policy="Foreground", preconditions=client.V1Preconditions(uid=request.uid)
    )
    with errors.kube_call(
        f"delete job {request.namespace}/{request.name}", ok=frozenset({404, 409})
    ):
        client.BatchV1Api(kube.api()).delete_namespaced_job(
            request.name, request.namespace, body=options
        )
    return Done()


@activity.defn(name="ensure_batch_pod_group")
def ensure_batch_pod_group(request: BatchJobInput) -> Done:
    """Create the Job's PodGroup (AlreadyExists is success: it is never changed afterwards)."""
    job = request.job
    group = podspec.pod_group(job)
    namespace = job.metadata.namespace or "default"
    with errors.kube_call(f"create podgroup {namespace}/{job.pod_group_name}", ok=errors.EXISTS_OK):
        kube.custom().create_namespaced_custom_object(
            scheduling.GROUP, scheduling.VERSION, namespace, "podgroups", group
        )
    return Done()


def _ensure(
    job: batchv1.BatchJob,
    obj: dict[str, Any],
    create: Callable[[str, Any], Any],
    read: Callable[[str, str], Any],
) -> tuple[str, bool]:
    """The object's uid, and whether it was made now (False: it was there already, read back);
    one made gets the job controller's Normal Event (`WorkloadCreated`, `PodGroupCreated`)."""
    kind, name = str(obj["kind"]), str(obj["metadata"]["name"])
    namespace = job.metadata.namespace or "default"
    what = f"{kind.lower()} {namespace}/{name}"
    made: Any = None
    with errors.kube_call(f"create {what}", ok=errors.EXISTS_OK):
        made = create(namespace, kube.body(obj))
    found = made
    if found is None:
        with errors.kube_call(f"read {what}"):
            found = read(name, namespace)
    uid = found.metadata.uid if found is not None and found.metadata else None
    if not uid:
        raise ApplicationError(f"{what}: the apiserver returned no uid", type="KubernetesError")
    if made is not None:
        message = f"Created {kind} {name} for Job {job.metadata.name}"
        kube_events.try_event_on(
            job.metadata,
            "Normal",
            f"{kind}Created",
            message,
            api_version=batchv1.API_VERSION,
            kind=batchv1.KIND,
        )
    return str(uid), made is not None


@activity.defn(name="ensure_job_workload")
def ensure_job_workload(request: BatchJobInput) -> JobWorkloadResult:
    """The Job's Workload, then its PodGroup, which names the Workload's uid among its owners.
    Each is created once (AlreadyExists: read back); one found already there is given the
    minCount the Job asks for now (an attempt retried after the Job's minCount changed)."""
    job = request.job
    api = client.SchedulingV1beta1Api(kube.api())
    made = workload.workload(job)
    workload_uid, new = _ensure(
        job, made, api.create_namespaced_workload, api.read_namespaced_workload
    )
    group = workload.pod_group(job, workload_uid)
    group_uid, group_new = _ensure(
        job, group, api.create_namespaced_pod_group, api.read_namespaced_pod_group
    )
    count = workload.min_count(job)
    if not (new and group_new) and count is not None:
        _patch_min_count(job, count)
    return JobWorkloadResult(pod_group_uid=group_uid)


@activity.defn(name="patch_job_gang_min_count")
def patch_job_gang_min_count(request: GangMinCountInput) -> Done:
    """A changed gang minCount onto the Job's Workload template and PodGroup."""
    _patch_min_count(request.job, request.min_count)
    return Done()


def _patch_min_count(job: batchv1.BatchJob, count: int) -> None:
    """Both objects' gang minCount (one gone has nothing to change)."""
    api = client.SchedulingV1beta1Api(kube.api())
    namespace = job.metadata.namespace or "default"
    name = workload.workload_name(job)
    group = workload.pod_group_name(name, workload.template_name(job))
    with errors.kube_call(f"patch workload {namespace}/{name}", ok=errors.GONE_OK):
        api.patch_namespaced_workload(
            name, namespace, workload.workload_patch(count), _content_type=_JSON_PATCH
        )
    with errors.kube_call(f"patch podgroup {namespace}/{group}", ok=errors.GONE_OK):
        api.patch_namespaced_pod_group(
            group, namespace, kube.body(workload.min_count_patch(count)), _content_type=_MERGE_PATCH
        )

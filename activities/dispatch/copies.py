"""The DispatchWorkflow's calls to worker clusters: probe them, create a copy, delete it
(fenced), hand it a Command; `activities.dispatch.follow` follows it. I/O only: what to write is
`controllers.dispatch.copies`.

Every call is idempotent, so a retry or a worker restarted mid-call does no harm: a copy is
created if absent, and one found is the same copy only if its origin uid and generation say
so; a delete reads the Job first and deletes it only if it is that copy, with its uid as the
precondition; a Command has a name of its own. A cluster that cannot be reached is an answer
(`reachable=False`) for the core to decide on, not an exception to retry: that is what
failover is for (`activities.dispatch.remote`). They run on their own task queue
(`task_queues.DISPATCH`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Final

from kubernetes import client
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube
from activities.dispatch import clusters, probes, remote
from activities.dispatch.follow import follow_copy
from activities.dispatch.remote import CopyInput, Unreachable
from activities.messages import Message
from controllers.dispatch import copies, mirror
from controllers.dispatch.results import CommandSent, CopyDeleted, CopyMade, CopyUpdated, Probed
from models import bus, scheduling, vcjob
from models.signals.common import CommandIssued


class CreateCopyInput(CopyInput):
    job: vcjob.Job
    lease_seconds: int


class UpdateCopyInput(CopyInput):
    job: vcjob.Job


class DeleteCopyInput(CopyInput):
    why: str


class SendCommandInput(CopyInput):
    command: CommandIssued
    serial: int


# What a cluster answers to a change it will not take: said on the Job, not tried again.
_REFUSALS: Final = frozenset({"AdmissionDenied", "Invalid", "Forbidden", "BadRequest"})


class ProbeInput(Message):
    clusters: list[str]
    queue: str = ""  # the job's queue, whose figures each cluster reports ("": none asked)


# -- probe -----------------------------------------------------------------------------------


@activity.defn(name="probe_clusters")
def probe_clusters(request: ProbeInput) -> Probed:
    """`probes.probe` of each for the job's queue, side by side (one that hangs costs its
    timeout only), sharing a recent reading of a cluster with the other jobs' probes."""
    if not request.clusters:
        return Probed(statuses=[])
    with ThreadPoolExecutor(min(len(request.clusters), clusters.MAX_PARALLEL)) as pool:
        found = pool.map(lambda c: probes.probe(c, request.queue), request.clusters)
        return Probed(statuses=list(found))


# -- create ----------------------------------------------------------------------------------


def _queue_there(api: client.ApiClient, cluster: str, queue: str) -> str:
    """The job's queue if the worker cluster has it, else `default`."""
    found = remote.call(
        cluster,
        f"read queue {queue}",
        lambda: client.CustomObjectsApi(api).get_cluster_custom_object(
            scheduling.GROUP, scheduling.VERSION, "queues", queue, _request_timeout=remote.TIMEOUT
        ),
        ok=errors.GONE_OK,
    )
    return queue if found is not None else scheduling.DEFAULT_QUEUE


def _ensure_namespace(api: client.ApiClient, cluster: str, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    remote.call(
        cluster,
        f"create namespace {namespace}",
        lambda: kube.unread(
            client.CoreV1Api(api).create_namespace(
                kube.body(body), _preload_content=False, _request_timeout=remote.TIMEOUT
            )
        ),
        ok=errors.EXISTS_OK,
    )


@activity.defn(name="create_copy")
def create_copy(request: CreateCopyInput) -> CopyMade:
    """Create the copy if absent; a Job of that name already there is this copy only if its
    origin and generation say so (a retried create), else it is reported, untouched."""
    target, ns, name = request.target, request.namespace, request.name
    answer = CopyMade(cluster=target.cluster, generation=target.generation)
    try:
        api = remote.api(target.cluster)
        activity.heartbeat()  # between requests: a worker that died is noticed in seconds
        _ensure_namespace(api, target.cluster, ns)
        activity.heartbeat()
        queue = _queue_there(api, target.cluster, request.job.spec.queue or "default")
        activity.heartbeat()
        lease = datetime.now(UTC) + timedelta(seconds=request.lease_seconds)
        body = copies.manifest(request.job, request.origin, target.generation, lease, queue)
        made = remote.call(
            target.cluster,
            f"create job {ns}/{name}",
            lambda: client.CustomObjectsApi(api).create_namespaced_custom_object(
                vcjob.GROUP, vcjob.VERSION, ns, remote.JOBS, body, _request_timeout=remote.TIMEOUT
            ),
            ok=errors.EXISTS_OK,
        )
        activity.heartbeat()
        if made is not None:
            uid = str(remote.meta(kube.as_dict(made)).get("uid", ""))
            activity.logger.info("copy created job=%s/%s cluster=%s", ns, name, target.cluster)
            return answer.model_copy(update={"uid": uid, "created": True})
        found = remote.read(api, target.cluster, ns, name)
    except Unreachable as e:
        return answer.model_copy(update={"reachable": False, "error": str(e)})
    if found is None:  # deleted between the create and the read: the next try makes it
        return answer.model_copy(update={"reachable": False, "error": "deleted meanwhile"})
    origin, generation = remote.whose(found)
    uid = str(remote.meta(found).get("uid", ""))
    if (origin, generation) == (request.origin, target.generation):
        return answer.model_copy(update={"uid": uid})
    deleting = remote.meta(found).get("deletionTimestamp") is not None
    return answer.model_copy(
        update={
            "found_origin": origin,
            "found_generation": generation,
            "found_uid": uid,
            "found_deleting": deleting,
        }
    )


# -- update ----------------------------------------------------------------------------------


@activity.defn(name="update_copy")
def update_copy(request: UpdateCopyInput) -> CopyUpdated:
    """The manager Job's spec onto the copy (what an update may change, `copies.updated_spec`),
    fenced: only the Job of that name with this
    origin and generation, at the uid and resourceVersion read (a change meanwhile is a
    conflict, and the try is repeated). A refusal there (its admission: Volcano's update
    rules, the CRD's schema) is an answer, said on the manager's Job."""
    target, ns, name = request.target, request.namespace, request.name
    answer = CopyUpdated(cluster=target.cluster, generation=target.generation)
    try:
        api = remote.api(target.cluster)
        found = remote.read(api, target.cluster, ns, name)
        if found is None:
            return answer.model_copy(update={"outcome": "absent"})
        if remote.whose(found) != (request.origin, target.generation):
            return answer.model_copy(update={"outcome": "kept"})
        wanted = copies.updated_spec(found.get("spec") or {}, request.job)
        if found.get("spec") == wanted:
            return answer.model_copy(update={"outcome": "unchanged"})
        body = {**found, "spec": wanted}  # its uid and resourceVersion: a PUT fenced by both
        remote.call(
            target.cluster,
            f"update job {ns}/{name}",
            lambda: kube.unread(
                client.CustomObjectsApi(api).replace_namespaced_custom_object(
                    vcjob.GROUP,
                    vcjob.VERSION,
                    ns,
                    remote.JOBS,
                    name,
                    body,
                    _preload_content=False,
                    _request_timeout=remote.TIMEOUT,
                )
            ),
        )
    except Unreachable as e:
        return answer.model_copy(update={"reachable": False, "error": str(e)})
    except ApplicationError as e:
        if e.type not in _REFUSALS:
            raise
        return answer.model_copy(update={"outcome": "refused", "refused": str(e)[:500]})
    activity.logger.info("copy updated job=%s/%s cluster=%s", ns, name, target.cluster)
    return answer


# -- delete ----------------------------------------------------------------------------------


@activity.defn(name="delete_copy")
def delete_copy(request: DeleteCopyInput) -> CopyDeleted:
    """Delete the copy if the Job of that name is it (origin and generation), with its uid as
    the precondition: a copy of another generation, the current one above all, is kept."""
    target, ns, name = request.target, request.namespace, request.name
    answer = CopyDeleted(cluster=target.cluster, generation=target.generation)
    try:
        api = remote.api(target.cluster)
        found = remote.read(api, target.cluster, ns, name)
        if found is None:
            return answer.model_copy(update={"outcome": "absent"})
        origin, generation = remote.whose(found)
        if (origin, generation) != (request.origin, target.generation):
            return answer.model_copy(update={"outcome": "kept", "found_generation": generation})
        uid = str(remote.meta(found).get("uid", ""))
        options = client.V1DeleteOptions(
            propagation_policy="Foreground", preconditions=client.V1Preconditions(uid=uid)
        )
        remote.call(
            target.cluster,
            f"delete job {ns}/{name}",
            lambda: kube.unread(
                client.CustomObjectsApi(api).delete_namespaced_custom_object(
                    vcjob.GROUP,
                    vcjob.VERSION,
                    ns,
                    remote.JOBS,
                    name,
                    body=options,
                    _preload_content=False,
                    _request_timeout=remote.TIMEOUT,
                )
            ),
            ok=errors.GONE_OK,
        )
    except Unreachable as e:
        return answer.model_copy(update={"reachable": False, "error": str(e)})
    phase = mirror.phase_of(found.get("status") or {})
    activity.logger.info(
        "copy deleted job=%s/%s cluster=%s generation=%d why=%s",
        ns,
        name,
        target.cluster,
        target.generation,
        request.why,
    )
    return answer.model_copy(update={"phase": phase})


# -- commands --------------------------------------------------------------------------------


@activity.defn(name="send_command")
def send_command(request: SendCommandInput) -> CommandSent:
    """A Command for the copy on its cluster, where its Caldera (or Volcano) carries it out."""
    target = request.target
    answer = CommandSent(
        cluster=target.cluster, generation=target.generation, command=request.command
    )
    body = copies.command(
        request.namespace,
        request.name,
        target.uid,
        target.generation,
        request.serial,
        request.command,
    )
    try:
        api = remote.api(target.cluster)
        remote.call(
            target.cluster,
            f"create command for job {request.namespace}/{request.name}",
            lambda: kube.unread(
                client.CustomObjectsApi(api).create_namespaced_custom_object(
                    bus.GROUP,
                    bus.VERSION,
                    request.namespace,
                    "commands",
                    body,
                    _preload_content=False,
                    _request_timeout=remote.TIMEOUT,
                )
            ),
            ok=errors.EXISTS_OK,
        )
    except Unreachable as e:
        return answer.model_copy(update={"reachable": False, "error": str(e)})
    return answer


ACTIVITIES: Final = (
    probe_clusters,
    create_copy,
    update_copy,
    follow_copy,
    delete_copy,
    send_command,
)

"""The forwarder's Kubernetes calls: client construction, the list/watch endpoints of the
kinds, and consuming a Command.

Every list/watch call asks for the raw response (`_preload_content=False`) so objects reach the
translator as the apiserver's own JSON, whatever the Python client's models know about them.
"""

from __future__ import annotations

import functools
from typing import Final

import urllib3
from kubernetes import client

from forwarder.routing import envelopes
from models import batchv1, bus, jobflow, labels, scheduling, vcjob
from models.defaults import DEFAULT_SCHEDULER
from service import reflector
from service.kube import new_api as new_api  # re-exported: one kubeconfig rule
from service.reflector import REQUEST_TIMEOUT as REQUEST_TIMEOUT  # re-exported
from service.reflector import ListCall as ListCall

NOT_FOUND: Final = 404
CONFLICT: Final = 409

# Failures worth another try later: API errors, broken connections, timeouts.
TRANSIENT: Final = (client.ApiException, urllib3.exceptions.HTTPError, OSError)


def list_call(api: client.ApiClient, kind: envelopes.Kind) -> ListCall:
    """The cluster-wide list endpoint of `kind`; the same callable lists and watches."""
    if kind is envelopes.Kind.POD:
        # Only pods that carry Volcano's job-name label: everything else is not ours.
        return functools.partial(
            client.CoreV1Api(api).list_pod_for_all_namespaces, label_selector=labels.JOB_NAME
        )
    if kind is envelopes.Kind.WORKLOAD_POD:
        # Pods naming Volcano's scheduler, but not a Volcano Job's (the pod watch above has
        # those): which of them need a PodGroup is decided client side.
        return functools.partial(
            client.CoreV1Api(api).list_pod_for_all_namespaces,
            field_selector=f"spec.schedulerName={DEFAULT_SCHEDULER}",
            label_selector=f"!{labels.JOB_NAME}",
        )
    if kind is envelopes.Kind.BATCH_JOB:
        # Every batch/v1 Job: whose spec.managedBy is Caldera's is decided client side.
        return client.BatchV1Api(api).list_job_for_all_namespaces
    if kind is envelopes.Kind.BATCH_POD:
        # Pods the apiserver's Job selector labels; the owner reference says whose they are.
        return functools.partial(
            client.CoreV1Api(api).list_pod_for_all_namespaces,
            label_selector=batchv1.CONTROLLER_UID_LABEL,
        )
    if kind is envelopes.Kind.NAMESPACE:
        return client.CoreV1Api(api).list_namespace
    if kind is envelopes.Kind.KUBE_POD_GROUP:
        # Served only with the GenericWorkload feature gate: without it, none are listed.
        scheduling_api = client.SchedulingV1beta1Api(api)
        return reflector.optional(kind.value, scheduling_api.list_pod_group_for_all_namespaces)
    custom = client.CustomObjectsApi(api)
    if kind is envelopes.Kind.NAMESPACE_QUEUE:
        # A cluster without the NamespaceQueue CRD lists none and watches nothing.
        call = functools.partial(
            custom.list_cluster_custom_object, scheduling.GROUP, scheduling.VERSION, kind.value
        )
        return reflector.optional(kind.value, call)
    group, version = {
        envelopes.Kind.JOB: (vcjob.GROUP, vcjob.VERSION),
        envelopes.Kind.POD_GROUP: (scheduling.GROUP, scheduling.VERSION),
        envelopes.Kind.COMMAND: (bus.GROUP, bus.VERSION),
        envelopes.Kind.QUEUE: (scheduling.GROUP, scheduling.VERSION),  # cluster-scoped anyway
        envelopes.Kind.JOBFLOW: (jobflow.GROUP, jobflow.VERSION),
        envelopes.Kind.JOBTEMPLATE: (jobflow.GROUP, jobflow.VERSION),
        envelopes.Kind.CRON_JOB: (vcjob.GROUP, vcjob.VERSION),
    }[kind]
    return functools.partial(custom.list_cluster_custom_object, group, version, kind.value)


def delete_command(api: client.ApiClient, namespace: str, name: str, uid: str) -> bool:
    """Consume a Command: True when this call deleted it, False when someone else did.

    The uid precondition makes sure a Command recreated under the same name is not consumed
    on the strength of the old one's event. Any other error propagates: the caller retries,
    and the command is not delivered until the delete succeeds (at most once, as Volcano does).
    """
    custom = client.CustomObjectsApi(api)
    try:
        custom.delete_namespaced_custom_object(
            bus.GROUP,
            bus.VERSION,
            namespace,
            envelopes.Kind.COMMAND.value,
            name,
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)),
            _request_timeout=REQUEST_TIMEOUT,
        )
    except client.ApiException as e:
        if e.status in (NOT_FOUND, CONFLICT):
            return False
        raise
    return True

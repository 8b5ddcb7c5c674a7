"""Which Kubernetes errors an activity retries: a namespace that is gone never comes back."""

from __future__ import annotations

import json

import pytest
from kubernetes.client import ApiException
from temporalio.exceptions import ApplicationError

from activities import errors


def _gone(kind: str) -> ApiException:
    e = ApiException(status=404, reason="Not Found")
    e.body = json.dumps({"kind": "Status", "details": {"name": "team-a", "kind": kind}})
    return e


def _raise(e: ApiException, ok: frozenset[int] = frozenset()) -> ApplicationError | None:
    try:
        with errors.kube_call("create pod team-a/p", ok=ok):
            raise e
    except ApplicationError as failed:
        return failed
    return None


def test_a_create_in_a_deleted_namespace_is_not_retried() -> None:
    failed = _raise(_gone("namespaces"))
    assert failed is not None and failed.non_retryable and failed.type == "NamespaceGone"


def test_a_create_in_a_namespace_being_terminated_is_not_retried() -> None:
    e = ApiException(status=403, reason="Forbidden")
    message = 'pods "p" is forbidden: unable to create new content in namespace team-a'
    e.body = json.dumps(
        {
            "kind": "Status",
            "message": message + " because it is being terminated",
            "reason": "Forbidden",
            "details": {
                "name": "p",
                "kind": "pods",
                "causes": [
                    {
                        "reason": "NamespaceTerminating",
                        "message": "namespace team-a is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            },
        }
    )
    failed = _raise(e)
    assert failed is not None and failed.non_retryable and failed.type == "NamespaceGone"


def test_other_forbidden_errors_stay_forbidden() -> None:
    e = ApiException(status=403, reason="Forbidden")
    e.body = json.dumps({"kind": "Status", "message": "pods is forbidden: User cannot create"})
    failed = _raise(e)
    assert failed is not None and failed.non_retryable and failed.type == "Forbidden"


def test_a_delete_in_a_deleted_namespace_succeeds() -> None:
    assert _raise(_gone("namespaces"), ok=errors.GONE_OK) is None


@pytest.mark.parametrize(
    "e",
    [
        pytest.param(_gone("pods"), id="the-object-is-gone"),
        pytest.param(ApiException(status=404, reason="Not Found"), id="no-body"),
    ],
)
def test_other_not_found_errors_are_retried(e: ApiException) -> None:
    failed = _raise(e)
    assert failed is not None and not failed.non_retryable and failed.type == "KubernetesError"


def test_a_podgroup_refused_by_the_webhook_for_a_closed_queue_is_retried() -> None:
    """Regression (chaos soak): a Job admitted a moment before its queue closed had its PodGroup
    refused by the webhook; the refusal was taken as final and the job Terminated at once,
    where Volcano retries the sync (and the queue opened again 60 s later)."""
    e = ApiException(status=403, reason="Forbidden")
    message = (
        'admission webhook "podgroups.admission.caldera.dev" denied the request: podgroup '
        'ns/q-6-0: spec.queue: can only submit PodGroup to queue with state Open, queue "q" '
        'status is "Closed"'
    )
    e.body = json.dumps({"kind": "Status", "message": message, "reason": "Forbidden"})
    failed = _raise(e)
    assert failed is not None and not failed.non_retryable and failed.type == "AdmissionDenied"
    assert failed.next_retry_delay == errors.WEBHOOK_FIRST_RETRY  # then doubling, as Volcano
    assert 'queue "q" status is "Closed"' in failed.message  # the webhook's words, unescaped

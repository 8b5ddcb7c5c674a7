"""The one place `kubernetes.client.ApiException` becomes a Temporal error.

AlreadyExists and NotFound are success where that is the desired end state (the caller says
which); 422 Invalid and 403 Forbidden never heal by retrying, so they are non-retryable (but
for an admission webhook's 403, which depends on other objects), and so is a 404 for the
namespace itself (it was deleted: nothing can be written there again); everything else is
retried by the activity's retry policy. One mapping for every activity,
with the original exception chained so the cause stays in the failure.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Final

from kubernetes.client import ApiException
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from activities.messages import NAMESPACE_GONE

NOT_FOUND: Final = 404
CONFLICT: Final = 409
FORBIDDEN: Final = 403
TERMINATING: Final = "NamespaceTerminating"  # the cause of a 403 in a namespace going away
_PERMANENT: Final = {422: "Invalid", 403: "Forbidden", 400: "BadRequest"}
# A webhook's refusal heals when the user acts (creates or opens the queue), not with load: its
# retries follow Volcano's requeue of a failed sync (10 ms, doubling), so the activity's 15
# attempts span Volcano's 15 requeues (about 164 s) before the job is Terminated, rather than
# the five minutes the write policy's backoff takes.
WEBHOOK_FIRST_RETRY: Final = timedelta(milliseconds=10)


def _webhook_retry() -> timedelta:
    attempt: int = activity.info().attempt if activity.in_activity() else 1
    return timedelta(seconds=WEBHOOK_FIRST_RETRY.total_seconds() * 2.0 ** (attempt - 1))


def _namespace_gone(e: ApiException) -> bool:
    """A 404 about the namespace itself, not about the object asked for, or the 403 the
    apiserver gives a create in a namespace being terminated (cause `NamespaceTerminating`):
    it is going, and nothing created there would last."""
    if e.status not in (NOT_FOUND, FORBIDDEN):
        return False
    try:
        details = json.loads(e.body or "{}").get("details") or {}
    except (ValueError, AttributeError):
        return False
    if not isinstance(details, dict):
        return False
    if e.status == NOT_FOUND:
        return details.get("kind") == "namespaces"
    causes = details.get("causes") or []
    return any(isinstance(c, dict) and c.get("reason") == TERMINATING for c in causes)


def _webhook_refusal(e: ApiException) -> str | None:
    """An admission webhook's refusal (a PodGroup to a queue closed a moment ago, a queue not
    created yet), as its message: it depends on other objects, so it may pass later, and is
    retried for as long as the activity's policy allows (as Volcano requeues a failed sync),
    not taken as final. None: not a webhook's refusal."""
    if e.status != FORBIDDEN:
        return None
    try:
        message = json.loads(e.body or "{}").get("message") or ""
    except (ValueError, AttributeError):
        return None
    return (
        message if isinstance(message, str) and message.startswith("admission webhook ") else None
    )


def _reason(e: ApiException) -> str:
    return f"{e.status} {e.reason}: {(e.body or '')[:500]}"


@contextlib.contextmanager
def kube_call(what: str, ok: frozenset[int] = frozenset()) -> Iterator[None]:
    """Run a client call; statuses in `ok` are success, the rest map to ApplicationError."""
    try:
        yield
    except ApiException as e:
        if e.status in ok:
            return  # for a delete or a status write, a namespace gone is its object gone too
        if _namespace_gone(e):
            raise ApplicationError(
                f"{what}: {_reason(e)}", type=NAMESPACE_GONE, non_retryable=True
            ) from e
        refusal = _webhook_refusal(e)
        if refusal is not None:
            raise ApplicationError(
                f"{what}: {refusal}", type="AdmissionDenied", next_retry_delay=_webhook_retry()
            ) from e
        kind = _PERMANENT.get(e.status or 0)
        if kind is not None:
            raise ApplicationError(f"{what}: {_reason(e)}", type=kind, non_retryable=True) from e
        category = (
            ApplicationErrorCategory.BENIGN
            if e.status == CONFLICT
            else ApplicationErrorCategory.UNSPECIFIED
        )
        raise ApplicationError(
            f"{what}: {_reason(e)}", type="KubernetesError", category=category
        ) from e


EXISTS_OK: Final = frozenset({CONFLICT})
GONE_OK: Final = frozenset({NOT_FOUND})

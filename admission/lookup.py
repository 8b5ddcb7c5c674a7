"""The webhook's reads of Queues, from the apiserver with the official `kubernetes` client.

The only module of `admission/` that imports the client and meets its errors: a missing
queue (404) is an answer (`None`); any other failure becomes `LookupFailed`, and the server
refuses the request with it, because an object that cannot be checked is not admitted (the
registration's `failurePolicy: Fail` says the same when the webhook cannot be reached).

Reads go straight to the apiserver, with no informer cache: a queue created or closed a moment
ago is seen by the next review (Volcano's lister can lag behind).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

import urllib3
from kubernetes import client

from admission import rules
from models import scheduling
from service.kube import new_api as new_api  # re-exported: one kubeconfig rule

PLURAL: Final = "queues"
# The apiserver gives the webhook `timeoutSeconds` (5) in all; a parent walk makes a few reads.
TIMEOUT: Final = 2.0  # seconds per read


class LookupFailed(RuntimeError):
    """The apiserver did not answer a queue read; the message says which read and why."""


@contextmanager
def _reading(what: str) -> Iterator[None]:
    try:
        yield
    except client.ApiException as e:
        raise LookupFailed(f"could not {what}: {e.status} {e.reason}") from e
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise LookupFailed(f"could not {what}: {e}") from e


class ApiLookup:
    """`rules.Lookup` over the apiserver; safe to share between request threads."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def get_queue(self, name: str) -> rules.QueueInfo | None:  # None: no such queue
        with _reading(f"read queue {name!r}"):
            try:
                obj = self._custom.get_cluster_custom_object(
                    scheduling.GROUP, scheduling.VERSION, PLURAL, name, _request_timeout=TIMEOUT
                )
            except client.ApiException as e:
                if e.status == 404:
                    return None
                raise
        return rules.queue_info(_mapping(obj, f"queue {name!r}"))

    def list_queues(self) -> list[rules.QueueInfo]:
        with _reading("list queues"):
            listed = self._custom.list_cluster_custom_object(
                scheduling.GROUP, scheduling.VERSION, PLURAL, _request_timeout=TIMEOUT
            )
        items = _mapping(listed, "the queue list").get("items")
        if not isinstance(items, list):
            raise LookupFailed("could not list queues: the answer has no items")
        return [rules.queue_info(_mapping(item, "a listed queue")) for item in items]


def _mapping(value: object, what: str) -> Mapping[str, object]:
    """The client returns `object` for custom resources; anything but a JSON object is an error."""
    if not isinstance(value, Mapping):
        raise LookupFailed(f"{what} is not a JSON object")
    return value

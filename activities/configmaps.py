"""A configuration text from one key of a ConfigMap named `<namespace>/<name>` in a variable:
the scheduler's and the controllers' configurations are both read this way."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from kubernetes.client.exceptions import ApiException
from temporalio.exceptions import ApplicationError

from activities import kube

_NOT_FOUND: Final = 404


def invalid(message: str) -> ApplicationError:
    """A configuration that cannot work: retrying the activity would not change it."""
    return ApplicationError(message, type="Invalid", non_retryable=True)


def text(variable: str, reference: str, key: str, missing: str | None = None) -> str:
    """The ConfigMap's `key`; `missing` is returned for a ConfigMap that does not exist
    (None: that is an error too)."""
    namespace, _, name = reference.partition("/")
    if not namespace or not name:
        raise invalid(f"{variable}={reference!r}: expected <namespace>/<name>")
    try:
        found = kube.core().read_namespaced_config_map(name, namespace)
    except ApiException as e:
        if e.status == _NOT_FOUND and missing is not None:
            return missing
        raise ApplicationError(
            f"{variable}: ConfigMap {reference}: {e.status} {e.reason}", type="KubeError"
        ) from e
    data = found.data or {}
    if key not in data:
        raise invalid(f"{variable}: ConfigMap {reference} has no key {key!r}")
    return str(data[key])


def file_text(variable: str, path: str) -> tuple[str, str]:
    """(origin, text) of the file `variable` names; an unreadable one is `Invalid`, named."""
    origin = f"{variable}={path}"
    try:
        return origin, Path(path).read_text()
    except OSError as e:
        raise invalid(f"{origin}: cannot read: {e.strerror}") from e

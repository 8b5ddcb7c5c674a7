"""The controllers' configuration: Volcano's volcano-controller.conf, read every discovery round.

Where it comes from, first match wins:
- CALDERA_HYPERNODE_DISCOVERY: the path of a volcano-controller.conf file (a mounted ConfigMap
  is one: kubelet rewrites the file when the ConfigMap changes);
- CALDERA_CONTROLLER_CONFIGMAP: `<namespace>/<name>`, the ConfigMap's `volcano-controller.conf`
  key, read through the API each round; a ConfigMap that is not there is an empty
  configuration, as Volcano takes a deleted one;
- neither: HyperNode discovery is not configured, and the worker does not start it.

Only `networkTopologyDiscovery` is read (`controllers.hypernode.config`). A configuration that
does not load fails the round with a message naming the field; the HyperNodes stay as they are
until it is fixed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from kubernetes.client.exceptions import ApiException
from temporalio.exceptions import ApplicationError

from activities import kube
from controllers.hypernode import config

ENV_FILE: Final = "CALDERA_HYPERNODE_DISCOVERY"
ENV_CONFIGMAP: Final = "CALDERA_CONTROLLER_CONFIGMAP"
CONFIGMAP_KEY: Final = config.CONFIG_KEY
_NOT_FOUND: Final = 404


def configured() -> bool:
    """Whether a configuration source is named (the worker then starts discovery)."""
    return bool(os.environ.get(ENV_FILE, "").strip() or os.environ.get(ENV_CONFIGMAP, "").strip())


def _invalid(message: str) -> ApplicationError:
    return ApplicationError(message, type="Invalid", non_retryable=True)


def _from_configmap(reference: str) -> str:
    namespace, _, name = reference.partition("/")
    if not namespace or not name:
        raise _invalid(f"{ENV_CONFIGMAP}={reference!r}: expected <namespace>/<name>")
    try:
        found = kube.core().read_namespaced_config_map(name, namespace)
    except ApiException as e:
        if e.status == _NOT_FOUND:
            return ""
        raise ApplicationError(
            f"{ENV_CONFIGMAP}: ConfigMap {reference}: {e.status} {e.reason}", type="KubeError"
        ) from e
    data = found.data or {}
    if CONFIGMAP_KEY not in data:
        raise _invalid(f"{ENV_CONFIGMAP}: ConfigMap {reference} has no key {CONFIGMAP_KEY!r}")
    return str(data[CONFIGMAP_KEY])


def _read() -> tuple[str, str]:
    """(origin, text) of the configured source; no source is an empty configuration."""
    if path := os.environ.get(ENV_FILE, "").strip():
        try:
            return f"{ENV_FILE}={path}", Path(path).read_text()
        except OSError as e:
            raise _invalid(f"{ENV_FILE}={path}: cannot read: {e.strerror}") from e
    if reference := os.environ.get(ENV_CONFIGMAP, "").strip():
        return f"{ENV_CONFIGMAP}={reference}", _from_configmap(reference)
    return "no configuration", ""


def discovery_config() -> config.DiscoveryConfig:
    """The configuration in force; ApplicationError `Invalid` names what is wrong."""
    origin, text = _read()
    try:
        return config.load(text)
    except ValueError as e:
        raise _invalid(f"{origin}: {e}") from None

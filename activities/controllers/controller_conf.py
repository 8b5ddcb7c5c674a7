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
from typing import Final

from activities import configmaps
from controllers.hypernode import config

ENV_FILE: Final = "CALDERA_HYPERNODE_DISCOVERY"
ENV_CONFIGMAP: Final = "CALDERA_CONTROLLER_CONFIGMAP"
CONFIGMAP_KEY: Final = config.CONFIG_KEY


def configured() -> bool:
    """Whether a configuration source is named (the worker then starts discovery)."""
    return bool(os.environ.get(ENV_FILE, "").strip() or os.environ.get(ENV_CONFIGMAP, "").strip())


def _from_configmap(reference: str) -> str:
    return configmaps.text(ENV_CONFIGMAP, reference, CONFIGMAP_KEY, missing="")


def _read() -> tuple[str, str]:
    """(origin, text) of the configured source; no source is an empty configuration."""
    if path := os.environ.get(ENV_FILE, "").strip():
        return configmaps.file_text(ENV_FILE, path)
    if reference := os.environ.get(ENV_CONFIGMAP, "").strip():
        return f"{ENV_CONFIGMAP}={reference}", _from_configmap(reference)
    return "no configuration", ""


def discovery_config() -> config.DiscoveryConfig:
    """The configuration in force; ApplicationError `Invalid` names what is wrong."""
    origin, text = _read()
    try:
        return config.load(text)
    except ValueError as e:
        raise configmaps.invalid(f"{origin}: {e}") from None

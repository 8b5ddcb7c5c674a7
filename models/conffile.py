"""A configuration file's YAML document, read as a mapping (Volcano's scheduler and controller
configurations are both one), with the error a user can act on."""

from __future__ import annotations

from typing import Any

import yaml


def mapping(text: str, holds: str) -> dict[str, Any]:
    """The document of `text`; an empty file is an empty mapping. ValueError when it is not YAML
    or not a mapping (`holds` says what the mapping should hold)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"not YAML: {e}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ValueError(f"the configuration must be a mapping with {holds}")
    return document

"""The gang scheduler's configuration: Volcano's volcano-scheduler.conf, read every session.

Where it comes from, first match wins:
- CALDERA_SCHEDULER_CONF: the path of a volcano-scheduler.conf file (a mounted ConfigMap
  is one: kubelet rewrites the file when the ConfigMap changes);
- CALDERA_SCHEDULER_CONFIGMAP: `<namespace>/<name>`, the ConfigMap's `volcano-scheduler.conf`
  key, read through the API at most every few seconds;
- neither: `scheduling.framework.session_config`'s defaults (Volcano's built-in list plus reclaim).
CALDERA_SCHEDULER_ACTIONS takes Volcano's `actions` string and replaces the actions of
whichever configuration is in force: a shortcut into the same configuration.
CALDERA_SCHEDULER_PENDING_LISTED sets how many waiting jobs each queue's backlog digest lists
(`caldera queue pending`; default 100), a setting of Caldera's own that Volcano's file lacks.

A change is picked up by the next session. A configuration that does not load fails the
session with a message naming what is wrong, unless an earlier one loaded: then that one
stays in force, as vc-scheduler keeps running on its last good configuration, and the
error is logged once per distinct text.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Final

from activities import configmaps
from scheduling.framework.conf import LoadedConf, load
from scheduling.framework.session_config import SessionConfig, parse_actions

ENV_ACTIONS: Final = "CALDERA_SCHEDULER_ACTIONS"
ENV_CONF: Final = "CALDERA_SCHEDULER_CONF"
ENV_CONFIGMAP: Final = "CALDERA_SCHEDULER_CONFIGMAP"
ENV_PENDING_LISTED: Final = "CALDERA_SCHEDULER_PENDING_LISTED"
CONFIGMAP_KEY: Final = "volcano-scheduler.conf"
CONFIGMAP_EVERY: Final = 5.0  # seconds between reads of the ConfigMap

log = logging.getLogger(__name__)


class _Loaded:
    """The last text read, what it loaded to, and the last good configuration."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.text: str | None = None
        self.origin = ""
        self.result: LoadedConf | str | None = None  # str: the error the text gave
        self.good: LoadedConf | None = None
        self.read_at = float("-inf")


_LOADED = _Loaded()


def _from_configmap(reference: str) -> str:
    return configmaps.text(ENV_CONFIGMAP, reference, CONFIGMAP_KEY)


def _read() -> tuple[str, str] | None:
    """(origin, text) of the configured source; None: none is configured."""
    if path := os.environ.get(ENV_CONF, "").strip():
        return configmaps.file_text(ENV_CONF, path)
    if reference := os.environ.get(ENV_CONFIGMAP, "").strip():
        now = time.monotonic()
        if _LOADED.text is not None and now - _LOADED.read_at < CONFIGMAP_EVERY:
            return _LOADED.origin, _LOADED.text
        text = _from_configmap(reference)
        _LOADED.read_at = now
        return f"{ENV_CONFIGMAP}={reference}", text
    return None


def _loaded(origin: str, text: str) -> LoadedConf:
    """The configuration `text` loads to (parsed once per distinct text), or the last good."""
    with _LOADED.lock:
        if text != _LOADED.text or origin != _LOADED.origin:
            _LOADED.text, _LOADED.origin = text, origin
            try:
                _LOADED.result = load(text)
            except ValueError as e:
                _LOADED.result = f"{origin}: {e}"
                if _LOADED.good is not None:
                    log.error("%s; the previous configuration stays in force", _LOADED.result)
            else:
                _LOADED.good = _LOADED.result
        result = _LOADED.result
        if isinstance(result, LoadedConf):
            return result
        if _LOADED.good is not None:
            return _LOADED.good
        raise configmaps.invalid(str(result))


def session_config() -> SessionConfig:
    source = _read()
    config = _loaded(*source).session if source is not None else SessionConfig()
    if listed := os.environ.get(ENV_PENDING_LISTED, "").strip():
        config = config.model_copy(update={"pending_listed": _pending_listed(listed)})
    text = os.environ.get(ENV_ACTIONS, "").strip()
    if not text:
        return config
    try:
        return config.model_copy(update={"actions": parse_actions(text)})
    except ValueError as e:
        raise configmaps.invalid(f"{ENV_ACTIONS}={text!r}: {e}") from e


def _pending_listed(text: str) -> int:
    """A whole number of jobs, 0 or more; anything else fails the session, naming the variable."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise configmaps.invalid(f"{ENV_PENDING_LISTED}={text!r}: not a whole number >= 0")
    return value

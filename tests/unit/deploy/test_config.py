"""The Deployments' environment and the code that reads it cannot drift apart.

service/temporal.py (with service/codec.py) is the one place the worker and the forwarder take
their Temporal settings from; every variable it reads must be settable in both Deployments,
every variable a Deployment sets must be read by that process's code, and each one must
really change the options `connect` uses.
"""

from __future__ import annotations

import ast
import base64
import re
from pathlib import Path
from typing import Any

import pytest

from service import codec, temporal
from tests import access

DOCS = access.manifests()
ENV_NAME = re.compile(r"^(TEMPORAL|CALDERA)_[A-Z0-9_]+$")
CONNECT_MODULES = (access.ROOT / "service" / "temporal.py", access.ROOT / "service" / "codec.py")


def _literals(paths: list[Path]) -> set[str]:
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and ENV_NAME.match(value):
                found.add(value)
    return found


CONNECT_ENV = _literals(list(CONNECT_MODULES))


def _container(account: str) -> dict[str, Any]:
    (found,) = [c for a, c in access.containers(DOCS) if a == account]
    return found


def _env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env") or []]


def test_the_connect_path_reads_the_expected_variables() -> None:
    """Guards the guard: the literal scan sees what service/temporal.py documents."""
    assert {
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "TEMPORAL_TLS_CERT",
        "TEMPORAL_TLS_KEY",
        "TEMPORAL_TLS_CA",
        "TEMPORAL_TLS_SERVER_NAME",
        "TEMPORAL_API_KEY",
        codec.KEY_ENV,
        codec.KEY_ID_ENV,
        codec.PREVIOUS_KEYS_ENV,
    } == CONNECT_ENV


@pytest.mark.parametrize("account", ["caldera-worker", "caldera-forwarder"])
def test_every_temporal_setting_can_be_set_in_the_deployment(account: str) -> None:
    names = _env_names(_container(account))
    assert sorted(CONNECT_ENV - set(names)) == []
    assert len(names) == len(set(names)), "a variable is set twice"


@pytest.mark.parametrize("account", ["caldera-worker", "caldera-forwarder", "caldera-webhook"])
def test_every_variable_a_deployment_sets_is_read_by_its_process(account: str) -> None:
    container = _container(account)
    closure = access.import_closure(access.ENTRY[account])
    read = _literals(list(closure.values()))
    command = " ".join(container["command"])
    for name in _env_names(container):
        if ENV_NAME.match(name):
            assert name in read, f"{account} sets {name}, which its code never reads"
        else:  # only for substitution into the command line
            assert f"$({name})" in command, f"{account} sets {name} and never uses it"


@pytest.mark.parametrize("account", ["caldera-worker", "caldera-forwarder"])
def test_each_variable_changes_the_options_connect_uses(
    account: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The values a Deployment would inject reach TemporalOptions (no name is dead)."""
    for name in CONNECT_ENV:
        monkeypatch.delenv(name, raising=False)
    key = base64.b64encode(bytes(range(32))).decode()
    old = base64.b64encode(bytes(range(1, 33))).decode()
    values = {
        "TEMPORAL_ADDRESS": "temporal.example:7233",
        "TEMPORAL_NAMESPACE": "caldera-prod",
        "TEMPORAL_TLS_CERT": "/etc/caldera/temporal-tls/tls.crt",
        "TEMPORAL_TLS_KEY": "/etc/caldera/temporal-tls/tls.key",
        "TEMPORAL_TLS_CA": "/etc/caldera/temporal-tls/ca.crt",
        "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
        "TEMPORAL_API_KEY": "api-key-123",
        codec.KEY_ENV: key,
        codec.KEY_ID_ENV: "prod-2026",
        codec.PREVIOUS_KEYS_ENV: f"prod-2025:{old}",
    }
    for name in _env_names(_container(account)):
        if name in values:
            monkeypatch.setenv(name, values[name])
    options = temporal.options_from_env()
    assert options.address == "temporal.example:7233"
    assert options.namespace == "caldera-prod"
    assert options.tls_cert == Path(values["TEMPORAL_TLS_CERT"])
    assert options.tls_key == Path(values["TEMPORAL_TLS_KEY"])
    assert options.tls_ca == Path(values["TEMPORAL_TLS_CA"])
    assert options.tls_server_name == "temporal.internal"
    assert options.api_key == "api-key-123"
    assert options.codec_keys is not None
    assert options.codec_keys.active == "prod-2026"
    assert set(options.codec_keys.keys) == {"prod-2026", "prod-2025"}


def test_configmap_keys_and_references_agree() -> None:
    (config,) = [
        d for d in DOCS if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "caldera-config"
    ]
    text = (access.DEPLOY / "base" / "config.yaml").read_text()
    documented = set(re.findall(r"^\s*#?\s*([A-Z][A-Z0-9_]+):", text, re.MULTILINE))
    referenced = set()
    for _, container in access.containers(DOCS):
        for e in container.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
            if ref:
                assert ref["name"] == "caldera-config" and ref.get("optional") is True
                assert ref["key"] == e["name"], "keys are named after their variables"
                referenced.add(ref["key"])
    assert set(config["data"]) <= referenced, "a ConfigMap key nobody reads"
    assert sorted(referenced - documented) == [], "referenced but not documented in config.yaml"

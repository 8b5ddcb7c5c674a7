"""Where HyperNode discovery's configuration comes from, and what a broken one does."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException
from temporalio.exceptions import ApplicationError

from activities import kube
from activities.controllers import controller_conf

pytestmark = pytest.mark.unit

LABEL = (
    "networkTopologyDiscovery:\n  - source: label\n    enabled: true\n    config:\n"
    "      networkTopologyTypes:\n        rack: [{nodeLabel: tor}, {nodeLabel: h}]\n"
)


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (controller_conf.ENV_FILE, controller_conf.ENV_CONFIGMAP):
        monkeypatch.delenv(name, raising=False)


def _configmap(
    monkeypatch: pytest.MonkeyPatch, data: dict[str, str] | None, status: int = 0
) -> list[tuple[str, str]]:
    reads: list[tuple[str, str]] = []

    class Core:
        def read_namespaced_config_map(self, name: str, namespace: str) -> SimpleNamespace:
            reads.append((namespace, name))
            if status:
                raise ApiException(status=status, reason="Nope")
            return SimpleNamespace(data=data)

    monkeypatch.setattr(kube, "core", Core)
    return reads


def test_nothing_configured_is_an_empty_configuration() -> None:
    assert not controller_conf.configured()
    assert controller_conf.discovery_config().label() is None


def test_a_file_is_read_every_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "volcano-controller.conf"
    path.write_text(LABEL)
    monkeypatch.setenv(controller_conf.ENV_FILE, str(path))
    assert controller_conf.configured()
    label = controller_conf.discovery_config().label()
    assert label is not None and label.tiers() == {"rack": ("tor",)}
    path.write_text("networkTopologyDiscovery: []\n")
    assert controller_conf.discovery_config().label() is None


def test_a_broken_file_names_the_file_and_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.conf"
    path.write_text("networkTopologyDiscovery: [{source: lldp}]\n")
    monkeypatch.setenv(controller_conf.ENV_FILE, str(path))
    with pytest.raises(ApplicationError) as raised:
        controller_conf.discovery_config()
    assert raised.value.type == "Invalid" and raised.value.non_retryable
    assert raised.value.message.startswith(
        f"{controller_conf.ENV_FILE}={path}: networkTopologyDiscovery[0].source"
    )


def test_a_missing_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(controller_conf.ENV_FILE, str(tmp_path / "absent"))
    with pytest.raises(ApplicationError, match="cannot read"):
        controller_conf.discovery_config()


def test_the_file_wins_over_the_configmap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.conf"
    path.write_text(LABEL)
    reads = _configmap(monkeypatch, {controller_conf.CONFIGMAP_KEY: ""})
    monkeypatch.setenv(controller_conf.ENV_FILE, str(path))
    monkeypatch.setenv(controller_conf.ENV_CONFIGMAP, "volcano-system/volcano-controller-configmap")
    assert controller_conf.discovery_config().label() is not None
    assert reads == []


def test_a_configmap_is_read_through_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _configmap(monkeypatch, {controller_conf.CONFIGMAP_KEY: LABEL})
    monkeypatch.setenv(controller_conf.ENV_CONFIGMAP, "volcano-system/volcano-controller-configmap")
    assert controller_conf.configured()
    assert controller_conf.discovery_config().label() is not None
    assert reads == [("volcano-system", "volcano-controller-configmap")]


def test_a_configmap_not_there_is_an_empty_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    _configmap(monkeypatch, None, status=404)
    monkeypatch.setenv(controller_conf.ENV_CONFIGMAP, "ns/cm")
    assert controller_conf.discovery_config().label() is None


@pytest.mark.parametrize(
    ("reference", "data", "message"),
    [
        pytest.param("just-a-name", {}, "expected <namespace>/<name>", id="bad-reference"),
        pytest.param("ns/cm", {"other": ""}, r"has no key 'volcano-controller\.conf'", id="no-key"),
    ],
)
def test_a_configmap_that_cannot_be_used_is_named(
    monkeypatch: pytest.MonkeyPatch, reference: str, data: dict[str, str], message: str
) -> None:
    _configmap(monkeypatch, data)
    monkeypatch.setenv(controller_conf.ENV_CONFIGMAP, reference)
    with pytest.raises(ApplicationError, match=message):
        controller_conf.discovery_config()

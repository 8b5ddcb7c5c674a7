"""The networkTopologyDiscovery configuration: Volcano's example loads, bad ones are refused
with the field named."""

from __future__ import annotations

from datetime import timedelta

import pytest

from controllers.hypernode import config

# Volcano's documented example (docs/user-guide/how_to_use_hypernode_auto_discovery.md).
VOLCANO_EXAMPLE = """
networkTopologyDiscovery:
  - source: ufm
    enabled: true
    interval: 10m
    credentials:
      secretRef:
        name: ufm-credentials
        namespace: volcano-system
    config:
      endpoint: https://ufm-server:8080
      insecureSkipVerify: true
  - source: roce
    enabled: false
    interval: 15m
    config:
      endpoint: https://roce-server:9090
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        topologyA2:
          - nodeLabel: "volcano.sh/tor"
          - nodeLabel: "kubernetes.io/hostname"
        topologyA3:
          - nodeLabel: "volcano.sh/hypercluster"
          - nodeLabel: "volcano.sh/hypernode"
          - nodeLabel: "kubernetes.io/hostname"
"""


def _label(types: str, enabled: str = "true", extra: str = "") -> str:
    return (
        "networkTopologyDiscovery:\n"
        f"  - source: label\n    enabled: {enabled}\n{extra}"
        f"    config:\n      networkTopologyTypes:\n{types}"
    )


def test_volcano_example_loads_with_tiers_bottom_up() -> None:
    loaded = config.load(VOLCANO_EXAMPLE)
    label = loaded.label()
    assert label is not None
    assert label.tiers() == {
        "topologyA2": ("volcano.sh/tor",),
        "topologyA3": ("volcano.sh/hypernode", "volcano.sh/hypercluster"),
    }
    assert loaded.unsupported() == ("ufm",)  # roce is disabled
    assert loaded.interval() is None  # the label entry names none


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        pytest.param("    interval: 30s\n", timedelta(seconds=30), id="set"),
        pytest.param("    interval: 1m30s\n", timedelta(seconds=90), id="compound"),
        pytest.param("    interval: '0'\n", None, id="zero-is-default"),
        pytest.param("", None, id="absent"),
    ],
)
def test_label_interval(interval: str, expected: timedelta | None) -> None:
    text = _label(
        "        a:\n          - nodeLabel: x\n          - nodeLabel: h\n", extra=interval
    )
    assert config.load(text).interval() == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty-file"),
        pytest.param("networkTopologyDiscovery: []", id="no-sources"),
        pytest.param(
            _label("        a:\n          - nodeLabel: x\n", enabled="false"), id="disabled"
        ),
        pytest.param("networkTopologyDiscovery:\n  - source: ufm\n    enabled: true\n", id="ufm"),
    ],
)
def test_label_discovery_not_enabled(text: str) -> None:
    assert config.load(text).label() is None


def test_first_enabled_label_entry_wins() -> None:
    types = "{networkTopologyTypes: {%s: [{nodeLabel: %s}, {nodeLabel: h}]}}"
    text = (
        "networkTopologyDiscovery:\n"
        f"  - {{source: label, enabled: false, config: {types % ('a', 'x')}}}\n"
        f"  - {{source: label, enabled: true, config: {types % ('b', 'y')}}}\n"
        f"  - {{source: label, enabled: true, config: {types % ('c', 'z')}}}\n"
    )
    label = config.load(text).label()
    assert label is not None and label.tiers() == {"b": ("y",)}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("[1, 2]", "the configuration must be a mapping", id="not-a-mapping"),
        pytest.param("a: [", "not YAML", id="not-yaml"),
        pytest.param(
            "networkTopologyDiscovery: {source: label}",
            "networkTopologyDiscovery: expected a list",
            id="not-a-list",
        ),
        pytest.param(
            "networkTopologyDiscovery: [{source: lldp, enabled: true}]",
            "networkTopologyDiscovery[0].source: Input should be 'label', 'ufm' or 'roce'",
            id="unknown-source",
        ),
        pytest.param(
            "networkTopologyDiscovery: [{enabled: true}]",
            "networkTopologyDiscovery[0].source: Field required",
            id="no-source",
        ),
        pytest.param(
            "networkTopologyDiscovery: [{source: label, enabled: perhaps}]",
            "networkTopologyDiscovery[0].enabled: Input should be a valid boolean",
            id="enabled-not-bool",
        ),
        pytest.param(
            "networkTopologyDiscovery: [{source: label, enabled: true, interval: soon}]",
            "networkTopologyDiscovery[0].interval: invalid duration 'soon'",
            id="interval-not-duration",
        ),
        pytest.param(
            "networkTopologyDiscovery: [{source: label, enabled: true, interval: 10}]",
            "networkTopologyDiscovery[0].interval: expected a duration such as '10s'",
            id="interval-bare-number",
        ),
        pytest.param(
            "networkTopologyDiscovery: [{source: label, enabled: true, config: [1]}]",
            "networkTopologyDiscovery[0].config: expected a mapping",
            id="config-not-mapping",
        ),
        pytest.param(
            _label("        abcdefghijklmnopqrstu:\n          - nodeLabel: x\n"),
            "networkTopologyDiscovery[0].config.networkTopologyTypes: abcdefghijklmnopqrstu: "
            "a topology type name has at most 20 characters",
            id="type-name-too-long",
        ),
        pytest.param(
            _label("        a:\n          - nodeLabel: x\n          - nodeLabel: x\n"),
            "networkTopologyTypes: a: each node label may appear once, repeated: ['x']",
            id="duplicate-label",
        ),
        pytest.param(
            _label("        a: []\n"),
            "networkTopologyTypes: a: list the node labels",
            id="no-labels",
        ),
        pytest.param(
            _label("        a:\n          - label: x\n"),
            "[0].config.networkTopologyTypes.a[0].nodeLabel: Field required",
            id="entry-without-nodeLabel",
        ),
        pytest.param(
            _label("        a:\n          - nodeLabel: ''\n"),
            "networkTopologyTypes.a[0].nodeLabel: String should have at least 1 character",
            id="empty-nodeLabel",
        ),
        pytest.param(
            _label("        .:\n          - nodeLabel: x\n"),
            "networkTopologyTypes: .: the name makes no valid HyperNode name",
            id="type-name-no-valid-name",
        ),
    ],
)
def test_bad_configuration_is_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        config.load(text)
    assert message in str(raised.value)


def test_disabled_label_entry_with_bad_config_is_refused() -> None:
    with pytest.raises(ValueError, match="repeated"):
        config.load(
            _label("        a:\n          - nodeLabel: x\n          - nodeLabel: x\n", "false")
        )


@pytest.mark.parametrize(
    ("name", "cleaned"),
    [
        pytest.param("topologyA2", "topologya2", id="lowercased"),
        pytest.param("gpu_rack.v1", "gpu-rack.v1", id="underscore"),
        pytest.param("nvl-72", "nvl-72", id="kept"),
        pytest.param("é9", "-9", id="non-ascii"),
    ],
)
def test_clean_type_name(name: str, cleaned: str) -> None:
    assert config.clean_type_name(name) == cleaned

"""Volcano's scheduler configuration YAML to session settings, and its refusals."""

from __future__ import annotations

from datetime import timedelta
from fractions import Fraction

import pytest
import yaml

from scheduling.framework import arguments, conf
from scheduling.framework.conf import CALDERA_DEFAULT, VOLCANO_DEFAULT, LoadedConf, load
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.tiers import Point
from scheduling.plugins.scoring import NODEORDER_WEIGHTS
from tests.access import DEPLOY

pytestmark = pytest.mark.unit

# The configuration Volcano's Helm chart installs, as a user would copy it.
HELM_CHART = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

# Volcano's CI configuration: sla in the first tier, reclaim and preempt.
VOLCANO_CI = """\
actions: "enqueue, allocate, backfill, reclaim, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: sla
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
    arguments:
      predicate.DynamicResourceAllocationEnable: true
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""


def _conf(actions: str = "enqueue, allocate", extra: str = "", share: str = "proportion") -> str:
    return f"""\
actions: "{actions}"
tiers:
- plugins:
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: {share}
{extra}"""


def test_volcano_defaults_load_and_spread() -> None:
    loaded = load(VOLCANO_DEFAULT)
    assert loaded.session.actions == (Action.ENQUEUE, Action.ALLOCATE, Action.BACKFILL)
    assert loaded.session.scoring.least_allocated == 1 and loaded.session.scoring.binpack == 0
    assert loaded.session.runs("overcommit")
    assert loaded.session.overcommit_factor == Fraction(6, 5)
    assert not loaded.session.capacity


def test_the_helm_charts_configuration_loads_unchanged_with_volcanos_victims() -> None:
    loaded = load(HELM_CHART)
    assert loaded.session.scoring.binpack == 1
    assert loaded.session.scoring.least_allocated == 1
    assert not loaded.session.whole_gang_victims
    (priority, gang, conformance), tier2 = loaded.session.tiers
    assert not gang.speaks(Point.PREEMPTABLE) and gang.speaks(Point.RECLAIMABLE)
    assert priority.speaks(Point.PREEMPTABLE) and conformance.speaks(Point.PREEMPTABLE)
    assert not next(p for p in tier2 if p.name == "drf").speaks(Point.PREEMPTABLE)


def test_calderas_victim_rule_is_its_own_argument_and_refuses_the_victim_switches() -> None:
    assert load(CALDERA_DEFAULT).session.whole_gang_victims
    assert not load(VOLCANO_DEFAULT).session.whole_gang_victims
    both = HELM_CHART.replace(
        "  - name: gang\n", "  - name: gang\n    arguments:\n      caldera.wholeGangVictims: true\n"
    )
    with pytest.raises(ValueError) as refused:
        load(both)
    assert str(refused.value) == (
        "tiers: ['drf.enablePreemptable: false', 'gang.enablePreemptable: false'] choose "
        "victims by Volcano's tier walk, which gang's caldera.wholeGangVictims: true replaces; "
        "drop one or the other"
    )
    with pytest.raises(ValueError, match=r"caldera\.wholeGangVictims must be true or false"):
        load(both.replace("wholeGangVictims: true", "wholeGangVictims: always"))


def test_volcano_ci_configuration_loads_with_sla_voting_first() -> None:
    loaded = load(VOLCANO_CI)
    assert Action.PREEMPT in loaded.session.actions and Action.RECLAIM in loaded.session.actions
    assert loaded.session.network_topology is not None
    session = loaded.session
    assert session.speakers(Point.JOB_ENQUEUEABLE) == ("sla", "overcommit", "proportion")
    assert session.speakers(Point.JOB_ORDER) == ("priority", "gang", "sla", "drf")
    assert session.sla_waiting is None  # only jobs that set their own wait at most that long


def test_sla_waiting_time_argument() -> None:
    extra = "  - name: sla\n    arguments:\n      sla-waiting-time: 1h30m\n"
    assert load(_conf(extra=extra)).session.sla_waiting == timedelta(hours=1, minutes=30)
    for bad in ("ten minutes", "0s", "-5m", "5"):
        with pytest.raises(ValueError, match=r"plugin sla: argument sla-waiting-time must be"):
            load(_conf(extra=extra.replace("1h30m", repr(bad))))


def test_network_topology_aware_is_off_without_the_plugin_and_reads_its_arguments() -> None:
    assert load(VOLCANO_DEFAULT).session.network_topology is None
    text = CALDERA_DEFAULT.replace(
        "  - name: network-topology-aware\n",
        "  - name: network-topology-aware\n    arguments:\n      weight: 3\n"
        "      hypernode.binpack.cpu: 2\n      hypernode.binpack.resources: nvidia.com/gpu\n"
        "      hypernode.binpack.resources.nvidia.com/gpu: 5\n",
    )
    topology = load(text).session.network_topology
    assert topology is not None and topology.weight == 3
    assert topology.binpack == {"cpu": 2, "memory": 1, "nvidia.com/gpu": 5}
    with pytest.raises(ValueError, match=r"network-topology-aware: argument weight"):
        load(text.replace("weight: 3", "weight: heavy"))


@pytest.mark.parametrize(
    ("arguments", "field", "value"),
    [
        ("binpack.weight: 10", "binpack", 10),
        ("binpack.cpu: 5", "binpack_cpu", 5),
        ("binpack.memory: 0", "binpack_memory", 0),
        ("binpack.resources: nvidia.com/gpu\n      binpack.resources.nvidia.com/gpu: 3", None, 3),
    ],
)
def test_binpack_arguments(arguments: str, field: str | None, value: int) -> None:
    extra = f"  - name: binpack\n    arguments:\n      {arguments}\n"
    scoring = load(_conf(extra=extra)).session.scoring
    if field is None:
        assert scoring.binpack_resources == {"nvidia.com/gpu": value}
    else:
        assert getattr(scoring, field) == value
    assert scoring.least_allocated == 0  # nodeorder is not listed: it does not score


def test_nodeorder_weights_and_overcommit_factor() -> None:
    extra = (
        "  - name: nodeorder\n    arguments:\n      leastrequested.weight: 0\n"
        "      mostrequested.weight: 2\n"
        "  - name: overcommit\n    arguments:\n      overcommit-factor: 1.5\n"
    )
    session = load(_conf(extra=extra)).session
    assert (session.scoring.least_allocated, session.scoring.most_allocated) == (0, 2)
    assert session.overcommit_factor == Fraction(3, 2)


def test_without_overcommit_the_cluster_does_not_vote_at_enqueue() -> None:
    assert load(_conf()).session.speakers(Point.JOB_ENQUEUEABLE) == ("proportion",)


def test_capacity_with_hierarchy() -> None:
    extra = ""
    text = _conf(share="capacity\n    enableHierarchy: true", extra=extra)
    session = load(text).session
    assert session.capacity and session.hierarchy


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_conf(extra="  - name: binpak\n"), "unknown plugin(s) ['binpak']"),
        (_conf(actions="enqueue, alocate"), "unknown action(s) ['alocate']"),
        (_conf(actions="enqueue, allocate, shuffle"), "Volcano's ['shuffle'] are not run"),
        (_conf(extra="  - name: drf\n    enablePreemtable: false\n"), "enablePreemtable"),
        (_conf(extra="  - name: capacity\n"), "one of proportion or capacity"),
        (_conf(extra="  - name: gang\n"), "repeated: ['gang']"),
        (
            'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n',
            "missing: ['predicates', 'conformance']",
        ),
        (
            _conf(extra="  - name: drf\n    enableHierarchy: true\n"),
            "drf.enableHierarchy conflicts with proportion",
        ),
        (_conf(extra="  - name: tdm\n"), "Caldera does not run Volcano's plugin(s) ['tdm']"),
        (
            _conf().replace("  - name: gang\n", "  - name: gang\n    enableJobReady: false\n"),
            "Caldera does not act on turning off ['gang.enableJobReady: false']",
        ),
        (
            _conf(extra="  - name: proportion\n    enableQueueOrder: false\n").replace(
                "  - name: proportion\n  - name: proportion", "  - name: proportion"
            ),
            "'proportion.enableQueueOrder: false'",
        ),
        (
            _conf(extra="  - name: binpack\n    arguments:\n      binpack.weight: heavy\n"),
            "binpack.weight must be a number",
        ),
        (
            _conf(extra="  - name: binpack\n    arguments:\n      binpack.weight: -1\n"),
            "whole number >= 0",
        ),
        ("actions: [enqueue\n", "not YAML"),
        ("- allocate\n", "must be a mapping"),
        (_conf() + "extras: 1\n", "extras"),
    ],
)
def test_bad_configurations_are_refused_naming_the_fault(text: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        load(text)
    assert message in str(refused.value)


def test_calderas_defaults_as_a_configuration_are_the_sessions_defaults() -> None:
    assert load(CALDERA_DEFAULT) == LoadedConf(session=SessionConfig())


def test_the_deployments_configmap_holds_calderas_defaults() -> None:
    (doc,) = yaml.safe_load_all((DEPLOY / "base" / "scheduler.yaml").read_text())
    assert doc["data"]["volcano-scheduler.conf"] == CALDERA_DEFAULT


def test_nodeorder_weights_default_to_volcanos_and_all_count_nothing_without_it() -> None:
    listed = load(_conf(extra="  - name: nodeorder\n")).session.scoring
    assert (listed.node_affinity, listed.taint_toleration, listed.balanced_allocation) == (2, 3, 1)
    assert (listed.pod_affinity, listed.pod_topology_spread, listed.least_allocated) == (2, 2, 1)
    absent = load(_conf()).session.scoring
    weights = [getattr(absent, field) for field in NODEORDER_WEIGHTS.values()]
    assert weights == [0] * len(NODEORDER_WEIGHTS)


def test_job_order_follows_the_plugins_their_tiers_and_their_switches() -> None:
    on = load(VOLCANO_DEFAULT).session
    assert on.speakers(Point.JOB_ORDER) == ("priority", "gang", "drf")
    absent = load(_conf()).session
    assert absent.speakers(Point.JOB_ORDER) == ("gang",)
    switched = load(
        _conf(extra="  - name: priority\n    enableJobOrder: false\n  - name: drf\n")
    ).session
    assert switched.speakers(Point.JOB_ORDER) == ("gang", "drf")


def test_a_configuration_of_every_volcano_plugin_names_in_one_line_what_caldera_does_not_run() -> (
    None
):
    plugins = "".join(f"  - name: {name}\n" for name in sorted(conf.VOLCANO_PLUGINS - {"capacity"}))
    text = f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n{plugins}'
    with pytest.raises(ValueError) as refused:
        load(text)
    message = str(refused.value)
    assert "\n" not in message
    not_run = sorted(conf.VOLCANO_PLUGINS - conf.SUPPORTED)
    assert f"Caldera does not run Volcano's plugin(s) {not_run}" in message


def test_a_switch_at_a_point_the_plugin_does_not_register_changes_nothing() -> None:
    """As in Volcano, where only the plugins registered at a point are asked there."""
    text = _conf(extra="  - name: overcommit\n    enableJobOrder: false\n")
    assert load(text) == load(_conf(extra="  - name: overcommit\n"))


def test_nodeorder_switched_off_scores_nothing() -> None:
    off = load(_conf(extra="  - name: nodeorder\n    enableNodeOrder: false\n")).session
    assert off.scoring == load(_conf()).session.scoring


# Every argument key Volcano's plugins read (pkg/scheduler/plugins/<name>/, the constants passed
# to Arguments.GetInt/GetBool/GetFloat64 and framework.Get), for the plugins Caldera runs;
# `<list>.<name>` stands for a per-resource weight. The plugins not named read none.
VOLCANO_ARGUMENTS = {
    "binpack": {
        "binpack.weight",
        "binpack.cpu",
        "binpack.memory",
        "binpack.resources",
        "binpack.resources.<name>",
    },
    "capacity": {
        "ancestorReclaimLevel",
        "capacity.DynamicResourceAllocationEnable",
        "capacity.DRAConsumableCapacityEnable",
    },
    "resource-strategy-fit": {"resourceStrategyFitWeight", "resources", "sra", "proportional"},
    "network-topology-aware": {
        "weight",
        "hypernode.binpack.cpu",
        "hypernode.binpack.memory",
        "hypernode.binpack.resources",
        "hypernode.binpack.resources.<name>",
        "hypernode.binpack.normal-pod.enable",
        "hypernode.binpack.normal-pod.fading",
        "hypernode.gradient.evict.max-hypernodes",
    },
    "nodeorder": {
        "nodeaffinity.weight",
        "podaffinity.weight",
        "leastrequested.weight",
        "balancedresource.weight",
        "mostrequested.weight",
        "tainttoleration.weight",
        "imagelocality.weight",
        "podtopologyspread.weight",
    },
    "nodegroup": {"strict", "enablePreferredOrder"},
    "overcommit": {"overcommit-factor"},
    "sla": {"sla-waiting-time"},
    "task-topology": {"task-topology.weight"},
    "extender": {
        f"extender.{key}"
        for key in (
            "urlPrefix",
            "httpTimeout",
            "onSessionOpenVerb",
            "onSessionCloseVerb",
            "predicateVerb",
            "prioritizeVerb",
            "preemptableVerb",
            "reclaimableVerb",
            "queueOverusedVerb",
            "jobEnqueueableVerb",
            "jobEnqueuedVerb",
            "jobReadyVerb",
            "allocateFuncVerb",
            "deallocateFuncVerb",
            "ignorable",
            "managedResources",
        )
    },
    "predicates": {
        "predicate.NodeAffinityEnable",
        "predicate.NodePortsEnable",
        "predicate.TaintTolerationEnable",
        "predicate.PodAffinityEnable",
        "predicate.NodeVolumeLimitsEnable",
        "predicate.VolumeZoneEnable",
        "predicate.PodTopologySpreadEnable",
        "predicate.VolumeBindingEnable",
        "predicate.DynamicResourceAllocationEnable",
        "predicate.CacheEnable",
        "volumebinding.bindTimeoutSeconds",
        "volumebinding.shape",
        "volumebinding.weight",
        "dynamicresources.filterTimeoutSeconds",
    },
}


def test_the_argument_keys_are_volcanos_read_or_accepted_without_effect() -> None:
    for plugin in conf.SUPPORTED:
        read = arguments.ARGUMENTS_READ.get(plugin, frozenset())
        without = arguments.ARGUMENTS_WITHOUT_EFFECT.get(plugin, {}).keys()
        assert not read & without, plugin
        lists = arguments.RESOURCE_LISTS
        assert not read & arguments.CALDERA_ARGUMENTS.get(plugin, {}).keys(), plugin
        per_resource = {f"{lists[plugin]}.<name>"} if plugin in lists else set()
        refused = arguments.ARGUMENTS_REFUSED.get(plugin, {}).keys()
        assert not read & refused, plugin
        found = read | without | per_resource | refused
        assert found == VOLCANO_ARGUMENTS.get(plugin, set()), plugin


def _with(plugin: str, arguments: str) -> str:
    """_conf's file with `plugin` (which must not be in it yet) third in the second tier."""
    extra = f"  - name: {plugin}\n    arguments:\n      {arguments}\n"
    return _conf(share="capacity" if plugin == "proportion" else "proportion", extra=extra)


@pytest.mark.parametrize(
    ("plugin", "key"),
    [
        (plugin, key.replace("<name>", "nvidia.com/gpu"))
        for plugin, keys in VOLCANO_ARGUMENTS.items()
        # in _conf already; extender's values are its own (tests/unit/scheduling/test_extender.py)
        if plugin not in ("predicates", "capacity", "extender")
        for key in sorted(keys)
    ],
)
def test_each_key_volcano_reads_loads(plugin: str, key: str) -> None:
    value = "true" if key.endswith((".enable", "Enable")) or plugin == "nodegroup" else "1"
    value = "10m" if plugin == "sla" else value
    nested = plugin == "resource-strategy-fit" and key != "resourceStrategyFitWeight"
    value = "{}" if nested else value  # its maps, empty: their defaults
    arguments = f"{key}: {value}"
    if key.endswith(".nvidia.com/gpu"):
        arguments += f"\n      {key.removesuffix('.nvidia.com/gpu')}: nvidia.com/gpu"
    load(_with(plugin, arguments))


def test_predicates_and_capacity_keys_load_and_change_nothing() -> None:
    predicates = "\n".join(
        f"      {key}: {'1' if key.startswith(('volumebinding.', 'dynamic')) else 'true'}"
        for key in sorted(VOLCANO_ARGUMENTS["predicates"])
        if key != "volumebinding.shape"
    )
    text = _conf().replace(
        "  - name: predicates\n", f"  - name: predicates\n    arguments:\n{predicates}\n"
    )
    assert load(text) == load(_conf())
    capacity = "\n".join(f"      {key}: 1" for key in sorted(VOLCANO_ARGUMENTS["capacity"]))
    text = _conf(share=f"capacity\n    arguments:\n{capacity}")
    assert load(text) == load(_conf(share="capacity"))


def test_imagelocality_weight_is_accepted_and_scores_nothing() -> None:
    """Volcano scores image locality; Caldera does not (README), so its weight changes nothing."""
    with_it = load(_with("nodeorder", "imagelocality.weight: 5"))
    assert with_it == load(_conf(extra="  - name: nodeorder\n"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            _with("nodeorder", "leastrequsted.weight: 0"),
            "tiers.1.plugins.2.arguments.leastrequsted.weight: plugin nodeorder has no such "
            "argument; known: ['balancedresource.weight', 'imagelocality.weight', "
            "'leastrequested.weight', 'mostrequested.weight', 'nodeaffinity.weight', "
            "'podaffinity.weight', 'podtopologyspread.weight', 'tainttoleration.weight']",
        ),
        (
            _with("binpack", "binpack.gpu: 2"),
            "tiers.1.plugins.2.arguments.binpack.gpu: plugin binpack has no such argument; "
            "known: ['binpack.cpu', 'binpack.memory', 'binpack.resources', "
            "'binpack.resources.<name>', 'binpack.weight']",
        ),
        (
            _with("binpack", "binpack.resources: nvidia.com/gpu\n      binpack.resources.gpu: 2"),
            "tiers.1.plugins.2.arguments.binpack.resources.gpu: plugin binpack reads a weight "
            "only for a resource listed in binpack.resources, which lists ['nvidia.com/gpu']",
        ),
        (
            _with("network-topology-aware", "hypernode.binpack.resources.nvidia.com/gpu: 2"),
            "arguments.hypernode.binpack.resources.nvidia.com/gpu: plugin network-topology-aware "
            "reads a weight only for a resource listed in hypernode.binpack.resources, which "
            "lists none",
        ),
        (
            _with("network-topology-aware", "wieght: 2"),
            "tiers.1.plugins.2.arguments.wieght: plugin network-topology-aware has no such",
        ),
        (
            _with("overcommit", "overcommit.factor: 2"),
            "arguments.overcommit.factor: plugin overcommit has no such argument; "
            "known: ['overcommit-factor']",
        ),
        (
            _conf().replace("  - name: gang\n", "  - name: gang\n    arguments:\n      x: 1\n"),
            "tiers.0.plugins.0.arguments.x: plugin gang has no such argument; "
            "known: ['caldera.wholeGangVictims']",
        ),
        (
            _with("drf", "drf.enableHierarchy: true"),
            "tiers.1.plugins.2.arguments.drf.enableHierarchy: plugin drf has no such argument",
        ),
        (
            _conf().replace(
                "  - name: predicates\n",
                "  - name: predicates\n    arguments:\n      predicate.NodePortEnable: false\n",
            ),
            "tiers.1.plugins.0.arguments.predicate.NodePortEnable: plugin predicates has no such",
        ),
        (
            _conf().replace(
                "  - name: predicates\n",
                "  - name: predicates\n    arguments:\n      predicate.NodePortsEnable: false\n",
            ),
            "tiers.1.plugins.0.arguments.predicate.NodePortsEnable: Caldera always runs this "
            "filter; `false` is refused",
        ),
    ],
)
def test_an_unknown_argument_key_is_refused_by_its_place(text: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        load(text)
    assert message in str(refused.value)

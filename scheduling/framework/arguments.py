"""A scheduler plugin's `arguments`: the keys of each plugin Caldera runs, and their readers.

The keys are Volcano's (`pkg/scheduler/plugins/<name>/`): `ARGUMENTS_READ` are the ones
Caldera acts on, `ARGUMENTS_WITHOUT_EFFECT` the ones it accepts and does not act on (the
scheduling page of the docs lists them), so a Volcano configuration still loads; any other key
is refused by its place in the file.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from fractions import Fraction
from typing import Any, Final

from pydantic import ValidationError

from models.duration import positive_duration
from scheduling.api.nodegroups import NodeGroupConfig
from scheduling.framework.session_config import TopologyConfig
from scheduling.plugins import extender
from scheduling.plugins.resource_strategy_fit import StrategyFitConfig
from scheduling.plugins.scoring import NODEORDER_WEIGHTS

BINPACK_WEIGHT: Final = "binpack.weight"
BINPACK_CPU: Final = "binpack.cpu"
BINPACK_MEMORY: Final = "binpack.memory"
BINPACK_RESOURCES: Final = "binpack.resources"
OVERCOMMIT_FACTOR: Final = "overcommit-factor"
TOPOLOGY_WEIGHT: Final = "weight"
HYPERNODE_BINPACK: Final = "hypernode.binpack"
HYPERNODE_RESOURCES: Final = f"{HYPERNODE_BINPACK}.resources"
NODEGROUP_STRICT: Final = "strict"
NODEGROUP_PREFERRED_ORDER: Final = "enablePreferredOrder"
SLA_WAITING_TIME: Final = "sla-waiting-time"
TASK_TOPOLOGY_WEIGHT: Final = "task-topology.weight"
WHOLE_GANG_VICTIMS: Final = "caldera.wholeGangVictims"
# Go's strconv.ParseBool, which Volcano's Arguments.GetBool applies to a quoted value.
_GO_BOOLS: Final = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}

# The argument keys Caldera reads, per plugin (a plugin not named here reads none).
ARGUMENTS_READ: Final[Mapping[str, frozenset[str]]] = {
    "binpack": frozenset({BINPACK_WEIGHT, BINPACK_CPU, BINPACK_MEMORY, BINPACK_RESOURCES}),
    "nodeorder": frozenset(NODEORDER_WEIGHTS),
    "overcommit": frozenset({OVERCOMMIT_FACTOR}),
    "network-topology-aware": frozenset(
        {TOPOLOGY_WEIGHT, HYPERNODE_RESOURCES}
        | {f"{HYPERNODE_BINPACK}.{k}" for k in ("cpu", "memory")}
        | {f"{HYPERNODE_BINPACK}.normal-pod.{k}" for k in ("enable", "fading")}
    ),
    "nodegroup": frozenset({NODEGROUP_STRICT, NODEGROUP_PREFERRED_ORDER}),
    "sla": frozenset({SLA_WAITING_TIME}),
    "task-topology": frozenset({TASK_TOPOLOGY_WEIGHT}),
    # Nested maps, checked whole by `strategy_fit` (unknown keys inside them refused too).
    "resource-strategy-fit": frozenset({"resourceStrategyFitWeight", "resources", "sra"}),
    "extender": extender.KEYS,  # values checked by `extender.parse`
}
# Keys Volcano's plugin reads that Caldera refuses when set, with why (`extender.parse`).
ARGUMENTS_REFUSED: Final[Mapping[str, Mapping[str, str]]] = {"extender": extender.UNBUILT}
# Caldera's own keys, which Volcano does not read (and ignores, as it ignores any unknown key).
CALDERA_ARGUMENTS: Final[Mapping[str, Mapping[str, str]]] = {
    "gang": {
        WHOLE_GANG_VICTIMS: (
            "true: reclaim and preempt evict a gang without spare tasks whole or not at all, "
            "asking every victim rule every time, and the tiers' enablePreemptable/"
            "enableReclaimable switches are refused; false or unset: Volcano's tier walk"
        )
    },
}
# Keys Volcano's plugin reads that Caldera accepts and does not act on, with why (the reference
# page lists them): what they tune is not in Caldera, or is always on in Caldera.
ALWAYS_FILTERS: Final = "Caldera always runs this filter; `false` is refused"
ARGUMENTS_WITHOUT_EFFECT: Final[Mapping[str, Mapping[str, str]]] = {
    "nodeorder": {"imagelocality.weight": "Caldera does not score image locality"},
    "predicates": {
        **{
            f"predicate.{name}Enable": ALWAYS_FILTERS
            for name in (
                "NodeAffinity",
                "NodePorts",
                "TaintToleration",
                "PodAffinity",
                "NodeVolumeLimits",
                "VolumeZone",
                "PodTopologySpread",
                "VolumeBinding",
                "DynamicResourceAllocation",
            )
        },
        "predicate.CacheEnable": "a cache of Volcano's predicate results; Caldera has none",
        "volumebinding.bindTimeoutSeconds": "Caldera binds volumes in a retried activity",
        "volumebinding.shape": "Caldera does not score storage capacity",
        "volumebinding.weight": "Caldera does not score storage capacity",
        "dynamicresources.filterTimeoutSeconds": "Caldera's device search has no timeout",
    },
    "capacity": {
        "ancestorReclaimLevel": "reclaim within the hierarchy is not levelled in Caldera",
        "capacity.DynamicResourceAllocationEnable": "Caldera counts DRA devices in quotas always",
        "capacity.DRAConsumableCapacityEnable": "consumable DRA capacity is not in Caldera",
    },
    "network-topology-aware": {
        "hypernode.gradient.evict.max-hypernodes": "topology-aware eviction is not in Caldera"
    },
    "resource-strategy-fit": {
        "proportional": "its predicate is not built in Caldera; `enable: true` is refused"
    },
}
# Per-resource weights: `<list>.<name>` for each resource `<list>` names (comma-separated).
RESOURCE_LISTS: Final[Mapping[str, str]] = {
    "binpack": BINPACK_RESOURCES,
    "network-topology-aware": HYPERNODE_RESOURCES,
}


def as_number(plugin: str, key: str, value: object) -> Fraction:
    """An argument as a number; Volcano reads ints and floats alike (and quoted ones)."""
    if isinstance(value, bool):
        raise ValueError(f"plugin {plugin}: argument {key} must be a number, not {value!r}")
    try:
        return Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(
            f"plugin {plugin}: argument {key} must be a number, not {value!r}"
        ) from None


def as_weight(plugin: str, key: str, value: object) -> int:
    number = as_number(plugin, key, value)
    if number.denominator != 1 or number < 0:
        raise ValueError(f"plugin {plugin}: argument {key} must be a whole number >= 0")
    return int(number)


def binpack(arguments: Mapping[str, object], scoring: dict[str, Any]) -> None:
    """binpack.weight (1 when the plugin is on), binpack.cpu/memory, and extended resources
    listed in binpack.resources with their weights as binpack.resources.<name> (default 1)."""
    scoring["binpack"] = as_weight("binpack", BINPACK_WEIGHT, arguments.get(BINPACK_WEIGHT, 1))
    scoring["binpack_cpu"] = as_weight("binpack", BINPACK_CPU, arguments.get(BINPACK_CPU, 1))
    scoring["binpack_memory"] = as_weight(
        "binpack", BINPACK_MEMORY, arguments.get(BINPACK_MEMORY, 1)
    )
    extended: dict[str, int] = {}
    for name in listed(arguments, BINPACK_RESOURCES):
        key = f"{BINPACK_RESOURCES}.{name}"
        extended[name] = as_weight("binpack", key, arguments.get(key, 1))
    scoring["binpack_resources"] = extended


def listed(arguments: Mapping[str, object], key: str) -> list[str]:
    """The resource names a `binpack.resources`-like argument lists, comma-separated."""
    listed = str(arguments.get(key, "") or "")
    return [name for name in (part.strip() for part in listed.split(",")) if name]


def network_topology(arguments: Mapping[str, object]) -> TopologyConfig:
    """weight, and hypernode.binpack.cpu/memory/resources[.<name>] (each 1 by default)."""
    plugin, prefix = "network-topology-aware", HYPERNODE_BINPACK
    weights = {
        "cpu": as_weight(plugin, f"{prefix}.cpu", arguments.get(f"{prefix}.cpu", 1)),
        "memory": as_weight(plugin, f"{prefix}.memory", arguments.get(f"{prefix}.memory", 1)),
    }
    for name in listed(arguments, HYPERNODE_RESOURCES):
        key = f"{HYPERNODE_RESOURCES}.{name}"
        weights[name] = as_weight(plugin, key, arguments.get(key, 1))
    weight = as_weight(plugin, TOPOLOGY_WEIGHT, arguments.get(TOPOLOGY_WEIGHT, 1))
    normal = arguments.get(f"{prefix}.normal-pod.enable", True)
    if not isinstance(normal, bool):
        raise ValueError(f"plugin {plugin}: argument {prefix}.normal-pod.enable must be true/false")
    fading = Fraction(4, 5)
    if (text := arguments.get(f"{prefix}.normal-pod.fading")) is not None:
        given = as_number(plugin, f"{prefix}.normal-pod.fading", text)
        fading = given if given >= 0 else fading  # Volcano resets a negative fading
    return TopologyConfig(weight=weight, binpack=weights, normal_pods=normal, fading=fading)


def as_bool(plugin: str, key: str, value: object) -> bool:
    """A switch argument: a YAML boolean, or a string Go's ParseBool reads, as Volcano's
    GetBool takes; anything else is refused (Volcano would warn and keep the default)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _GO_BOOLS:
        return _GO_BOOLS[value]
    raise ValueError(f"plugin {plugin}: argument {key} must be true or false, not {value!r}")


def nodegroup(
    arguments: Mapping[str, object],
    hierarchy: bool | None,
    predicate: bool | None,
    node_order: bool | None,
) -> NodeGroupConfig:
    """`strict` (true) and `enablePreferredOrder` (false), with the entry's enableHierarchy,
    enablePredicate and enableNodeOrder switches (unset: off, on, on, as Volcano reads them)."""
    read = {
        field: as_bool("nodegroup", key, arguments[key])
        for key, field in (
            (NODEGROUP_STRICT, "strict"),
            (NODEGROUP_PREFERRED_ORDER, "preferred_order"),
        )
        if key in arguments
    }
    return NodeGroupConfig(
        **read,
        hierarchy=bool(hierarchy),
        predicate=predicate is not False,
        node_order=node_order is not False,
    )


def sla_waiting(arguments: Mapping[str, object]) -> timedelta | None:
    """`sla-waiting-time`, a Go duration above zero; None when not given. Volcano logs a bad
    value and runs without the limit; Caldera refuses it, as it would silently do less."""
    if SLA_WAITING_TIME not in arguments:
        return None
    given = arguments[SLA_WAITING_TIME]
    waiting = positive_duration(given) if isinstance(given, str) else None
    if waiting is None:
        raise ValueError(
            f"plugin sla: argument {SLA_WAITING_TIME} must be a duration above zero such as "
            f"'10m', not {given!r}"
        )
    return waiting


def whole_gang_victims(arguments: Mapping[str, object]) -> bool:
    """gang's `caldera.wholeGangVictims`; unset, Volcano's victims, as its file means them."""
    value = arguments.get(WHOLE_GANG_VICTIMS, False)
    return as_bool("gang", WHOLE_GANG_VICTIMS, value)


def strategy_fit(arguments: Mapping[str, object]) -> StrategyFitConfig:
    """resource-strategy-fit's arguments, nested maps checked to their leaves: a key the
    plugin does not read, a strategy it does not know, a weight below 1, an invalid resource
    pattern, or the unbuilt proportional predicate switched on is refused."""
    try:
        return StrategyFitConfig.model_validate(dict(arguments))
    except ValidationError as e:
        found = "; ".join(
            f"{'.'.join(str(p) for p in item['loc']) or 'arguments'}: {item['msg']}"
            for item in e.errors()
        )
        raise ValueError(f"plugin resource-strategy-fit: {found}") from None


def _strategy_fit(arguments: Mapping[str, object], scoring: dict[str, Any]) -> None:
    scoring["strategy_fit"] = strategy_fit(arguments)


def task_topology(arguments: Mapping[str, object], scoring: dict[str, Any]) -> None:
    """task-topology.weight, 1 when the plugin is on (Volcano keeps 1 for a value that is no
    integer; Caldera refuses it, and a negative one, which would turn the scores around)."""
    given = arguments.get(TASK_TOPOLOGY_WEIGHT, 1)
    scoring["task_topology"] = as_weight("task-topology", TASK_TOPOLOGY_WEIGHT, given)


def nodeorder(arguments: Mapping[str, object], scoring: dict[str, Any]) -> None:
    for key, field in NODEORDER_WEIGHTS.items():
        if key in arguments:
            scoring[field] = as_weight("nodeorder", key, arguments[key])


def check(tier: int, index: int, name: str, given: Mapping[str, object]) -> None:
    """Refuse an argument key the plugin does not have, by its place in the file, and a
    filter switched off that Caldera always runs. A per-resource weight counts only for a
    resource its list names, as Volcano reads no other."""
    without = ARGUMENTS_WITHOUT_EFFECT.get(name, {})
    ours = CALDERA_ARGUMENTS.get(name, {}).keys()
    refused = ARGUMENTS_REFUSED.get(name, {}).keys()
    known = ARGUMENTS_READ.get(name, frozenset()) | without.keys() | ours | refused
    listing = RESOURCE_LISTS.get(name)
    named = listed(given, listing) if listing else []
    for key in given:
        where = f"tiers.{tier}.plugins.{index}.arguments.{key}"
        if without.get(key) == ALWAYS_FILTERS and not as_bool(name, key, given[key]):
            raise ValueError(f"{where}: {ALWAYS_FILTERS}")
        if key in known or (listing and key in {f"{listing}.{r}" for r in named}):
            continue
        if listing and key.startswith(f"{listing}."):
            raise ValueError(
                f"{where}: plugin {name} reads a weight only for a resource listed in "
                f"{listing}, which lists {named or 'none'}"
            )
        shown = sorted(known | ({f"{listing}.<name>"} if listing else set()))
        raise ValueError(f"{where}: plugin {name} has no such argument; known: {shown or 'none'}")
    if name == "resource-strategy-fit":  # its maps are checked inside too, on or off
        try:
            strategy_fit(given)
        except ValueError as e:
            raise ValueError(f"tiers.{tier}.plugins.{index}.arguments: {e}") from None


READERS: Final[Mapping[str, Callable[[Mapping[str, object], dict[str, Any]], None]]] = {
    "binpack": binpack,
    "nodeorder": nodeorder,
    "resource-strategy-fit": _strategy_fit,
    "task-topology": task_topology,
}

"""Volcano's scheduler configuration (`volcano-scheduler.conf`) to a `SessionConfig`.

The same YAML vc-scheduler reads: an `actions` string, `tiers` of `plugins` with their
`enable*` switches and `arguments`, and per-action `configurations`. A name Volcano does not
know (action or plugin), a switch it does not have, or an argument key the plugin does not
read is an error naming it, so a typo never goes unnoticed. The argument keys of each plugin
Caldera runs are Volcano's (`pkg/scheduler/plugins/<name>/`): `ARGUMENTS_READ` are the ones
Caldera acts on, `ARGUMENTS_WITHOUT_EFFECT` the ones it accepts and does not act on (the README
lists them), so a Volcano configuration still loads. Plugins Volcano has and Caldera does not
run are reported in `LoadedConf.ignored` for the caller to warn about, their arguments
unread; the ones every Caldera session runs (gang, predicates, conformance, and one of
proportion or capacity) must be listed, since leaving them out would ask for a scheduler
Caldera is not.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models import conffile
from scheduling.framework.session_config import (
    DEFAULT_OVERCOMMIT,
    Action,
    SessionConfig,
    TopologyConfig,
    parse_actions,
)
from scheduling.plugins.scoring import NODEORDER_WEIGHTS, ScoringConfig

# vc-scheduler's own configuration when it is started without a file.
VOLCANO_DEFAULT: Final = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

# What a session runs without a configuration (`SessionConfig()`), as a configuration: the
# dev stack's file and the deployment's ConfigMap start from it. Beside Volcano's built-in
# list, reclaim, and network-topology-aware so a job's networkTopology is kept.
CALDERA_DEFAULT: Final = VOLCANO_DEFAULT.replace(
    '"enqueue, allocate, backfill"', '"enqueue, allocate, backfill, reclaim"'
).replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: network-topology-aware\n")

# Every plugin Volcano registers; of these Caldera runs `SUPPORTED`.
VOLCANO_PLUGINS: Final = frozenset(
    {
        "binpack",
        "capacity",
        "cdp",
        "conformance",
        "deviceshare",
        "drf",
        "extender",
        "gang",
        "network-topology-aware",
        "nodegroup",
        "nodeorder",
        "numaaware",
        "overcommit",
        "pdb",
        "predicates",
        "priority",
        "proportion",
        "rescheduling",
        "resource-strategy-fit",
        "resourcequota",
        "sla",
        "task-topology",
        "tdm",
        "usage",
    }
)
SUPPORTED: Final = frozenset(
    {
        "binpack",
        "capacity",
        "conformance",
        "drf",
        "gang",
        "network-topology-aware",
        "nodeorder",
        "overcommit",
        "predicates",
        "priority",
        "proportion",
    }
)
ALWAYS_ON: Final = ("gang", "predicates", "conformance")
VOLCANO_ACTIONS: Final = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}
    | {"gangpreempt", "gangreclaim"}
)

BINPACK_WEIGHT: Final = "binpack.weight"
BINPACK_CPU: Final = "binpack.cpu"
BINPACK_MEMORY: Final = "binpack.memory"
BINPACK_RESOURCES: Final = "binpack.resources"
OVERCOMMIT_FACTOR: Final = "overcommit-factor"
TOPOLOGY_WEIGHT: Final = "weight"
HYPERNODE_BINPACK: Final = "hypernode.binpack"
HYPERNODE_RESOURCES: Final = f"{HYPERNODE_BINPACK}.resources"

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
}
# Keys Volcano's plugin reads that Caldera accepts and does not act on: what they tune is not
# in Caldera (image locality, the DRA and volume-binding plugins, gradient eviction, capacity's
# ancestor reclaim levels) or is always on (each of kube-scheduler's filters).
ARGUMENTS_WITHOUT_EFFECT: Final[Mapping[str, frozenset[str]]] = {
    "nodeorder": frozenset({"imagelocality.weight"}),
    "predicates": frozenset(
        {
            f"predicate.{name}Enable"
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
                "Cache",
            )
        }
        | {"volumebinding.bindTimeoutSeconds", "volumebinding.shape", "volumebinding.weight"}
        | {"dynamicresources.filterTimeoutSeconds"}
    ),
    "capacity": frozenset(
        {
            "ancestorReclaimLevel",
            "capacity.DynamicResourceAllocationEnable",
            "capacity.DRAConsumableCapacityEnable",
        }
    ),
    "network-topology-aware": frozenset({"hypernode.gradient.evict.max-hypernodes"}),
}
# Per-resource weights: `<list>.<name>` for each resource `<list>` names (comma-separated).
RESOURCE_LISTS: Final[Mapping[str, str]] = {
    "binpack": BINPACK_RESOURCES,
    "network-topology-aware": HYPERNODE_RESOURCES,
}


class PluginOption(BaseModel):
    """One `plugins` entry: the name, Volcano's per-extension-point switches, arguments."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str
    enable_job_order: bool | None = Field(default=None, alias="enableJobOrder")
    enable_hierarchy: bool | None = Field(default=None, alias="enableHierarchy")
    enable_job_ready: bool | None = Field(default=None, alias="enableJobReady")
    enable_job_pipelined: bool | None = Field(default=None, alias="enableJobPipelined")
    enable_task_order: bool | None = Field(default=None, alias="enableTaskOrder")
    enable_preemptable: bool | None = Field(default=None, alias="enablePreemptable")
    enable_reclaimable: bool | None = Field(default=None, alias="enableReclaimable")
    enable_preemptive: bool | None = Field(default=None, alias="enablePreemptive")
    enable_queue_order: bool | None = Field(default=None, alias="enableQueueOrder")
    enable_cluster_order: bool | None = Field(default=None, alias="enabledClusterOrder")
    enable_predicate: bool | None = Field(default=None, alias="enablePredicate")
    enable_best_node: bool | None = Field(default=None, alias="enableBestNode")
    enable_node_order: bool | None = Field(default=None, alias="enableNodeOrder")
    enable_target_job: bool | None = Field(default=None, alias="enableTargetJob")
    enable_reserved_nodes: bool | None = Field(default=None, alias="enableReservedNodes")
    enable_job_enqueued: bool | None = Field(default=None, alias="enableJobEnqueued")
    enable_victim: bool | None = Field(default=None, alias="enabledVictim")
    enable_job_starving: bool | None = Field(default=None, alias="enableJobStarving")
    enable_overused: bool | None = Field(default=None, alias="enabledOverused")
    enable_allocatable: bool | None = Field(default=None, alias="enabledAllocatable")
    enable_hyper_node_order: bool | None = Field(default=None, alias="enabledHyperNodeOrder")
    enable_sub_job_ready: bool | None = Field(default=None, alias="enabledSubJobReady")
    enable_sub_job_pipelined: bool | None = Field(default=None, alias="enabledSubJobPipelined")
    enable_sub_job_order: bool | None = Field(default=None, alias="enabledSubJobOrder")
    enable_hyper_node_gradient: bool | None = Field(default=None, alias="enabledHyperNodeGradient")
    arguments: dict[str, Any] = Field(default_factory=dict)


class Tier(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    plugins: tuple[PluginOption, ...] = ()


class ActionConfiguration(BaseModel):
    """A `configurations` entry: arguments for one action."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class SchedulerConfiguration(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    actions: str = ""
    tiers: tuple[Tier, ...] = ()
    configurations: tuple[ActionConfiguration, ...] = ()
    metrics: dict[str, str] = Field(default_factory=dict)


class LoadedConf(BaseModel):
    """What a configuration asks of the sessions, and the plugins named that Caldera skips."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: SessionConfig
    ignored: tuple[str, ...] = ()


def _number(plugin: str, key: str, value: object) -> Fraction:
    """An argument as a number; Volcano reads ints and floats alike (and quoted ones)."""
    if isinstance(value, bool):
        raise ValueError(f"plugin {plugin}: argument {key} must be a number, not {value!r}")
    try:
        return Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ValueError(
            f"plugin {plugin}: argument {key} must be a number, not {value!r}"
        ) from None


def _weight(plugin: str, key: str, value: object) -> int:
    number = _number(plugin, key, value)
    if number.denominator != 1 or number < 0:
        raise ValueError(f"plugin {plugin}: argument {key} must be a whole number >= 0")
    return int(number)


def _binpack(arguments: Mapping[str, object], scoring: dict[str, Any]) -> None:
    """binpack.weight (1 when the plugin is on), binpack.cpu/memory, and extended resources
    listed in binpack.resources with their weights as binpack.resources.<name> (default 1)."""
    scoring["binpack"] = _weight("binpack", BINPACK_WEIGHT, arguments.get(BINPACK_WEIGHT, 1))
    scoring["binpack_cpu"] = _weight("binpack", BINPACK_CPU, arguments.get(BINPACK_CPU, 1))
    scoring["binpack_memory"] = _weight("binpack", BINPACK_MEMORY, arguments.get(BINPACK_MEMORY, 1))
    extended: dict[str, int] = {}
    for name in _listed(arguments, BINPACK_RESOURCES):
        key = f"{BINPACK_RESOURCES}.{name}"
        extended[name] = _weight("binpack", key, arguments.get(key, 1))
    scoring["binpack_resources"] = extended


def _listed(arguments: Mapping[str, object], key: str) -> list[str]:
    """The resource names a `binpack.resources`-like argument lists, comma-separated."""
    listed = str(arguments.get(key, "") or "")
    return [name for name in (part.strip() for part in listed.split(",")) if name]


def _network_topology(arguments: Mapping[str, object]) -> TopologyConfig:
    """weight, and hypernode.binpack.cpu/memory/resources[.<name>] (each 1 by default)."""
    plugin, prefix = "network-topology-aware", HYPERNODE_BINPACK
    weights = {
        "cpu": _weight(plugin, f"{prefix}.cpu", arguments.get(f"{prefix}.cpu", 1)),
        "memory": _weight(plugin, f"{prefix}.memory", arguments.get(f"{prefix}.memory", 1)),
    }
    for name in _listed(arguments, HYPERNODE_RESOURCES):
        key = f"{HYPERNODE_RESOURCES}.{name}"
        weights[name] = _weight(plugin, key, arguments.get(key, 1))
    weight = _weight(plugin, TOPOLOGY_WEIGHT, arguments.get(TOPOLOGY_WEIGHT, 1))
    normal = arguments.get(f"{prefix}.normal-pod.enable", True)
    if not isinstance(normal, bool):
        raise ValueError(f"plugin {plugin}: argument {prefix}.normal-pod.enable must be true/false")
    fading = Fraction(4, 5)
    if (text := arguments.get(f"{prefix}.normal-pod.fading")) is not None:
        given = _number(plugin, f"{prefix}.normal-pod.fading", text)
        fading = given if given >= 0 else fading  # Volcano resets a negative fading
    return TopologyConfig(weight=weight, binpack=weights, normal_pods=normal, fading=fading)


def _nodeorder(arguments: Mapping[str, object], scoring: dict[str, Any]) -> None:
    for key, field in NODEORDER_WEIGHTS.items():
        if key in arguments:
            scoring[field] = _weight("nodeorder", key, arguments[key])


def _check_arguments(tier: int, index: int, plugin: PluginOption) -> None:
    """Refuse an argument key the plugin does not have, by its place in the file.

    A plugin Caldera does not run is skipped whole (`LoadedConf.ignored`), its arguments
    unread. A per-resource weight counts only for a resource its list names, as Volcano reads
    no other.
    """
    name = plugin.name
    if name not in SUPPORTED:
        return
    known = ARGUMENTS_READ.get(name, frozenset()) | ARGUMENTS_WITHOUT_EFFECT.get(name, frozenset())
    listing = RESOURCE_LISTS.get(name)
    listed = _listed(plugin.arguments, listing) if listing else []
    for key in plugin.arguments:
        if key in known or (listing and key in {f"{listing}.{r}" for r in listed}):
            continue
        where = f"tiers.{tier}.plugins.{index}.arguments.{key}"
        if listing and key.startswith(f"{listing}."):
            raise ValueError(
                f"{where}: plugin {name} reads a weight only for a resource listed in "
                f"{listing}, which lists {listed or 'none'}"
            )
        shown = sorted(known | ({f"{listing}.<name>"} if listing else set()))
        raise ValueError(f"{where}: plugin {name} has no such argument; known: {shown or 'none'}")


_ARGUMENT_READERS: Final[Mapping[str, Callable[[Mapping[str, object], dict[str, Any]], None]]] = {
    "binpack": _binpack,
    "nodeorder": _nodeorder,
}


def _validation_message(error: ValidationError) -> str:
    """pydantic's errors as `tiers.0.plugins.1.enablePreemtable: Extra inputs...`."""
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def load(text: str) -> LoadedConf:
    """Parse a volcano-scheduler.conf; ValueError names what is wrong."""
    document = conffile.mapping(text, "actions and tiers")
    try:
        conf = SchedulerConfiguration.model_validate(document)
    except ValidationError as e:
        raise ValueError(_validation_message(e)) from None
    return from_configuration(conf)


def from_configuration(conf: SchedulerConfiguration) -> LoadedConf:
    """The session settings a parsed configuration asks for."""
    plugins = [p for tier in conf.tiers for p in tier.plugins]
    names = [p.name for p in plugins]
    unknown = sorted({n for n in names if n not in VOLCANO_PLUGINS})
    if unknown:
        raise ValueError(f"tiers: unknown plugin(s) {unknown}, known: {sorted(VOLCANO_PLUGINS)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"tiers: each plugin may appear once, repeated: {repeated}")
    missing = [n for n in ALWAYS_ON if n not in names]
    if missing:
        raise ValueError(f"tiers: Caldera always runs {list(ALWAYS_ON)}; missing: {missing}")
    for t, tier in enumerate(conf.tiers):
        for i, plugin in enumerate(tier.plugins):
            _check_arguments(t, i, plugin)
    by_name = {p.name: p for p in plugins}
    shares = [n for n in ("proportion", "capacity") if n in by_name]
    if len(shares) != 1:
        raise ValueError(
            f"tiers: Caldera shares queues with one of proportion or capacity; enabled: {shares}"
        )
    drf = by_name.get("drf")
    if drf is not None and drf.enable_hierarchy and "proportion" in by_name:
        raise ValueError("tiers: proportion and drf with hierarchy enabled conflict")
    action_names = {part.strip() for part in conf.actions.split(",") if part.strip()}
    foreign = sorted(action_names & VOLCANO_ACTIONS - {a.value for a in Action})
    if foreign:
        raise ValueError(f"actions: Volcano's {foreign} are not run by Caldera")
    actions = parse_actions(conf.actions)
    for configuration in conf.configurations:
        if configuration.name not in VOLCANO_ACTIONS:
            raise ValueError(f"configurations: unknown action {configuration.name!r}")
    # Without nodeorder none of its scores count; with it, each has Volcano's default weight.
    scoring: dict[str, Any] = (
        {} if "nodeorder" in by_name else dict.fromkeys(NODEORDER_WEIGHTS.values(), 0)
    )
    for name, reader in _ARGUMENT_READERS.items():
        if name in by_name:
            reader(by_name[name].arguments, scoring)
    overcommit = by_name.get("overcommit")
    factor = DEFAULT_OVERCOMMIT
    if overcommit is not None and OVERCOMMIT_FACTOR in overcommit.arguments:
        factor = _number("overcommit", OVERCOMMIT_FACTOR, overcommit.arguments[OVERCOMMIT_FACTOR])
    capacity = by_name.get("capacity")
    priority, drf = by_name.get("priority"), by_name.get("drf")
    topology = by_name.get("network-topology-aware")
    session = SessionConfig(
        job_priority=priority is not None and priority.enable_job_order is not False,
        drf_order=drf is not None and drf.enable_job_order is not False,
        actions=actions,
        overcommit_factor=factor,
        scoring=ScoringConfig(**scoring),
        overcommit=overcommit is not None,
        capacity=capacity is not None,
        hierarchy=bool(capacity is not None and capacity.enable_hierarchy),
        network_topology=_network_topology(topology.arguments) if topology else None,
    )
    ignored = tuple(n for n in names if n not in SUPPORTED)
    return LoadedConf(session=session, ignored=ignored)

"""Volcano's scheduler configuration (`volcano-scheduler.conf`) to a `SessionConfig`.

The same YAML vc-scheduler reads: an `actions` string, `tiers` of `plugins` with their
`enable*` switches and `arguments`, and per-action `configurations`. A configuration means
what it says or does not load: a name Volcano does not know (action or plugin), a switch it
does not have, or an argument key the plugin does not read is an error naming it, and so is a
plugin Volcano has and Caldera does not run (`SUPPORTED`), or a switch turned off where Caldera
would not act on it (`HONOURED`). The tiers and their switches become `SessionConfig.tiers`,
which the session asks as Volcano's framework does. The argument keys of each plugin Caldera
runs are Volcano's, checked and read by `arguments`. The plugins every Caldera session runs
(gang, predicates, conformance, and one of proportion or capacity) must be listed, since leaving
them out would ask for a scheduler Caldera is not.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models import conffile
from scheduling.framework import action_arguments, arguments
from scheduling.framework.session_config import (
    DEFAULT_OVERCOMMIT,
    Action,
    SessionConfig,
    parse_actions,
)
from scheduling.framework.tiers import REGISTERED, SWITCHES, PluginOn, Point, Tiers
from scheduling.plugins import extender
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
# list, reclaim, network-topology-aware so a job's networkTopology is kept, and Caldera's
# victim rule (a gang is evicted whole or not at all).
CALDERA_DEFAULT: Final = (
    VOLCANO_DEFAULT.replace(
        '"enqueue, allocate, backfill"', '"enqueue, allocate, backfill, reclaim"'
    )
    .replace("  - name: nodeorder\n", "  - name: nodeorder\n  - name: network-topology-aware\n")
    .replace(
        "  - name: gang\n",
        f"  - name: gang\n    arguments:\n      {arguments.WHOLE_GANG_VICTIMS}: true\n",
    )
)

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
        "cdp",
        "conformance",
        "drf",
        "extender",
        "gang",
        "network-topology-aware",
        "nodegroup",
        "nodeorder",
        "overcommit",
        "pdb",
        "predicates",
        "priority",
        "proportion",
        "resource-strategy-fit",
        "resourcequota",
        "sla",
        "task-topology",
    }
)
# Per plugin Caldera runs, the extension points at which turning its switch off changes what
# the session does; turning off any other point the plugin registers (`tiers.REGISTERED`) is
# refused. A switch at a point the plugin does not register has no effect in Volcano either.
_VICTIMS: Final = frozenset({Point.PREEMPTABLE, Point.RECLAIMABLE})
HONOURED: Final[Mapping[str, frozenset[Point]]] = {
    "priority": frozenset({Point.JOB_ORDER, Point.PREEMPTABLE}),
    "gang": frozenset({Point.JOB_ORDER, Point.JOB_PIPELINED, Point.SUB_JOB_PIPELINED}) | _VICTIMS,
    "conformance": _VICTIMS,
    # drf registers QueueOrder and Reclaimable only with enableHierarchy: without it, off, as
    # on, they are mute.
    "drf": frozenset({Point.JOB_ORDER, Point.QUEUE_ORDER}) | _VICTIMS,
    "overcommit": frozenset({Point.JOB_ENQUEUEABLE}),
    "proportion": frozenset({Point.JOB_ENQUEUEABLE, Point.RECLAIMABLE}),
    "capacity": frozenset({Point.JOB_ENQUEUEABLE, Point.RECLAIMABLE}),
    "sla": frozenset({Point.JOB_ORDER, Point.JOB_ENQUEUEABLE, Point.JOB_PIPELINED}),
    "resourcequota": frozenset({Point.JOB_ENQUEUEABLE}),
    "nodegroup": frozenset({Point.PREDICATE, Point.NODE_ORDER}),
    "binpack": frozenset({Point.NODE_ORDER}),
    "nodeorder": frozenset({Point.NODE_ORDER}),
    # VictimTasks is asked by the shuffle action alone, which is refused: off, as on, it is mute.
    "pdb": frozenset({Point.VICTIM_TASKS}) | _VICTIMS,
    "cdp": _VICTIMS,
    "extender": frozenset({Point.PREDICATE, Point.NODE_ORDER, Point.JOB_ENQUEUEABLE}) | _VICTIMS,
    # Its Predicate is registered only with `proportional` on, which is refused: off, as on,
    # it is mute.
    "resource-strategy-fit": frozenset({Point.NODE_ORDER, Point.PREDICATE}),
    "task-topology": frozenset({Point.TASK_ORDER, Point.NODE_ORDER}),
}
ALWAYS_ON: Final = ("gang", "predicates", "conformance")
VOLCANO_ACTIONS: Final = frozenset(
    {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}
    | {"gangpreempt", "gangreclaim"}
)


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
    """What a configuration asks of the sessions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: SessionConfig


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


def _switched_off(plugin: PluginOption) -> dict[str, frozenset[Point]]:
    """The entry's switches set false (by their Volcano name), with the points they gate."""
    given = plugin.model_dump(by_alias=True, exclude_none=True)
    return {name: SWITCHES[name] for name, on in given.items() if name in SWITCHES and not on}


def _tiers(conf: SchedulerConfiguration) -> Tiers:
    """The configuration's tiers, each plugin with the points it registers that its switches
    turned off."""
    return tuple(
        tuple(
            PluginOn(
                name=p.name,
                off=frozenset().union(*_switched_off(p).values()) & REGISTERED[p.name],
            )
            for p in tier.plugins
        )
        for tier in conf.tiers
    )


def _unhonoured(plugins: list[PluginOption]) -> list[str]:
    """`plugin.enableX: false` for each switch turned off where Caldera would not act on it."""
    refused = []
    for plugin in plugins:
        for switch, points in _switched_off(plugin).items():
            if points & REGISTERED[plugin.name] - HONOURED.get(plugin.name, frozenset()):
                refused.append(f"{plugin.name}.{switch}: false")
    return refused


def _check_plugins(plugins: list[PluginOption]) -> None:
    names = [p.name for p in plugins]
    unknown = sorted({n for n in names if n not in VOLCANO_PLUGINS})
    if unknown:
        raise ValueError(f"tiers: unknown plugin(s) {unknown}, known: {sorted(VOLCANO_PLUGINS)}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"tiers: each plugin may appear once, repeated: {repeated}")
    foreign = sorted({n for n in names if n not in SUPPORTED})
    if foreign:
        raise ValueError(
            f"tiers: Caldera does not run Volcano's plugin(s) {foreign} (docs/reference/"
            f"volcano-scheduler.md says why); it runs {sorted(SUPPORTED)}"
        )
    missing = [n for n in ALWAYS_ON if n not in names]
    if missing:
        raise ValueError(f"tiers: Caldera always runs {list(ALWAYS_ON)}; missing: {missing}")
    refused = _unhonoured(plugins)
    if refused:
        raise ValueError(
            f"tiers: Caldera does not act on turning off {refused}; the switches it honours "
            "are listed in docs/reference/volcano-scheduler.md"
        )
    by_name = {p.name: p for p in plugins}
    shares = [n for n in ("proportion", "capacity") if n in by_name]
    if len(shares) != 1:
        raise ValueError(
            f"tiers: Caldera shares queues with one of proportion or capacity; enabled: {shares}"
        )
    drf = by_name.get("drf")
    if drf is not None and drf.enable_hierarchy and "proportion" in by_name:
        # Volcano's code runs both, but its design (docs/design/hdrf.md, Limitations) says
        # hdrf conflicts with proportion and proportion should be disabled: two rules would
        # then decide reclaim's victims and queue order against each other.
        raise ValueError(
            "tiers: drf.enableHierarchy conflicts with proportion (Volcano's hdrf design "
            "requires proportion off); share queues with capacity instead"
        )


def from_configuration(conf: SchedulerConfiguration) -> LoadedConf:
    """The session settings a parsed configuration asks for."""
    plugins = [p for tier in conf.tiers for p in tier.plugins]
    _check_plugins(plugins)
    for t, tier in enumerate(conf.tiers):
        for i, plugin in enumerate(tier.plugins):
            arguments.check(t, i, plugin.name, plugin.arguments)
    by_name = {p.name: p for p in plugins}
    action_names = {part.strip() for part in conf.actions.split(",") if part.strip()}
    foreign = sorted(action_names & VOLCANO_ACTIONS - {a.value for a in Action})
    if foreign:
        raise ValueError(f"actions: Volcano's {foreign} are not run by Caldera")
    actions = parse_actions(conf.actions)
    for configuration in conf.configurations:
        if configuration.name not in VOLCANO_ACTIONS:
            raise ValueError(f"configurations: unknown action {configuration.name!r}")
    no_whole_bundles = action_arguments.no_whole_bundles(conf.configurations)
    tiers = _tiers(conf)
    scores = {p.name for tier in tiers for p in tier if p.speaks(Point.NODE_ORDER)}
    # Without nodeorder none of its scores count; with it, each has Volcano's default weight.
    scoring: dict[str, Any] = (
        {} if "nodeorder" in scores else dict.fromkeys(NODEORDER_WEIGHTS.values(), 0)
    )
    for name, reader in arguments.READERS.items():
        if name in scores:
            reader(by_name[name].arguments, scoring)
    overcommit = by_name.get("overcommit")
    factor = DEFAULT_OVERCOMMIT
    if overcommit is not None and arguments.OVERCOMMIT_FACTOR in overcommit.arguments:
        factor = arguments.as_number(
            "overcommit",
            arguments.OVERCOMMIT_FACTOR,
            overcommit.arguments[arguments.OVERCOMMIT_FACTOR],
        )
    capacity = by_name.get("capacity")
    drf = by_name.get("drf")
    topology = by_name.get("network-topology-aware")
    sla = by_name.get("sla")
    whole_gangs = arguments.whole_gang_victims(by_name["gang"].arguments)
    switched = sorted(
        f"{p.name}.{switch}: false"
        for p in plugins
        for switch, points in _switched_off(p).items()
        if points & _VICTIMS & REGISTERED[p.name]
    )
    asked = extender.parse(by_name["extender"].arguments) if "extender" in by_name else None
    if whole_gangs and asked is not None and (asked.preemptable or asked.reclaimable):
        switched.append("extender.preemptableVerb/reclaimableVerb")
    if whole_gangs and switched:
        raise ValueError(
            f"tiers: {switched} choose victims by Volcano's tier walk, which "
            f"gang's {arguments.WHOLE_GANG_VICTIMS}: true replaces; drop one or the other"
        )
    session = SessionConfig(
        tiers=tiers,
        actions=actions,
        overcommit_factor=factor,
        scoring=ScoringConfig(**scoring),
        capacity=capacity is not None,
        hierarchy=bool(capacity is not None and capacity.enable_hierarchy),
        drf_hierarchy=bool(drf is not None and drf.enable_hierarchy),
        network_topology=arguments.network_topology(topology.arguments) if topology else None,
        nodegroup=arguments.nodegroup(
            ng.arguments, ng.enable_hierarchy, ng.enable_predicate, ng.enable_node_order
        )
        if (ng := by_name.get("nodegroup"))
        else None,
        sla_waiting=arguments.sla_waiting(sla.arguments) if sla else None,
        whole_gang_victims=whole_gangs,
        no_whole_bundles=no_whole_bundles,
        extender=asked,
    )
    return LoadedConf(session=session)

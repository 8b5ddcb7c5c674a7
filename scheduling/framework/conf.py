"""Volcano's scheduler configuration (`volcano-scheduler.conf`) to a `SessionConfig`.

The same YAML vc-scheduler reads: an `actions` string, `tiers` of `plugins` with their
`enable*` switches and `arguments`, and per-action `configurations`. A name Volcano does not
know (action or plugin), a switch it does not have, or an argument key the plugin does not
read is an error naming it, so a typo never goes unnoticed. The argument keys of each plugin
Caldera runs are Volcano's, checked and read by `arguments`. Plugins Volcano has and Caldera
does not run are reported in `LoadedConf.ignored` for the caller to warn about, their arguments
unread; the ones every Caldera session runs (gang, predicates, conformance, and one of
proportion or capacity) must be listed, since leaving them out would ask for a scheduler
Caldera is not.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models import conffile
from scheduling.framework import arguments
from scheduling.framework.session_config import (
    DEFAULT_OVERCOMMIT,
    Action,
    SessionConfig,
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
            if plugin.name in SUPPORTED:
                arguments.check(t, i, plugin.name, plugin.arguments)
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
    for name, reader in arguments.READERS.items():
        if name in by_name:
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
        network_topology=arguments.network_topology(topology.arguments) if topology else None,
    )
    ignored = tuple(n for n in names if n not in SUPPORTED)
    return LoadedConf(session=session, ignored=ignored)

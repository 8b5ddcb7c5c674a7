"""The `networkTopologyDiscovery` part of Volcano's `volcano-controller.conf`, parsed and checked.

Each entry names a discovery source (`label`, `ufm`, `roce`), whether it is enabled, how often
it runs and the source's own `config`. Caldera runs the `label` source only; an enabled `ufm`
or `roce` entry is accepted and reported as not supported, so a configuration written for
Volcano loads unchanged. Where Volcano logs a bad topology type and skips it (and then deletes
the HyperNodes it had made for that type), Caldera refuses the whole configuration with a
message naming the field: nothing is discovered or deleted until it is fixed.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Final

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from models import conffile
from models.duration import parse_duration

CONFIG_KEY: Final = "volcano-controller.conf"  # the ConfigMap key Volcano reads
TYPE_NAME_MAX: Final = 20  # Volcano skips a topology type with a longer name
_DNS1123: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class Source(StrEnum):
    LABEL = "label"
    UFM = "ufm"
    ROCE = "roce"


SUPPORTED: Final = frozenset({Source.LABEL})


class _Conf(BaseModel):
    # Keys Volcano's YAML decoder would ignore (credentials, a source's endpoint) are ignored.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


def clean_type_name(name: str) -> str:
    """Volcano's cleanString: letters lowercased, digits, '.' and '-' kept, the rest '-'.

    Non-ASCII letters become '-' too (Volcano truncates them to a byte, which no HyperNode
    name accepts)."""
    return "".join(
        c.lower() if c.isascii() and c.isalpha() else c if c.isdigit() or c in ".-" else "-"
        for c in name
    )


class NodeLabel(_Conf):
    node_label: Annotated[str, Field(min_length=1)]


class LabelDiscovery(_Conf):
    """The label source's `config`: per topology type, node label keys from the top tier down
    to the node's own (`kubernetes.io/hostname`), which names the node and is no tier."""

    network_topology_types: dict[str, list[NodeLabel]] = Field(default_factory=dict)

    @field_validator("network_topology_types")
    @classmethod
    def _types(cls, types: dict[str, list[NodeLabel]]) -> dict[str, list[NodeLabel]]:
        for name, labels in types.items():
            if len(name) > TYPE_NAME_MAX:
                raise ValueError(
                    f"{name}: a topology type name has at most {TYPE_NAME_MAX} characters"
                )
            if not _DNS1123.fullmatch(f"hypernode-{clean_type_name(name)}-tier1"):
                raise ValueError(f"{name}: the name makes no valid HyperNode name")
            if not labels:
                raise ValueError(f"{name}: list the node labels, ending with the node's own")
            keys = [label.node_label for label in labels]
            repeated = sorted({k for k in keys if keys.count(k) > 1})
            if repeated:
                raise ValueError(f"{name}: each node label may appear once, repeated: {repeated}")
        return types

    def tiers(self) -> dict[str, tuple[str, ...]]:
        """Per topology type (sorted), its label keys from tier 1 up (the last label dropped),
        as Volcano's parseCfg records them."""
        return {
            name: tuple(label.node_label for label in reversed(labels[:-1]))
            for name, labels in sorted(self.network_topology_types.items())
        }


def _interval(value: object) -> object:
    """A Go duration string, as Volcano's decoder reads one; '0' or none: the default."""
    if value is None or isinstance(value, timedelta):
        return value
    if isinstance(value, str):
        return parse_duration(value.strip())
    raise ValueError(f"expected a duration such as '10s' or '5m', got {value!r}")


class DiscoveryEntry(_Conf):
    source: Source
    enabled: bool = False
    # None: not set (Caldera's discovery period applies).
    interval: Annotated[timedelta | None, BeforeValidator(_interval)] = None
    config: Mapping[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _label_config(self) -> DiscoveryEntry:
        self.label()  # a label entry's config is checked when it is read, not when it is used
        return self

    def label(self) -> LabelDiscovery | None:
        """The label source's settings; None: another source."""
        if self.source != Source.LABEL:
            return None
        return LabelDiscovery.model_validate(dict(self.config))


class DiscoveryConfig(_Conf):
    network_topology_discovery: list[DiscoveryEntry] = Field(default_factory=list)

    def entry(self, source: Source) -> DiscoveryEntry | None:
        """The first enabled entry for `source`, as Volcano's GetDiscoveryConfig picks it;
        None: the source is not enabled."""
        return next(
            (e for e in self.network_topology_discovery if e.source == source and e.enabled),
            None,
        )

    def label(self) -> LabelDiscovery | None:
        """The label source's settings; None: label discovery is not enabled."""
        entry = self.entry(Source.LABEL)
        return entry.label() if entry is not None else None

    def interval(self) -> timedelta | None:
        """How long to wait between label discoveries; None: not set, or '0'."""
        entry = self.entry(Source.LABEL)
        if entry is None or entry.interval is None or entry.interval <= timedelta(0):
            return None
        return entry.interval

    def unsupported(self) -> tuple[str, ...]:
        """The enabled sources Caldera does not run, each once."""
        enabled = {e.source for e in self.network_topology_discovery if e.enabled}
        return tuple(sorted(s.value for s in enabled - SUPPORTED))


def _where(loc: tuple[int | str, ...]) -> str:
    """pydantic's location as the YAML path: `networkTopologyDiscovery[0].source`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _message(error: ValidationError, prefix: tuple[int | str, ...] = ()) -> str:
    parts = []
    for item in error.errors():
        msg = item["msg"].removeprefix("Value error, ")
        parts.append(f"{_where((*prefix, *item['loc']))}: {msg}")
    return "; ".join(parts)


def load(text: str) -> DiscoveryConfig:
    """Parse a volcano-controller.conf; ValueError names the field that is wrong."""
    document = conffile.mapping(text, "networkTopologyDiscovery")
    entries = document.get("networkTopologyDiscovery") or []
    if not isinstance(entries, list):
        raise ValueError("networkTopologyDiscovery: expected a list of discovery sources")
    for i, entry in enumerate(entries):
        config = entry.get("config") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and entry.get("source") == Source.LABEL:
            # The label source's own errors, located under its `config`.
            if config is not None and not isinstance(config, dict):
                raise ValueError(f"networkTopologyDiscovery[{i}].config: expected a mapping")
            try:
                LabelDiscovery.model_validate(config or {})
            except ValidationError as e:
                raise ValueError(_message(e, ("networkTopologyDiscovery", i, "config"))) from None
    try:
        return DiscoveryConfig.model_validate(document)
    except ValidationError as e:
        raise ValueError(_message(e)) from None

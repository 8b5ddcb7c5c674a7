"""Job plugin arguments, read as Go's `flag` package reads them.

Volcano parses `spec.plugins.<name>` with a `flag.FlagSet` (`ContinueOnError`): flags are
`-name`, `--name`, `-name=value` or `-name value` (bool flags take no separate value), parsing
stops at the first non-flag argument or at `--`, and on the first error it stops too, keeping
the values set before it; Volcano only logs that error. `parse` reproduces exactly that, so a
Volcano YAML means the same here, to the plugins and to the webhook alike, and returns the
error text for the caller to log.

Pure: no temporalio, no kubernetes, no I/O (the plugins' pod changes run inside workflows).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    OptionsT = TypeVar("OptionsT", bound=DataclassInstance)
else:
    OptionsT = TypeVar("OptionsT")

_INT64: Final = 2**63
# Go's base-0 integer syntax (strconv.ParseInt(s, 0, 64)): decimal, 0x/0o/0b prefixes, a
# leading 0 for octal, underscores between digits.
_GO_INT: Final = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)")
_GO_OCTAL: Final = re.compile(r"([+-]?)0([0-7_]*[0-7])")
_GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _go_bool(text: str) -> bool:
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise ValueError("parse error")


def _go_int(text: str) -> int:
    if not _GO_INT.fullmatch(text):
        raise ValueError("parse error")
    octal = _GO_OCTAL.fullmatch(text)
    value = int(octal[1] + octal[2], 8) if octal else int(text, 0)
    if not -_INT64 <= value < _INT64:
        raise ValueError("value out of range")
    return value


def _convert(default: object, text: str) -> object:
    # bool before int: bool is a subclass of int in Python, not in Go.
    if isinstance(default, bool):
        return _go_bool(text)
    if isinstance(default, int):
        return _go_int(text)
    return text


def _flag_name(field: dataclasses.Field[Any]) -> str:
    """The flag's spelling: `field(metadata={"flag": ...})`, else the field name with `-`."""
    spelled: str | None = field.metadata.get("flag")  # None: derive it from the field name
    return spelled if spelled is not None else field.name.replace("_", "-")


def parse(defaults: OptionsT, args: Sequence[str]) -> tuple[OptionsT, str | None]:
    """Go `flag.FlagSet.Parse` over a frozen dataclass of defaults (field type = flag type).

    Returns the options and the parse error (None: every argument parsed). On an error the
    options hold what was parsed before it, as Go leaves its flag variables.
    """
    fields = {_flag_name(f): f for f in dataclasses.fields(defaults)}
    values: dict[str, object] = {}
    rest = list(args)
    error: str | None = None  # None: no error so far
    while rest and error is None:
        arg = rest.pop(0)
        if len(arg) < 2 or arg[0] != "-" or arg == "--":
            break
        name = arg[2:] if arg[1] == "-" else arg[1:]
        if not name or name[0] in "-=":
            error = f"bad flag syntax: {arg}"
            break
        name, equals, text = name.partition("=")
        field = fields.get(name)
        if field is None:
            error = f"flag provided but not defined: -{name}"
            break
        default = getattr(defaults, field.name)
        if not equals:
            if isinstance(default, bool):
                text = "true"
            elif rest:
                text = rest.pop(0)
            else:
                error = f"flag needs an argument: -{name}"
                break
        try:
            values[field.name] = _convert(default, text)
        except ValueError as e:
            error = f'invalid value "{text}" for flag -{name}: {e}'
    return dataclasses.replace(defaults, **values), error

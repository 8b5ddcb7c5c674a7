"""Which devices a CEL selector accepts, with Kubernetes' `quantity()` and `semver()` added.

CEL is evaluated by the `cel` library (the Rust cel-interpreter's bindings,
`common-expression-language` on PyPI), each expression compiled once per process and each
(expression, device) answer remembered, since slices rarely change between sessions. A selector
that does not compile or fails on a device is reported, not skipped, as kube-scheduler does.
Apart from the device objects (`scheduling/api/device_slices.py`) because it is an evaluator
with its own process-wide caches, which only needs a device's CEL variable and identity.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

import cel

from models.quantity import parse_quantity
from scheduling.api.device_slices import Device, DeviceId, canonical_quantity

_MEMO_LIMIT: Final = 200_000  # (expression, device) answers kept per process
_SEMVER: Final = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


class SelectorError(ValueError):
    """A selector that does not compile, or fails on a device (not a plain no)."""


def _quantity_of(value: object) -> Fraction:
    try:
        return parse_quantity(str(value))
    except ValueError as e:
        raise ValueError(f"not a quantity: {value!r}") from e


def _version_of(value: object) -> tuple[int, int, int, tuple[int, str]]:
    found = _SEMVER.match(str(value))
    if found is None:
        raise ValueError(f"not a semantic version: {value!r}")
    major, minor, patch, pre = found.groups()
    # A pre-release sorts before its release; releases compare by numbers alone.
    return int(major), int(minor), int(patch), (0, pre) if pre else (1, "")


def _compare(left: object, right: object) -> int:
    """Kubernetes' `compareTo` of two quantities, or of two semantic versions."""
    a: Any
    b: Any
    if _SEMVER.match(str(left)) and _SEMVER.match(str(right)):
        a, b = _version_of(left), _version_of(right)
    else:
        a, b = _quantity_of(left), _quantity_of(right)
    return int(a > b) - int(a < b)


_FUNCTIONS: Final[dict[str, Any]] = {
    "quantity": lambda text: _checked(_quantity_of, text),
    "semver": lambda text: _checked(_version_of, text),
    "isQuantity": lambda text: _is(lambda: _quantity_of(text)),
    "isSemver": lambda text: _is(lambda: _version_of(text)),
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "asInteger": lambda q: int(_quantity_of(q)),
    "asApproximateFloat": lambda q: float(_quantity_of(q)),
    "major": lambda v: _version_of(v)[0],
    "minor": lambda v: _version_of(v)[1],
    "patch": lambda v: _version_of(v)[2],
}


def _checked(parse: Any, text: object) -> str:
    """`quantity("40Gi")` and `semver("1.2.3")`: the text, canonical, once it parses."""
    parse(text)
    return canonical_quantity(text) if parse is _quantity_of else str(text)


def _is(parse: Any) -> bool:
    try:
        parse()
    except ValueError:
        return False
    return True


@lru_cache(maxsize=4096)
def _program(expression: str) -> Any:
    try:
        return cel.compile(expression)
    except Exception as e:  # the library raises ValueError, and others on odd input
        raise SelectorError(f"compile error: {e}") from e


def compile_error(expression: str) -> str | None:
    """Why `expression` does not compile (None: it does)."""
    try:
        _program(expression)
    except SelectorError as e:
        return str(e)
    return None


_MEMO: dict[tuple[str, DeviceId, str], bool | str] = {}


def _evaluate(expression: str, device: Device) -> bool | str:
    key = (expression, device.id, device.generation)
    found = _MEMO.get(key)
    if found is not None:
        return found
    try:
        program = _program(expression)
        value = program.execute(cel.Context(variables={"device": device.cel}, functions=_FUNCTIONS))
        answer: bool | str = (
            value if isinstance(value, bool) else f"result is {type(value).__name__}, not bool"
        )
    except SelectorError as e:
        answer = str(e)
    except Exception as e:  # a missing attribute or a type mismatch, at runtime
        answer = f"runtime error: {e}"
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = answer
    return answer


def accepts(selectors: Iterable[str], device: Device) -> bool | str:
    """True when every selector accepts `device`, False when one does not, else why one
    failed (a compile or runtime error, which kube-scheduler reports rather than skips)."""
    for expression in selectors:
        answer = _evaluate(expression, device)
        if answer is not True:
            return answer
    return True

"""Kubernetes resource quantities ("500m", "4Gi", "1e3", 2) as exact numbers.

Pure arithmetic for minResources and, later, the scheduler's fit checks. CPU-like values keep
milli precision; the text form is the shortest exact one ("1500m", "4294967296").
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import Final

_SUFFIX: Final = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
# The apiserver's own check of a quantity's text (what its generated CRDs carry), so a CRD
# refuses at admission what `parse_quantity` would refuse later.
SCHEMA_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_PATTERN: Final = re.compile(
    r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)


def parse_quantity(value: int | float | str) -> Fraction:
    """The quantity's exact value; raises ValueError naming the text when it is not one."""
    if isinstance(value, int | float):
        return Fraction(Decimal(str(value)))
    match = _PATTERN.match(value.strip())
    if match is None:
        raise ValueError(f"invalid quantity {value!r}")
    number, exponent, suffix = match.groups()
    result = Fraction(Decimal(number)) * _SUFFIX[suffix]
    if exponent:
        result *= Fraction(10) ** int(exponent)
    return result


def format_quantity(value: Fraction) -> str:
    """Whole numbers as integers, otherwise milli-units rounded up (as Kubernetes does)."""
    if value.denominator == 1:
        return str(value.numerator)
    milli = -(-value.numerator * 1000 // value.denominator)
    return f"{milli}m"

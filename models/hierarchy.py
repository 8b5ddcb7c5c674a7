"""A Queue's place in hierarchical drf's tree: the `volcano.sh/hierarchy` annotations.

Volcano's drf plugin with `enableHierarchy: true` (docs/design/hdrf.md) reads two Queue
annotations: `volcano.sh/hierarchy`, the path of the queue's node from `root`
(`root/eng/dev`), and `volcano.sh/hierarchy-weights`, one weight per level of that path
(`1/2/8`). Volcano's queue webhooks give them their meaning in two steps, both kept here so
that the admission rules and the scheduler read a queue alike:

- the mutating webhook (`createQueuePatch`) puts a path that does not start with `root`, when
  both annotations are set, under it: `eng/dev` becomes `root/eng/dev` and its weights
  `2/8` become `1/2/8` (`normalized`);
- the validating webhook (`validateHierarchicalAttributes`) refuses, once either is set, a
  path and weights of different lengths, and a weight that is not a number above zero
  (`problems`). Its third rule, a queue whose path is the prefix of another queue's, needs
  the other queues: `admission.rules` asks it.

Volcano's `strconv.ParseFloat` also takes `NaN`, `Inf` and hexadecimal floats; Caldera takes
decimal numbers only (a `NaN` weight would make every share comparison false in Volcano).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

HIERARCHY: Final = "volcano.sh/hierarchy"
WEIGHTS: Final = "volcano.sh/hierarchy-weights"
ROOT: Final = "root"
_DECIMAL: Final = re.compile(r"^[+]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def normalized(hierarchy: str, weights: str) -> tuple[str, str]:
    """The two annotations as Volcano's mutating webhook stores them (`root/` put in front of a
    path that lacks it, with weight 1 for root). `strings.HasPrefix(hierarchy, "root")` is
    the webhook's test, so `rooted/x` is left as it is too."""
    if hierarchy and weights and not hierarchy.startswith(ROOT):
        return f"{ROOT}/{hierarchy}", f"1/{weights}"
    return hierarchy, weights


def weight(text: str) -> Fraction | None:
    """A weight as written; None: not a finite decimal number."""
    if not _DECIMAL.match(text):
        return None
    value = Fraction(text)
    try:
        return value if math.isfinite(float(value)) else None
    except OverflowError:  # beyond a float, as Go's ParseFloat refuses it (ErrRange)
        return None


def problems(hierarchy: str, weights: str) -> list[str]:
    """What Volcano's validating webhook refuses in the two annotations (already normalized),
    each message naming the annotation."""
    if not hierarchy and not weights:
        return []
    paths, levels = hierarchy.split("/"), weights.split("/")
    where = f"metadata.annotations[{WEIGHTS}]"
    if len(paths) != len(levels):
        return [
            f"metadata.annotations[{HIERARCHY}]: {hierarchy!r} has {len(paths)} levels but "
            f"{WEIGHTS} {weights!r} has {len(levels)}; they must have the same length"
        ]
    for text in levels:
        value = weight(text)
        if value is None:
            return [f"{where}: {text!r} in {weights!r} is not a number"]
        if value <= 0:
            return [f"{where}: {text!r} in {weights!r} must be larger than 0"]
    return []


def under(hierarchy: str, other: str) -> bool:
    """`other` is a path below `hierarchy` (whole levels: `root/scidev` is not below
    `root/sci`): Volcano refuses a queue whose path has another queue's below it."""
    return bool(other) and other.startswith(hierarchy + "/")

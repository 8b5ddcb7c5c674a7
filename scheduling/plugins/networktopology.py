"""network-topology-aware's HyperNode binpack: how full a HyperNode would be with a job's tasks.

The HyperNode tree itself is api data (`scheduling.api.topology`); this is the plugin's score
over it, which the allocate action uses twice: to rank the HyperNodes a gang could be kept
within, and, tier by tier, to score the nodes of pods without a network topology so that they
fill HyperNodes others do not need whole.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from scheduling.api.vectors import Resources


def binpack_score(
    used: Resources, allocatable: Resources, request: Resources, weights: Mapping[str, int]
) -> Fraction:
    """The HyperNode's fill after taking `request`, weighted over the weighted resources; 0
    when it overflows one of them (network-topology-aware's HyperNode binpack)."""
    score, weight = Fraction(0), 0
    for name, w in sorted(weights.items()):
        need = request.get(name)
        if not need or not w:
            continue
        have = allocatable.get(name)
        if used.get(name) + need > have:
            return Fraction(0)
        score += w * Fraction(used.get(name) + need) / Fraction(have)
        weight += w
    return score / weight if weight else Fraction(0)

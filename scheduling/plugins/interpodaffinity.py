"""kube-scheduler's InterPodAffinity, which Volcano's predicates and nodeorder plugins run.

The filter reads the task's cluster-wide counts from the `PodView` (pods matching its required
terms, and placed pods whose required anti-affinity takes it, per topology domain). Required
affinity follows kube's general path: a pod may be the first of a group that has affinity to
itself, so when no pod anywhere matches its terms and it matches them itself, any node with the
topology labels passes. The score adds the task's preferred terms and every placed pod's terms
about the task, normalised to 0-100 over the candidate nodes.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Final

from scheduling.api.podterms import PodAffinityTerm
from scheduling.api.snapshot import NodeInfo, NodeName, TaskInfo
from scheduling.plugins.podview import MAX_SCORE, PodView, Prepared

AFFINITY_MISMATCH: Final = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH: Final = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
HARD_AFFINITY_WEIGHT: Final = 1  # hardPodAffinityWeight: an existing pod's required affinity


def check(task: TaskInfo, node: NodeInfo, prepared: Prepared) -> str | None:
    terms = task.pod_affinity
    required = terms.required if terms is not None else ()
    if required:
        exists = True
        for term in required:
            value = node.labels.get(term.topology_key)
            if value is None:
                return AFFINITY_MISMATCH
            if prepared.affinity[(term.topology_key, value)] <= 0:
                exists = False
        if not exists and not (not prepared.affinity and prepared.self_match):
            return AFFINITY_MISMATCH
    for term in terms.required_anti if terms is not None else ():
        value = node.labels.get(term.topology_key)
        if value is not None and prepared.anti[(term.topology_key, value)] > 0:
            return ANTI_AFFINITY_MISMATCH
    if prepared.existing and any(prepared.existing[pair] > 0 for pair in node.labels.items()):
        return EXISTING_ANTI_AFFINITY
    return None


def _add_terms(
    scores: dict[str, Counter[str]],
    node: NodeInfo,
    terms: Iterable[tuple[int, PodAffinityTerm]],
    owner: str,
    ns: str,
    labels: Mapping[str, str],
    sign: int,
) -> None:
    for weight, term in terms:
        value = node.labels.get(term.topology_key)
        if value is not None and term.matches(owner, ns, labels):
            scores.setdefault(term.topology_key, Counter())[value] += weight * sign


def scores(task: TaskInfo, nodes: list[NodeInfo], view: PodView) -> dict[NodeName, int]:
    """InterPodAffinity's score, normalised to 0-100 over `nodes`; {} when nothing applies."""
    if not view.needs_affinity_score(task):
        return {}
    ns, terms = task.namespace, task.pod_affinity
    preferred = [(t.weight, t.pod_affinity_term) for t in terms.preferred] if terms else []
    avoided = [(t.weight, t.pod_affinity_term) for t in terms.preferred_anti] if terms else []
    mine = bool(preferred or avoided)
    topology: dict[str, Counter[str]] = {}
    for node, pod in view.pods():
        theirs = pod.affinity
        if not node.labels or (not mine and (theirs is None or not theirs.scores)):
            continue
        _add_terms(topology, node, preferred, ns, pod.namespace, pod.labels, +1)
        _add_terms(topology, node, avoided, ns, pod.namespace, pod.labels, -1)
        if theirs is not None:
            owner = pod.namespace
            hard = [(HARD_AFFINITY_WEIGHT, t) for t in theirs.required]
            _add_terms(topology, node, hard, owner, ns, task.labels, +1)
            soft = [(t.weight, t.pod_affinity_term) for t in theirs.preferred]
            _add_terms(topology, node, soft, owner, ns, task.labels, +1)
            away = [(t.weight, t.pod_affinity_term) for t in theirs.preferred_anti]
            _add_terms(topology, node, away, owner, ns, task.labels, -1)
    if not topology:
        return {}
    raw = {
        n.name: sum(values[n.labels[key]] for key, values in topology.items() if key in n.labels)
        for n in nodes
    }
    low, high = min(raw.values()), max(raw.values())
    spread = high - low
    return {
        name: int(float(MAX_SCORE) * (float(s - low) / float(spread))) if spread > 0 else 0
        for name, s in raw.items()
    }

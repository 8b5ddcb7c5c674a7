"""A JobFlow's entries must form a DAG: Volcano's jobflow webhook, on CREATE and UPDATE. Pure.

Every dependsOn target must name an entry of the same flow ("vertex is not defined"), and no
entry may depend on itself, directly or through others ("jobflow Flow is not DAG"). Entries
are read by name, the last of a repeated name winning, as Volcano builds its graph; messages
name the field (the first undefined target in spec order, the entries on the cycle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

NOT_DAG: Final = "jobflow Flow is not DAG"
NOT_DEFINED: Final = "vertex is not defined"


def _entries(obj: Mapping[str, object]) -> list[tuple[str, list[str]]]:
    spec = obj.get("spec")
    flows = spec.get("flows") if isinstance(spec, Mapping) else None
    out: list[tuple[str, list[str]]] = []
    for entry in flows if isinstance(flows, list) else []:
        entry = entry if isinstance(entry, Mapping) else {}
        depends = entry.get("dependsOn")
        targets = depends.get("targets") if isinstance(depends, Mapping) else None
        out.append((str(entry.get("name", "")), [str(t) for t in targets or []]))
    return out


def _cycle(graph: Mapping[str, Sequence[str]]) -> list[str] | None:
    """One cycle (its entries in order, the first repeated at the end); None: a DAG."""
    done: set[str] = set()
    for start in graph:
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, at = stack.pop()
            if at == 0:
                if node in on_path:
                    return [*path[path.index(node) :], node]
                if node in done:
                    continue
                path.append(node)
                on_path.add(node)
            edges = graph[node]
            if at < len(edges):
                stack.append((node, at + 1))
                stack.append((edges[at], 0))
            else:
                done.add(node)
                on_path.discard(path.pop())
    return None


def problems(obj: Mapping[str, object]) -> list[str]:
    entries = _entries(obj)
    graph = dict(entries)
    for i, (_, targets) in enumerate(entries):
        for j, target in enumerate(targets):
            if target not in graph:
                field = f"spec.flows[{i}].dependsOn.targets[{j}]"
                return [f"{field}: {NOT_DAG}: {NOT_DEFINED}: {target}"]
    cycle = _cycle(graph)
    if cycle is not None:
        return [f"spec.flows: {NOT_DAG}: {' -> '.join(cycle)}"]
    return []

"""kube-scheduler's NodePorts, which Volcano's predicates plugin runs: one host port per node.

A pod's host ports must not conflict with those of the pods already on the node (same protocol
and port, on the same address or on every address; `podterms.HostPort.conflicts`), counting
the session's own placements through the `PodView`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from typing import Final

from scheduling.api.snapshot import NodeInfo, TaskInfo
from scheduling.plugins.podview import PodView

PORTS_TAKEN: Final = "node(s) didn't have free ports for the requested pod ports"


def check(view: PodView, task: TaskInfo, node: NodeInfo) -> str | None:
    used = [p for pod in view.on_node.get(node.name, {}).values() for p in pod.host_ports]
    if any(want.conflicts(have) for want in task.host_ports for have in used):
        return PORTS_TAKEN
    return None

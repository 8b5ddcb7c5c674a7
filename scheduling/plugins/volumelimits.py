"""kube-scheduler's NodeVolumeLimits, which Volcano's predicates plugin runs: CSI volume counts.

A node's CSINode gives each CSI driver a volume count; a pod may go where the volumes it adds
(those not already attached for another pod) keep every driver within its count. What a pod's
claims attach is `cache.volumes.Storage.attached`, read into `TaskInfo.volumes`.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from scheduling.api.snapshot import NodeInfo, TaskInfo
from scheduling.plugins.podview import PodView

VOLUME_COUNT: Final = "node(s) exceed max volume count"


def check(view: PodView, task: TaskInfo, node: NodeInfo) -> str | None:
    """The task's volumes not yet on the node, per driver, fit the node's counts for it."""
    held = {v for pod in view.on_node.get(node.name, {}).values() for v in pod.volumes}
    new = Counter(v.driver for v in set(task.volumes) - held)
    if not new:
        return None
    attached = Counter(v.driver for v in held)
    for driver, count in new.items():
        limit = node.volume_limits.get(driver)
        if limit is not None and attached[driver] + count > limit:
            return VOLUME_COUNT
    return None

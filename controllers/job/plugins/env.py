"""The `env` plugin: every container learns its replica index from VK_TASK_INDEX/VC_TASK_INDEX.

Volcano reads the index back from the pod name (its last `-` segment); the caller already
knows it, so it is passed in. The plugin owns no Kubernetes object: its OnJobAdd only records
the `plugin-env` marker. Pure: no temporalio, no kubernetes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models.vcjob import Job

NAME: Final = "env"
# Both spellings: VK_ is the older prefix that existing images still read.
INDEX_ENV: Final = ("VK_TASK_INDEX", "VC_TASK_INDEX")


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's env OnPodCreate: the index env on containers and init containers."""
    out = copy.deepcopy(pod)
    for container in support.containers(out):
        support.append(container, "env", *({"name": n, "value": str(index)} for n in INDEX_ENV))
    return out

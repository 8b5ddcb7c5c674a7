"""Kubernetes' own gang API (KEP-4671, `scheduling.k8s.io/v1beta1` as Kubernetes 1.37 serves it
with the GenericWorkload feature gate): a Workload's pod group templates, the PodGroups made
from them, and a pod's `spec.schedulingGroup.podGroupName` naming its PodGroup.

Caldera serves the pods of such a PodGroup that name its scheduler by mirroring the PodGroup
into a Volcano PodGroup (`controllers.podgroup`), and writes the one condition the API has
for a scheduler back onto it (`scheduling.cache.writes`).
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "scheduling.k8s.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
POD_GROUP_KIND: Final = "PodGroup"
WORKLOAD_KIND: Final = "Workload"

# The condition a scheduler writes on a PodGroup: True once its gang was first placed (then
# never False again), False with why while it is not.
INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
SCHEDULED_REASON: Final = "Scheduled"  # kube-scheduler's reason for True
UNSCHEDULABLE_REASON: Final = "Unschedulable"

# The gang key of a PodGroupWorkflow that mirrors a Kubernetes PodGroup: never a uid.
GANG_KEY_PREFIX: Final = "scheduling.k8s.io/podgroups/"

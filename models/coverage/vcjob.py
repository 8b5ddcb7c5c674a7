"""The batch.volcano.sh/v1alpha1 Job's spec, field by field: who in Caldera reads each one.

Found by reading the code, not assumed: a field is `Honoured` only where the named module
reads it (`git grep` the snake_case name in controllers/job/, activities/ and admission/).
The pod template is one entry: its fields are Kubernetes', copied into the pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from models import plugins
from models.coverage.entries import Coverage, Honoured, KindCoverage, WithoutEffect

_POLICY_NOTE: Final = "event or exit code → action, at once or after `timeout`"
# The task's partitions as PodGroup sub-groups (`subGroupPolicy`): written by the job
# controller, placed by the scheduler.
_SUB_GROUPS: Final = (
    "controllers/job/subgroups.py, activities/controllers/podgroups.py, "
    "scheduling/api/subgroups.py, scheduling/actions/subgroups.py"
)
_PARTITIONS_PLACED: Final = (
    "each partition is placed as a gang of its own within its own network tier; the job is "
    "ready once minPartitions partitions are whole"
)


def _policies(prefix: str, level: str) -> dict[str, Coverage]:
    """A policy list's fields, at job or task level: read alike by one module."""
    where = "controllers/job/policies.py"
    return {
        f"{prefix}.action": Honoured(where, f"the {level}'s {_POLICY_NOTE}"),
        f"{prefix}.event": Honoured(where),
        f"{prefix}.events": Honoured(where),
        f"{prefix}.exitCode": Honoured(where),
        f"{prefix}.timeout": Honoured(f"{where}, controllers/job/delays.py"),
    }


FIELDS: Final[Mapping[str, Coverage]] = {
    "spec.schedulerName": Honoured(
        "controllers/job/podspec.py, controllers/job/controller.py",
        "the pods' schedulerName; the Caldera scheduler of that name places them",
    ),
    "spec.minAvailable": Honoured(
        "activities/controllers/podgroups.py, controllers/job/status.py", "the PodGroup's minMember"
    ),
    "spec.volumes[].mountPath": Honoured("controllers/job/podspec.py"),
    "spec.volumes[].volumeClaimName": Honoured(
        "activities/controllers/volume_claims.py, controllers/job/podspec.py",
        "written back when generated",
    ),
    "spec.volumes[].volumeClaim": Honoured(
        "activities/controllers/volume_claims.py", "the PVC created for the job"
    ),
    "spec.tasks[].name": Honoured("controllers/job/podspec.py", "pod names, labels and roles"),
    "spec.tasks[].replicas": Honoured("controllers/job/actions.py, controllers/job/podspec.py"),
    "spec.tasks[].minAvailable": Honoured(
        "controllers/job/podspec.py, controllers/job/actions.py",
        "the PodGroup's minTaskMember; a dependency is met when this many pods run",
    ),
    "spec.tasks[].template": Honoured(
        "controllers/job/podspec.py, admission/templates.py",
        "Kubernetes' PodTemplateSpec, copied into every pod of the task; the webhook checks "
        "the part of pod validation Caldera reads itself, the apiserver the rest",
    ),
    **_policies("spec.tasks[].policies[]", "task"),
    "spec.tasks[].topologyPolicy": WithoutEffect(
        "copied onto the pods as the `volcano.sh/numa-topology-policy` annotation, as Volcano's "
        "job controller does, but only the numaaware scheduler plugin reads that, and Caldera "
        "refuses a scheduler configuration that enables it (Volcano's default does not either)"
    ),
    "spec.tasks[].maxRetry": Honoured(
        "controllers/job/bus_events.py", "container restarts that count as the task failing"
    ),
    "spec.tasks[].dependsOn.name": Honoured("controllers/job/actions.py, admission/jobspec.py"),
    "spec.tasks[].dependsOn.iteration": Honoured("controllers/job/actions.py"),
    "spec.tasks[].partitionPolicy.totalPartitions": Honoured(
        "models/vcjob.py",
        "a CEL rule; Volcano only checks it too: replicas must equal "
        "totalPartitions * partitionSize",
    ),
    "spec.tasks[].partitionPolicy.partitionSize": Honoured(
        f"controllers/job/podspec.py, {_SUB_GROUPS}",
        "pods are labelled with their partition, and a policy can restart one partition; the "
        "PodGroup gets one sub-group policy per partitioned task: " + _PARTITIONS_PLACED,
    ),
    "spec.tasks[].partitionPolicy.networkTopology": Honoured(
        _SUB_GROUPS, "the tier each partition is placed within, on its own"
    ),
    "spec.tasks[].partitionPolicy.minPartitions": Honoured(
        "controllers/job/podspec.py, models/defaults.py, admission/jobspec.py, "
        "controllers/job/subgroups.py",
        "the task's minAvailable defaults to minPartitions * partitionSize and must equal it "
        "when given; the sub-groups' minSubGroups",
    ),
    **_policies("spec.policies[]", "job"),
    "spec.plugins": Honoured(
        "controllers/job/plugins/, admission/jobspec.py",
        "runs " + ", ".join(f"`{p}`" for p in sorted(plugins.IMPLEMENTED)) + "; any other "
        "name is refused at admission",
    ),
    "spec.runningEstimate": WithoutEffect(
        "Volcano stores it and nothing in Volcano reads it (its controllers and scheduler at "
        "ed72c7c); Caldera does the same"
    ),
    "spec.queue": Honoured(
        "activities/controllers/podgroups.py, controllers/job/podspec.py, admission/rules.py",
        "the PodGroup's queue; the webhook refuses a queue that is missing, closed or not a leaf",
    ),
    "spec.maxRetry": Honoured("controllers/job/status.py, controllers/job/actions.py"),
    "spec.ttlSecondsAfterFinished": Honoured("controllers/job/clock.py"),
    "spec.priorityClassName": Honoured(
        "controllers/job/podspec.py, activities/controllers/podgroups.py",
        "the pods' and the PodGroup's",
    ),
    "spec.minSuccess": Honoured("controllers/job/status.py"),
    "spec.networkTopology.mode": Honoured(
        "activities/controllers/podgroups.py, scheduling/api/topology.py",
        "copied to the PodGroup at creation",
    ),
    "spec.networkTopology.highestTierAllowed": Honoured(
        "activities/controllers/podgroups.py, scheduling/api/topology.py"
    ),
    "spec.networkTopology.highestTierName": Honoured(
        "activities/controllers/podgroups.py, scheduling/api/topology.py"
    ),
}

JOB: Final = KindCoverage(
    kind="Job",
    api_version="batch.volcano.sh/v1alpha1",
    crd="batch.volcano.sh_jobs.yaml",
    fields=FIELDS,
)

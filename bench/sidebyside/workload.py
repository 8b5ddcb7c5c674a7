"""The workload: which jobs a shape has, and each side's manifest for one of them.

Job names carry their role: `s-<i>` a single pod, `g-<i>` a gang, `f-<i>` a job whose pod
fails every time (mixed shape; kwok cannot express "fail once": the annotations are read from
each pod and every attempt gets the same template). Pods request 100m CPU; singles and gangs
run until their job is deleted. With `gpus` > 0 every pod also asks for that many devices of
the fake DRA driver's class (`cli/devstack/devices.py`) through the ResourceClaimTemplate
`claim_template` makes in the side's namespace, so every side gets the same claims.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from cli.devstack import devices
from models import batchv1

CALDERA_CONTROLLER: Final = batchv1.CONTROLLER_NAME  # caldera.dev/job-controller
RUN_SECONDS: Final = "sim.caldera.dev/run-seconds"
EXIT_CODE: Final = "sim.caldera.dev/exit-code"
FAILING_PREFIX: Final = "f-"
RETRIES: Final = 2  # maxRetry (Volcano) / backoffLimit (batch/v1) of the failing jobs
# Sides that submit Volcano Jobs.
VOLCANO_SIDES: Final = frozenset({"caldera", "caldera-server", "volcano"})
# The namespace's one ResourceClaimTemplate, and the pod's name for the claim made from it.
CLAIM_TEMPLATE: Final = "gpu"
CLAIM: Final = "gpu"


@dataclass(frozen=True)
class JobPlan:
    name: str
    replicas: int

    @property
    def fails(self) -> bool:
        return self.name.startswith(FAILING_PREFIX)


def plan(shape: str, jobs: int, replicas: int) -> list[JobPlan]:
    """singles: N x 1 pod; gangs: N x R; mixed: N/10 gangs of R, N/10 failing, the rest single."""
    if shape == "singles":
        return [JobPlan(f"s-{i:05d}", 1) for i in range(jobs)]
    if shape == "gangs":
        return [JobPlan(f"g-{i:05d}", replicas) for i in range(jobs)]
    gangs = max(1, jobs // 10)
    failing = max(1, jobs // 10) if jobs > 2 else 0
    singles = max(0, jobs - gangs - failing)
    return (
        [JobPlan(f"g-{i:05d}", replicas) for i in range(gangs)]
        + [JobPlan(f"f-{i:05d}", 1) for i in range(failing)]
        + [JobPlan(f"s-{i:05d}", 1) for i in range(singles)]
    )


def target_pods(jobs: list[JobPlan]) -> int:
    """Pods that must be Running at once: those of the jobs that do not fail."""
    return sum(j.replicas for j in jobs if not j.fails)


def all_pods(jobs: list[JobPlan]) -> int:
    """Every pod of a plan, failing ones too: each holds its devices while it runs."""
    return sum(j.replicas for j in jobs)


def claim_template(gpus: int) -> dict[str, Any]:
    """`gpus` devices of the fake driver's class, for each pod that names the template."""
    request = {"name": "gpu", "exactly": {"deviceClassName": devices.DEVICE_CLASS, "count": gpus}}
    return {
        "apiVersion": devices.API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": CLAIM_TEMPLATE},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _pod_template(scheduler: str | None, fails: bool, gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "c",
        "image": "busybox",
        "resources": {"requests": {"cpu": "100m"}},
    }
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if gpus:
        spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": CLAIM_TEMPLATE}]
        container["resources"]["claims"] = [{"name": CLAIM}]
    if scheduler:
        spec["schedulerName"] = scheduler
    template: dict[str, Any] = {"spec": spec}
    if fails:
        template["metadata"] = {"annotations": {RUN_SECONDS: "1", EXIT_CODE: "1"}}
    return template


def volcano_job(job: JobPlan, namespace: str, gpus: int = 0) -> dict[str, Any]:
    template = _pod_template(None, job.fails, gpus)
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": "default",
        "minAvailable": job.replicas,
        "tasks": [{"name": "w", "replicas": job.replicas, "template": template}],
    }
    if job.fails:
        spec["maxRetry"] = RETRIES
        spec["policies"] = [{"event": "PodFailed", "action": "RestartJob"}]
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": namespace},
        "spec": spec,
    }


def batch_job(job: JobPlan, namespace: str, caldera: bool, gpus: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "completions": job.replicas,
        "parallelism": job.replicas,
        "template": _pod_template("volcano" if caldera else None, job.fails, gpus),
    }
    if job.fails:
        spec["backoffLimit"] = RETRIES
    if caldera:
        spec["managedBy"] = CALDERA_CONTROLLER
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": namespace},
        "spec": spec,
    }


def manifest(side: str, job: JobPlan, namespace: str, gpus: int = 0) -> dict[str, Any]:
    """The side's Job for `job`; its pods ask for `gpus` devices each (0: no claim)."""
    if side in VOLCANO_SIDES:
        return volcano_job(job, namespace, gpus)
    return batch_job(job, namespace, caldera=side == "caldera-batch", gpus=gpus)


def is_volcano(side: str) -> bool:
    return side in VOLCANO_SIDES

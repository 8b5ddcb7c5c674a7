"""What every job plugin needs: the Job's owner reference, pod DNS names, container ports.
Their arguments are read by `models.goflags`.

Pure: no temporalio, no kubernetes, no I/O. The plugin modules and the workflow-side pod
builder both rely on that: workflow code must be deterministic and may not do I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from models import vcjob
from models.meta import controller_reference
from models.vcjob import Job, TaskSpec


def job_name(job: Job) -> str:
    # The apiserver always sets name and namespace; "" is Go's zero value for a bare object.
    return job.metadata.name or ""


def job_namespace(job: Job) -> str:
    return job.metadata.namespace or ""


def pod_name(job: str, task: str, index: int) -> str:
    """Volcano's `MakePodName`: `<job>-<task>-<index>`."""
    return f"{job}-{task}-{index}"


def owner_reference(job: Job) -> dict[str, Any]:
    """Volcano's `metav1.NewControllerRef(job, JobKind)`, as the plugins' manifests hold it; a
    Job without a uid (not read from the apiserver) is refused."""
    if not job.metadata.uid:
        raise ValueError(
            f"job {job_namespace(job)}/{job_name(job)}: metadata.uid is required for owner "
            "references; pass the Job as read from the apiserver"
        )
    return controller_reference(vcjob.API_VERSION, "Job", job_name(job), job.metadata.uid).dump()


def object_meta(job: Job, name: str) -> dict[str, Any]:
    """Metadata of an object a plugin creates for the Job: same namespace, owned by it."""
    return {
        "name": name,
        "namespace": job_namespace(job),
        "ownerReferences": [owner_reference(job)],
    }


def find_task(job: Job, name: str) -> TaskSpec | None:
    """The task of that name (None: the job has none), as Volcano's GetTaskIndexUnderJob."""
    return next((t for t in job.spec.tasks if t.name == name), None)


def _template_spec(task: TaskSpec) -> dict[str, Any]:
    return (task.template.spec if task.template is not None else None) or {}


def domain_name(job: Job, task: TaskSpec, index: int) -> str:
    """Volcano's MakeDomainName: `<hostname>.<subdomain>` of one pod of a task.

    The template's hostname and subdomain win; otherwise the pod name and the job name (the
    headless Service of the svc plugin). Unlike `task_hosts`, an explicit hostname is not
    collapsed: every index gets the same name.
    """
    spec = _template_spec(task)
    hostname: str = spec.get("hostname") or pod_name(job_name(job), task.name or "", index)
    subdomain: str = spec.get("subdomain") or job_name(job)
    return f"{hostname}.{subdomain}"


def task_hosts(job: Job, task: TaskSpec) -> list[tuple[str, str]]:
    """(hostname, subdomain) of each pod of a task, as Volcano's GenerateHosts lists them.

    A template with an explicit hostname gives every replica that one name, so it is listed
    once; the subdomain defaults to the job name (the headless Service).
    """
    spec = _template_spec(task)
    hostname: str = spec.get("hostname") or ""
    subdomain: str = spec.get("subdomain") or job_name(job)
    if hostname:
        return [(hostname, subdomain)] if (task.replicas or 0) > 0 else []
    return [
        (pod_name(job_name(job), task.name or "", i), subdomain) for i in range(task.replicas or 0)
    ]


def containers(pod: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every container and init container of a pod manifest, for plugins that touch all."""
    spec = pod.get("spec") or {}
    yield from spec.get("containers") or []
    yield from spec.get("initContainers") or []


def append(obj: dict[str, Any], key: str, *items: dict[str, Any]) -> None:
    """Go's `x.List = append(x.List, items...)` on a manifest dict (absent or null = empty)."""
    obj[key] = [*(obj.get(key) or []), *items]


def go_int32(value: int) -> int:
    """Go's `int32(v)`: Volcano converts its int port flags so, wrapping what does not fit."""
    return (value + 2**31) % 2**32 - 2**31


def open_ports(container: dict[str, Any], *ports: tuple[str, int]) -> None:
    """Append each (name, number) port the container does not already expose by number.

    What is exposed is read once, before appending, as Volcano's plugins check their flags
    against the container's own ports first; a user's port of that number keeps its name.
    """
    exposed = {p.get("containerPort") for p in container.get("ports") or []}
    wanted: list[dict[str, Any]] = [{"name": n, "containerPort": go_int32(p)} for n, p in ports]
    missing = [p for p in wanted if p["containerPort"] not in exposed]
    if missing:
        append(container, "ports", *missing)


class PodRefused(ValueError):
    """A plugin cannot make this pod from the Job (Volcano's OnPodCreate returning an error:
    no pod of the job is created). The message names the job and the field."""

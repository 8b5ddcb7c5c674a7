"""The pod-template checks of a Job's admission: what the apiserver would refuse when the pods
are created, and what Caldera itself reads from a template (the containers and their requests),
refused before the Job is stored, as Volcano's webhook validates every task's template.

Pure, and a subset of Kubernetes' pod validation: the container list, names, images, resource
quantities, ports and the restart policy. The CRD keeps templates free-form, so nothing else
checks them before pods are made; what this module lets through and the apiserver refuses at
pod creation ends the Job Terminated, with a Warning Event that says why.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Final

from models.quantity import SCHEMA_PATTERN
from models.vcjob import DNS1123_LABEL

_QUANTITY: Final = re.compile(SCHEMA_PATTERN)
_LABEL: Final = re.compile(DNS1123_LABEL)
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
MAX_PORT: Final = 65535


def problems(job: Mapping[str, object]) -> list[str]:
    """Every problem of every task's template, each naming its field."""
    spec = job.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, Mapping) else None
    if not isinstance(tasks, list):
        return []  # the CRD's schema answers for the task list itself
    out: list[str] = []
    for i, task in enumerate(tasks):
        template = task.get("template") if isinstance(task, Mapping) else None
        pod = template.get("spec") if isinstance(template, Mapping) else None
        out += _pod(f"spec.tasks[{i}].template.spec", pod if isinstance(pod, Mapping) else {})
    return out


def _pod(at: str, pod: Mapping[str, object]) -> list[str]:
    out: list[str] = []
    policy = pod.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        supported = ", ".join(f'"{p}"' for p in RESTART_POLICIES)
        out.append(
            f'{at}.restartPolicy: Unsupported value: "{policy}": supported values: {supported}'
        )
    containers = pod.get("containers")
    if not isinstance(containers, list) or not containers:
        out.append(f"{at}.containers: Required value: a list of at least one container")
    else:
        out += _containers(f"{at}.containers", containers)
    init = pod.get("initContainers")
    if init is not None and not isinstance(init, list):
        out.append(f"{at}.initContainers: Invalid value: must be a list of containers")
    elif init:
        out += _containers(f"{at}.initContainers", init)
    return out


def _containers(at: str, containers: list[object]) -> list[str]:
    out: list[str] = []
    names: set[str] = set()
    for i, container in enumerate(containers):
        here = f"{at}[{i}]"
        if not isinstance(container, Mapping):
            out.append(f"{here}: Invalid value: a container must be an object")
            continue
        name = container.get("name")
        if not isinstance(name, str) or not name:
            out.append(f"{here}.name: Required value")
        elif len(name) > 63 or not _LABEL.match(name):
            out.append(f'{here}.name: Invalid value: "{name}": must be a DNS-1123 label')
        elif name in names:
            out.append(f'{here}.name: Duplicate value: "{name}"')
        else:
            names.add(name)
        image = container.get("image")
        if not isinstance(image, str) or not image.strip():
            out.append(f"{here}.image: Required value")
        out += list(_quantities(f"{here}.resources", container.get("resources")))
        out += list(_ports(f"{here}.ports", container.get("ports")))
    return out


def _quantities(at: str, resources: object) -> Iterator[str]:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        yield f"{at}: Invalid value: must be an object of limits and requests"
        return
    for kind in ("limits", "requests"):
        listed = resources.get(kind)
        if listed is None:
            continue
        if not isinstance(listed, Mapping):
            yield f"{at}.{kind}: Invalid value: must map resource names to quantities"
            continue
        for name, value in listed.items():
            text = str(value) if isinstance(value, int | float) else value
            if not isinstance(text, str) or not _QUANTITY.match(text):
                yield (
                    f'{at}.{kind}.{name}: Invalid value: "{value}": must be a quantity, '
                    "such as 500m, 2 or 4Gi"
                )


def _ports(at: str, ports: object) -> Iterator[str]:
    if ports is None:
        return
    if not isinstance(ports, list):
        yield f"{at}: Invalid value: must be a list of ports"
        return
    for i, port in enumerate(ports):
        number = port.get("containerPort") if isinstance(port, Mapping) else None
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= MAX_PORT:
            yield (
                f"{at}[{i}].containerPort: Invalid value: {number}: must be between 1 and "
                f"{MAX_PORT}, inclusive"
            )

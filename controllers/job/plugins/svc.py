"""The `svc` plugin: stable DNS names for every pod of a job, and the host lists to find them.

A pod with `hostname` and `subdomain` set, in a namespace with a headless Service named like
the subdomain, gets the DNS record `<hostname>.<subdomain>`; Volcano's svc plugin sets both on
every pod, creates that Service (`<job>`), publishes each task's host list in a ConfigMap
(`<job>-svc`, mounted at /etc/volcano and optionally injected as env), and restricts ingress to
the job's own pods with a NetworkPolicy (`<job>`). MPI, PyTorch and TensorFlow jobs depend on it.

Pure builders only: the manifests and the pod mutation. Creating and deleting the objects is
the activities' job (`activities.controllers.plugins`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, Final

from controllers.job.plugins import support
from models import goflags, labels
from models.vcjob import Job

NAME: Final = "svc"
MOUNT_PATH: Final = "/etc/volcano"


@dataclasses.dataclass(frozen=True)
class Options:
    publish_not_ready_addresses: bool = False
    disable_network_policy: bool = False
    # Off for jobs with so many pods that the host lists would overflow the env size limit.
    inject_hosts_env: bool = True


def options(args: Sequence[str]) -> tuple[Options, str | None]:
    """The plugin's flags; the error (None: none) is only for logging, as in Volcano."""
    return goflags.parse(Options(), args)


def config_map_name(job: Job) -> str:
    return f"{support.job_name(job)}-{NAME}"


def _key(task_name: str | None) -> str:
    # Env names cannot contain '-'; Volcano swaps it for '_' in every key it derives.
    return (task_name or "").replace("-", "_")


def hosts_env(task_name: str | None) -> str:
    return f"VC_{_key(task_name).upper()}_HOSTS"


def num_env(task_name: str | None) -> str:
    return f"VC_{_key(task_name).upper()}_NUM"


def config_data(job: Job) -> dict[str, str]:
    """Volcano's GenerateHosts: per task, the host list by line and by comma, and its length."""
    data: dict[str, str] = {}
    for task in job.spec.tasks:
        hosts = [f"{host}.{subdomain}" for host, subdomain in support.task_hosts(job, task)]
        data[f"{_key(task.name)}.host"] = "\n".join(hosts)
        data[hosts_env(task.name)] = ",".join(hosts)
        data[num_env(task.name)] = str(len(hosts))
    return data


def config_map(job: Job) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": support.object_meta(job, config_map_name(job)),
        "data": config_data(job),
    }


def _job_selector(job: Job) -> dict[str, str]:
    return {
        labels.JOB_NAME: support.job_name(job),
        labels.JOB_NAMESPACE: support.job_namespace(job),
    }


def service(job: Job, opts: Options) -> dict[str, Any]:
    """The headless Service that makes `<pod>.<job>` resolve (no ports: DNS records only)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": support.object_meta(job, support.job_name(job)),
        "spec": {
            "clusterIP": "None",
            "selector": _job_selector(job),
            "publishNotReadyAddresses": opts.publish_not_ready_addresses,
        },
    }


def network_policy(job: Job) -> dict[str, Any]:
    """Ingress to the job's pods only from pods of the same job, as Volcano writes it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": support.object_meta(job, support.job_name(job)),
        "spec": {
            "podSelector": {"matchLabels": _job_selector(job)},
            "ingress": [{"from": [{"podSelector": {"matchLabels": _job_selector(job)}}]}],
            "policyTypes": ["Ingress"],
        },
    }


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's svc OnPodCreate: hostname/subdomain if unset, the host env, the mount."""
    opts, _ = options(args)
    out = copy.deepcopy(pod)
    spec = out.setdefault("spec", {})
    pod_name = (out.get("metadata") or {}).get("name") or support.pod_name(
        support.job_name(job), task_name, index
    )
    spec["hostname"] = spec.get("hostname") or pod_name
    spec["subdomain"] = spec.get("subdomain") or support.job_name(job)
    cm = config_map_name(job)
    if opts.inject_hosts_env:
        names = [n for t in job.spec.tasks for n in (hosts_env(t.name), num_env(t.name))]
        env = [{"name": n, "valueFrom": {"configMapKeyRef": {"name": cm, "key": n}}} for n in names]
        for container in support.containers(out):
            support.append(container, "env", *copy.deepcopy(env))
    support.append(spec, "volumes", {"name": cm, "configMap": {"name": cm}})
    for container in support.containers(out):
        support.append(container, "volumeMounts", {"name": cm, "mountPath": MOUNT_PATH})
    return out

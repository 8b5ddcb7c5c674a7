"""Volcano's job plugins, the pure half: the pod mutation and the manifests of the objects they own.

`env`, `ssh` and `svc` give pods their index, ssh keys and DNS names; the distributed-framework
plugins `mpi`, `pytorch`, `tensorflow`, `ray` and `hcclrank` build on them to wire one
framework's processes together (each module says how). `on_pod_create` and the manifest
builders in the plugin modules are pure and deterministic: the pod builder may run them
anywhere, even inside a workflow, and they are unit-tested as tables. Nothing here imports
temporalio or kubernetes; the activities that create and delete the objects (Volcano's
OnJobAdd/OnJobUpdate and OnJobDelete) are `activities.controllers.plugins`, and the one random step,
an ssh key pair, is made there too.

Volcano's order over `spec.plugins` is Go map order, i.e. random; here it is sorted by name so
that pods and histories are reproducible, except that hcclrank runs last: it reads the RANK env
another plugin (pytorch) may have written. A plugin name outside `POD_HOOKS` is skipped and gets
no `controlledResources` marker; hcclrank gets none either, as in Volcano.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from controllers.job import markers
from controllers.job.plugins import env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow
from models.vcjob import Job

PodHook = Callable[[Job, dict[str, Any], str, int, Sequence[str]], dict[str, Any]]

POD_HOOKS: Final[Mapping[str, PodHook]] = {
    env.NAME: env.on_pod_create,
    hcclrank.NAME: hcclrank.on_pod_create,
    mpi.NAME: mpi.on_pod_create,
    pytorch.NAME: pytorch.on_pod_create,
    ray.NAME: ray.on_pod_create,
    ssh.NAME: ssh.on_pod_create,
    svc.NAME: svc.on_pod_create,
    tensorflow.NAME: tensorflow.on_pod_create,
}
# Run after the others: they may write what these read (hcclrank takes pytorch's RANK).
_LAST: Final = frozenset({hcclrank.NAME})
# Volcano's OnJobAdd records no `plugin-<name>` marker for these.
UNMARKED: Final = frozenset({hcclrank.NAME})


def marker(plugin: str) -> str:
    """The `status.controlledResources` key Volcano records for an applied plugin."""
    return markers.plugin_marker(plugin)


def known(job: Job) -> list[tuple[str, list[str]]]:
    """The job's implemented plugins with their arguments, in the order they run."""
    found = [(n, a) for n, a in (job.spec.plugins or {}).items() if n in POD_HOOKS]
    return sorted(found, key=lambda plugin: (plugin[0] in _LAST, plugin[0]))


def on_pod_create(job: Job, pod: dict[str, Any], task_name: str, index: int) -> dict[str, Any]:
    """The pod manifest with every implemented plugin of the job applied, in `known` order.

    `pod` is left untouched; unknown plugin names are skipped. Volcano fails the pod instead,
    but its webhook only admits plugins it has, so a Volcano Job never gets that far; Caldera's
    webhook refuses the same (`models.plugins`), and a Job stored before it was registered runs
    without the plugins it lacks. A plugin that refuses the pod (ray without its head task)
    raises `base.PodRefused`, which the pod activity makes a non-retryable Invalid error.
    """
    out = copy.deepcopy(pod)
    for name, args in known(job):
        out = POD_HOOKS[name](job, out, task_name, index, args)
    return out

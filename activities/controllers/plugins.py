"""Volcano's job plugins, the I/O half: the objects they own, created and deleted.

`ensure_plugins` and `remove_plugins` are the activities that create and delete the
ConfigMap, Services, NetworkPolicy and Secret (Volcano's OnJobAdd/OnJobUpdate and
OnJobDelete), in the order `controllers.job.plugins.known` gives; the manifests and the pod
mutation are that pure package's. The ssh key pair is generated here (`generate_keys`), the one
random step, which a workflow must never take.

Every object is owned by the Job (controller reference), so deleting the Job removes them even
if `remove_plugins` never runs. Both activities are idempotent: `ensure_plugins` refreshes the
ConfigMap, creates what is missing and keeps an existing ssh key pair, so a retry or a second
run (Volcano's OnJobUpdate) changes nothing that pods already mounted; `remove_plugins` counts
NotFound as done.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Final, TypeVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from kubernetes import client
from pydantic import BaseModel, ConfigDict
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import errors, kube
from controllers.job import plugins as job_plugins
from controllers.job.plugins import env, hcclrank, mpi, pytorch, ray, ssh, support, svc, tensorflow
from models import keys
from models.vcjob import Job

T = TypeVar("T")


def generate_keys() -> ssh.KeyPair:
    """A fresh RSA-2048 pair in the formats Volcano writes. Random: call from activities only."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=ssh.KEY_BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return ssh.KeyPair(private=private.decode(), public=public.decode() + "\n")


class PluginsInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    job: Job  # as read from the apiserver (metadata.uid set)


class PluginsResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    controlled: dict[str, str]  # controlledResources markers: plugin-<name> -> <name>


def _read_job(data: PluginsInput, owned: bool) -> Job:
    """The Job, or a non-retryable Invalid error: a retry would read the same input.

    `owned`: the Job must carry metadata.uid, because objects will be created owned by it.
    """
    try:
        job = data.job
        if owned:
            support.owner_reference(job)
    except ValueError as e:  # pydantic's ValidationError is a ValueError too
        raise ApplicationError(f"plugins: {e}", type="Invalid", non_retryable=True) from e
    return job


def _log_args(job: Job, plugin: str, error: str | None) -> None:
    # Volcano only logs a bad plugin argument and carries on with what it parsed.
    if error is not None:
        key = keys.job_key(support.job_namespace(job), support.job_name(job))
        activity.logger.warning(
            "plugin arguments ignored job=%s plugin=%s error=%s",
            key,
            plugin,
            error,
            extra={"job": key},
        )


_Effect = Callable[[Job, Sequence[str]], None]


def _read(what: str, call: Callable[[], T]) -> T | None:
    """A read where NotFound is an answer: None means the object does not exist."""
    with errors.kube_call(what, ok=errors.GONE_OK):
        return call()
    return None  # reached only when kube_call swallowed the NotFound


def _ensure_svc(job: Job, args: Sequence[str]) -> None:
    opts, error = svc.options(args)
    _log_args(job, svc.NAME, error)
    ns, core = support.job_namespace(job), kube.core()
    cm = svc.config_map(job)
    name = cm["metadata"]["name"]
    existing = _read(
        f"read ConfigMap {ns}/{name}", lambda: core.read_namespaced_config_map(name, ns)
    )
    if existing is None:
        with errors.kube_call(f"create ConfigMap {ns}/{name}", ok=errors.EXISTS_OK):
            core.create_namespaced_config_map(ns, kube.body(cm))
    elif (existing.data or {}) != cm["data"]:
        # Replace carries the resourceVersion read: a concurrent writer yields a retried 409.
        existing.data = cm["data"]
        with errors.kube_call(f"update ConfigMap {ns}/{name}"):
            core.replace_namespaced_config_map(name, ns, existing)
    # Volcano never updates the Service or NetworkPolicy once they exist.
    with errors.kube_call(f"create Service {ns}/{support.job_name(job)}", ok=errors.EXISTS_OK):
        core.create_namespaced_service(ns, kube.body(svc.service(job, opts)))
    if not opts.disable_network_policy:
        networking = client.NetworkingV1Api(kube.api())
        what = f"create NetworkPolicy {ns}/{support.job_name(job)}"
        with errors.kube_call(what, ok=errors.EXISTS_OK):
            networking.create_namespaced_network_policy(ns, kube.body(svc.network_policy(job)))


def _base64(data: Mapping[str, bytes | str]) -> dict[str, str]:
    """Secret data as the wire's base64 text (the client may hand back decoded bytes)."""
    return {k: v if isinstance(v, str) else base64.b64encode(v).decode() for k, v in data.items()}


def _ensure_ssh(job: Job, args: Sequence[str]) -> None:
    opts, error = ssh.options(args)
    _log_args(job, ssh.NAME, error)
    ns, name, core = support.job_namespace(job), ssh.secret_name(job), kube.core()
    existing = _read(f"read Secret {ns}/{name}", lambda: core.read_namespaced_secret(name, ns))
    stored = _base64(existing.data or {}) if existing is not None else {}
    # Keep a stored pair: pods already running mounted it (and a subPath mount never updates).
    pair = ssh.user_keys(opts) or ssh.keys_from_data(stored) or generate_keys()
    desired = ssh.secret(job, opts, pair)
    if existing is None:
        with errors.kube_call(f"create Secret {ns}/{name}", ok=errors.EXISTS_OK):
            core.create_namespaced_secret(ns, kube.body(desired))
    elif stored != desired["data"]:
        existing.data = desired["data"]
        with errors.kube_call(f"update Secret {ns}/{name}"):
            core.replace_namespaced_secret(name, ns, existing)


def _ensure_ray(job: Job, args: Sequence[str]) -> None:
    opts, error = ray.options(args)
    _log_args(job, ray.NAME, error)
    ns, name = support.job_namespace(job), ray.head_service_name(job)
    # Like the svc plugin's Service: created once, never updated.
    with errors.kube_call(f"create Service {ns}/{name}", ok=errors.EXISTS_OK):
        kube.core().create_namespaced_service(ns, kube.body(ray.head_service(job, opts)))


def _nothing(job: Job, args: Sequence[str]) -> None:
    """A plugin that owns no object: applying or removing it is the marker alone."""


def _arguments_only(
    name: str, options: Callable[[Sequence[str]], tuple[object, str | None]]
) -> _Effect:
    """Applying a plugin that owns no object: its arguments read, a bad one logged (its pods
    are built elsewhere, by pure code that cannot log)."""

    def ensure(job: Job, args: Sequence[str]) -> None:
        _log_args(job, name, options(args)[1])

    return ensure


def _remove_svc(job: Job, args: Sequence[str]) -> None:
    opts, _ = svc.options(args)
    ns, core, name = support.job_namespace(job), kube.core(), support.job_name(job)
    cm = svc.config_map_name(job)
    with errors.kube_call(f"delete ConfigMap {ns}/{cm}", ok=errors.GONE_OK):
        core.delete_namespaced_config_map(cm, ns)
    with errors.kube_call(f"delete Service {ns}/{name}", ok=errors.GONE_OK):
        core.delete_namespaced_service(name, ns)
    # Like Volcano: a NetworkPolicy it was told not to create is not its to delete.
    if not opts.disable_network_policy:
        with errors.kube_call(f"delete NetworkPolicy {ns}/{name}", ok=errors.GONE_OK):
            client.NetworkingV1Api(kube.api()).delete_namespaced_network_policy(name, ns)


def _remove_ray(job: Job, args: Sequence[str]) -> None:
    ns, name = support.job_namespace(job), ray.head_service_name(job)
    with errors.kube_call(f"delete Service {ns}/{name}", ok=errors.GONE_OK):
        kube.core().delete_namespaced_service(name, ns)


def _remove_ssh(job: Job, args: Sequence[str]) -> None:
    ns, name = support.job_namespace(job), ssh.secret_name(job)
    with errors.kube_call(f"delete Secret {ns}/{name}", ok=errors.GONE_OK):
        kube.core().delete_namespaced_secret(name, ns)


_ENSURE: Final[Mapping[str, _Effect]] = {
    env.NAME: _nothing,
    hcclrank.NAME: _arguments_only(hcclrank.NAME, hcclrank.options),
    mpi.NAME: _arguments_only(mpi.NAME, mpi.options),
    pytorch.NAME: _arguments_only(pytorch.NAME, pytorch.options),
    ray.NAME: _ensure_ray,
    ssh.NAME: _ensure_ssh,
    svc.NAME: _ensure_svc,
    tensorflow.NAME: _arguments_only(tensorflow.NAME, tensorflow.options),
}
_REMOVE: Final[Mapping[str, _Effect]] = {
    env.NAME: _nothing,
    hcclrank.NAME: _nothing,
    mpi.NAME: _nothing,
    pytorch.NAME: _nothing,
    ray.NAME: _remove_ray,
    ssh.NAME: _remove_ssh,
    svc.NAME: _remove_svc,
    tensorflow.NAME: _nothing,
}


@activity.defn(name="ensure_plugins")
def ensure_plugins(data: PluginsInput) -> PluginsResult:
    """Volcano's pluginOnJobAdd (and OnJobUpdate): create or refresh each plugin's objects."""
    job = _read_job(data, owned=True)
    key = keys.job_key(support.job_namespace(job), support.job_name(job))
    controlled: dict[str, str] = {}
    for name, args in job_plugins.known(job):
        _ENSURE[name](job, args)
        if name not in job_plugins.UNMARKED:
            controlled[job_plugins.marker(name)] = name
        activity.logger.info("plugin applied job=%s plugin=%s", key, name, extra={"job": key})
    return PluginsResult(controlled=controlled)


@activity.defn(name="remove_plugins")
def remove_plugins(data: PluginsInput) -> PluginsResult:
    """Volcano's pluginOnJobDelete: delete each plugin's objects; the markers all go."""
    job = _read_job(data, owned=False)
    key = keys.job_key(support.job_namespace(job), support.job_name(job))
    for name, args in job_plugins.known(job):
        _REMOVE[name](job, args)
        activity.logger.info("plugin removed job=%s plugin=%s", key, name, extra={"job": key})
    return PluginsResult(controlled={})


ACTIVITIES: Final = (ensure_plugins, remove_plugins)

"""The `ssh` plugin: password-less ssh between the pods of one job (what MPI launchers need).

Volcano keeps one RSA key pair per job in the Secret `<job>-ssh` (`id_rsa`, `id_rsa.pub`,
`authorized_keys` = the public key, and an ssh `config` naming every pod) and mounts it with
subPath `.ssh` at the key path, /root/.ssh by default. The private key must be 0600 or sshd and
ssh refuse it; with a custom path Volcano assumes a non-root user who must be able to read the
files, so it uses 0644.

Pure except `generate_keys`, the one nondeterministic function, which only the activity calls
(a workflow must never: replay would produce another key). No temporalio, no kubernetes.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from activities.plugins import base
from models import goflags
from models.vcjob import Job

NAME: Final = "ssh"
DEFAULT_PATH: Final = "/root/.ssh"
DEFAULT_PORT: Final = 22
KEY_BITS: Final = 2048
PRIVATE_KEY: Final = "id_rsa"
PUBLIC_KEY: Final = "id_rsa.pub"
AUTHORIZED_KEYS: Final = "authorized_keys"
CONFIG: Final = "config"
_SUB_PATH: Final = ".ssh"
_ROOT_MODE: Final = 0o600
_NON_ROOT_MODE: Final = 0o644


@dataclasses.dataclass(frozen=True)
class Options:
    ssh_key_file_path: str = DEFAULT_PATH
    ssh_private_key: str = ""  # "": generate a key pair
    ssh_public_key: str = ""
    ssh_port: int = DEFAULT_PORT


@dataclasses.dataclass(frozen=True)
class KeyPair:
    private: str  # PEM, "-----BEGIN RSA PRIVATE KEY-----" (PKCS#1)
    public: str  # OpenSSH authorized_keys line, "ssh-rsa AAAA...\n"


def options(args: Sequence[str]) -> tuple[Options, str | None]:
    """The plugin's flags; an out-of-range port falls back to 22 (Volcano's validateSSHPort).

    The error (None: none) is only for logging, as in Volcano.
    """
    opts, error = goflags.parse(Options(), args)
    if not 0 < opts.ssh_port <= 65535:
        opts = dataclasses.replace(opts, ssh_port=DEFAULT_PORT)
    return opts, error


def secret_name(job: Job) -> str:
    return f"{base.job_name(job)}-{NAME}"


def user_keys(opts: Options) -> KeyPair | None:
    """The key pair given with --ssh-private-key/--ssh-public-key (None: generate one)."""
    if not opts.ssh_private_key:
        return None
    return KeyPair(private=opts.ssh_private_key, public=opts.ssh_public_key)


def generate_keys() -> KeyPair:
    """A fresh RSA-2048 pair in the formats Volcano writes. Random: call from activities only."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return KeyPair(private=private.decode(), public=public.decode() + "\n")


def keys_from_data(data: Mapping[str, str]) -> KeyPair | None:
    """The key pair stored in an existing Secret's base64 `data` (None: it holds none)."""
    if PRIVATE_KEY not in data or PUBLIC_KEY not in data:
        return None
    return KeyPair(
        private=base64.b64decode(data[PRIVATE_KEY]).decode(),
        public=base64.b64decode(data[PUBLIC_KEY]).decode(),
    )


def config(job: Job, port: int) -> str:
    """Volcano's generateSSHConfig: no host-key prompts, one Host block per pod."""
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.spec.tasks:
        for host, subdomain in base.task_hosts(job, task):
            lines += [f"Host {host}", f"  HostName {host}.{subdomain}", f"  Port {port}"]
    return "\n".join(lines) + "\n"


def secret_data(job: Job, opts: Options, keys: KeyPair) -> dict[str, str]:
    """The Secret's `data`, base64-encoded as the apiserver stores and returns it."""
    text = {
        PRIVATE_KEY: keys.private,
        PUBLIC_KEY: keys.public,
        AUTHORIZED_KEYS: keys.public,
        CONFIG: config(job, opts.ssh_port),
    }
    return {k: base64.b64encode(v.encode()).decode() for k, v in text.items()}


def secret(job: Job, opts: Options, keys: KeyPair) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": base.object_meta(job, secret_name(job)),
        "type": "Opaque",
        "data": secret_data(job, opts, keys),
    }


def on_pod_create(
    job: Job, pod: dict[str, Any], task_name: str, index: int, args: Sequence[str]
) -> dict[str, Any]:
    """Volcano's ssh OnPodCreate (mountRsaKey): the Secret volume and its subPath mounts."""
    opts, _ = options(args)
    name = secret_name(job)
    keys = (PRIVATE_KEY, PUBLIC_KEY, AUTHORIZED_KEYS, CONFIG)
    mode = _ROOT_MODE if opts.ssh_key_file_path == DEFAULT_PATH else _NON_ROOT_MODE
    volume = {
        "name": name,
        "secret": {
            "secretName": name,
            "items": [{"key": k, "path": f"{_SUB_PATH}/{k}"} for k in keys],
            "defaultMode": mode,
        },
    }
    out = copy.deepcopy(pod)
    base.append(out.setdefault("spec", {}), "volumes", volume)
    mount = {"name": name, "mountPath": opts.ssh_key_file_path, "subPath": _SUB_PATH}
    for container in base.containers(out):
        base.append(container, "volumeMounts", dict(mount))
    return out

"""Caldera's worker and forwarder run from the image (`deploy/image/build.sh`) instead of this
checkout: each in a buildah working container with chroot isolation, so on this machine's
network and with no user namespaces or cgroups needed, given the same environment as
`controllers` gives the local processes, and run as the user who started the stack. The files
that environment names (the kubeconfig and its certificates, the scheduler configuration) are
mounted read-only at their own paths.

Stopping the recorded process (`buildah run`) ends the container's process with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

from cli.devstack import caldera_processes, processes
from cli.devstack.processes import Process

DEFAULT_IMAGE: Final = "localhost/caldera:0.1.0"
WORKER: Final = ("python", "-m", "worker")
FORWARDER: Final = ("caldera", "forwarder")


def unavailable(image: str = DEFAULT_IMAGE) -> str | None:
    """Why the image cannot run here; None: it can."""
    if shutil.which("buildah") is None:
        return "buildah is not installed (apt-get install buildah)"
    found = subprocess.run(
        ["buildah", "inspect", "--type", "image", image], capture_output=True, text=True
    )
    if found.returncode != 0:
        return f"the image {image} is not built (deploy/image/build.sh)"
    return None


def container(image: str, name: str) -> str:
    """A working container of `image` named `name` (one left by an earlier run is replaced)."""
    remove(name)
    made = subprocess.run(
        ["buildah", "from", "--name", name, image], capture_output=True, text=True, check=True
    )
    return made.stdout.strip()


def remove(name: str) -> None:
    subprocess.run(["buildah", "rm", name], capture_output=True)


def argv(name: str, env: dict[str, str], mounts: list[Path], command: tuple[str, ...]) -> list[str]:
    # As the user who started the stack: its kubeconfig and certificates are that user's own
    # (0600), which the image's user 10001 may not read.
    out = ["buildah", "run", "--isolation", "chroot", "--user", f"{os.getuid()}:{os.getgid()}"]
    for path in mounts:
        out += ["--volume", f"{path}:{path}:ro"]
    for key, value in env.items():
        out += ["--env", f"{key}={value}"]
    return [*out, name, "--", *command]


def start(
    name: str,
    command: tuple[str, ...],
    ready_line: str,
    kubeconfig: str,
    temporal_address: str,
    log_dir: Path,
    scheduler_override: str | None,
) -> Process:
    """`command` in the working container `name`, ready once its log shows `ready_line`."""
    env = caldera_processes.environment(kubeconfig, temporal_address, scheduler_override, log_dir)
    mounts = [Path(kubeconfig).resolve().parent, log_dir.resolve().parent]
    started = processes.start(name, argv(name, env, mounts, command), log_dir)
    processes.wait_until(
        started, lambda: ready_line in processes.log_text(started), 120, "ready in its container"
    )
    return started

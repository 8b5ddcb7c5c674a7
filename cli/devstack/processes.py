"""Child processes of the dev stack: started with a log file, stopped by their own PID.

Every process Caldera starts is recorded (name, PID, log) so `caldera dev down` and the test
fixtures stop exactly what they started and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class StartupError(RuntimeError):
    """A component did not become ready; the message names it and points at its log."""


class Process(BaseModel):
    """One started child: enough to find it again from another command."""

    model_config = ConfigDict(frozen=True)

    name: str
    pid: int
    log: str
    log_offset: int = 0  # where this run's output starts in an appended log
    metrics_url: str = ""  # its Prometheus endpoint (http://host:port/metrics); "": none
    argv: tuple[str, ...] = ()  # how it was started, to start it again (`restart`)
    env: dict[str, str] = {}  # what it was given beyond this process's environment


def free_port() -> int:
    """A loopback port nobody listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def start(
    name: str, argv: Sequence[str], log_dir: Path, env: dict[str, str] | None = None
) -> Process:
    """Start argv detached from our process group, so Ctrl-C on a test run leaves cleanup to us."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    offset = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    return Process(
        name=name, pid=proc.pid, log=str(log), log_offset=offset, argv=tuple(argv), env=env or {}
    )


def alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        waited = 0  # not our child (started by another command): fall back to a signal probe
    if waited == pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def stop(process: Process, grace: float = 10.0) -> None:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL; only this PID."""
    if not alive(process.pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not alive(process.pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(process.pid, 0)


def restart(process: Process, kill: bool = True, down_for: float = 0.0) -> Process:
    """The same command line and environment again, `down_for` seconds after SIGKILL (`kill`:
    a crash, nothing flushed) or a graceful stop (a process that already ended is just
    started); the log is appended to."""
    if kill:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(process.pid, 0)
    else:
        stop(process)
    time.sleep(down_for)
    again = start(process.name, process.argv, Path(process.log).parent, process.env)
    return process.model_copy(update={"pid": again.pid, "log_offset": again.log_offset})


def log_text(process: Process) -> str:
    """What this run of the process has logged so far (not earlier runs')."""
    try:
        with open(process.log, "rb") as f:
            f.seek(process.log_offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def log_tail(process: Process, lines: int = 30) -> str:
    text = log_text(process)
    return "\n".join(text.splitlines()[-lines:]) if text else "(no log)"


def wait_until(process: Process, ready: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `ready` until true; fail early with the log tail if the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(process.pid):
            raise StartupError(
                f"{process.name} exited before {what}; log {process.log}:\n{log_tail(process)}"
            )
        if ready():
            return
        time.sleep(0.2)
    raise StartupError(
        f"{process.name} not {what} after {timeout:.0f}s; log {process.log}:\n{log_tail(process)}"
    )


def http_ok(url: str, ca_file: str | None = None, insecure: bool = False) -> bool:
    """True when GET url answers 2xx (loopback only)."""
    context = None
    if url.startswith("https"):
        context = ssl.create_default_context(cafile=ca_file)
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


@dataclass(frozen=True)
class PortSet:
    """Named free ports, chosen once per stack so parallel stacks never collide."""

    ports: dict[str, int]

    @classmethod
    def pick(cls, *names: str) -> PortSet:
        return cls({n: free_port() for n in names})

    def __getitem__(self, name: str) -> int:
        return self.ports[name]

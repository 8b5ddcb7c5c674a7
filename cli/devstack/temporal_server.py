"""The Temporal server itself on PostgreSQL: the profile a production store is measured with.

`start` runs three processes: a PostgreSQL cluster initialised under the work directory
(Debian's `postgresql` package), the Temporal server (`go.temporal.io/server`, all four
services in one process) with its default and visibility stores there and more than one
history shard, and Temporal's UI server pointed at it. Caldera's search attributes are
registered in the `default` namespace, which is created here (the server, unlike the dev
server, starts with none). The binaries and the server's SQL schema come from
`deploy/devcluster/build.sh server`, built on first use.

PostgreSQL refuses to run as root; when this process is root, the cluster runs as the
`postgres` user (`setpriv`, so the recorded PID is postgres itself), in a directory that user
can reach.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pwd
import random
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Final

import yaml
from temporalio.service import RPCError

from cli.devstack import controlplane, processes
from cli.devstack.temporal_dev import TemporalServer
from service import namespaces

HISTORY_SHARDS: Final = 4
DATABASES: Final = {"temporal": "temporal", "temporal_visibility": "visibility"}
USER: Final = "temporal"
NAMESPACE: Final = "default"
RETENTION: Final = timedelta(days=3)
_PG_BIN: Final = Path("/usr/lib/postgresql/15/bin")
_SERVICE_PORTS: Final = (20000, 32000)  # below the kernel's ephemeral range (32768-60999)


def _pg(name: str) -> str:
    found = shutil.which(name) or str(_PG_BIN / name)
    if not Path(found).exists():
        raise processes.StartupError(f"{name} not found: apt-get install postgresql")
    return found


def _as_postgres() -> list[str]:
    """The prefix that runs a PostgreSQL program as a non-root user when we are root."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]


def _data_dir(workdir: Path) -> Path:
    """Where the cluster lives: in `workdir`, or, as root, beside it where `postgres` can go
    (a root-owned home is closed to it)."""
    if os.geteuid() != 0:
        return workdir / "postgres"
    digest = hashlib.sha256(str(workdir.resolve()).encode()).hexdigest()[:12]
    base = Path("/var/tmp") / f"caldera-postgres-{digest}"
    base.mkdir(mode=0o700, exist_ok=True)
    user = pwd.getpwnam("postgres")
    os.chown(base, user.pw_uid, user.pw_gid)
    return base / "data"


def remove_data(workdir: Path) -> None:
    """The PostgreSQL cluster of a stopped server started in `workdir` (a throwaway one: the
    dev stack keeps its own across `down` and `up`)."""
    data = _data_dir(workdir)
    shutil.rmtree(data.parent if os.geteuid() == 0 else data, ignore_errors=True)


def _start_postgres(workdir: Path, port: int) -> processes.Process:
    data = _data_dir(workdir)
    prefix = _as_postgres()
    if not (data / "PG_VERSION").exists():
        subprocess.run(
            [*prefix, _pg("initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8"],
            check=True,
            capture_output=True,
        )
    argv = [
        *prefix,
        _pg("postgres"),
        "-D",
        str(data),
        "-p",
        str(port),
        "-k",
        str(data),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "max_connections=200",
        "-c",
        "fsync=on",
    ]
    proc = processes.start("postgres", argv, workdir / "logs")
    processes.wait_until(
        proc, lambda: not processes.port_free(port), 60, f"PostgreSQL on 127.0.0.1:{port}"
    )
    return proc


def _schema(tool: Path, port: int, schema_dir: Path) -> None:
    """Create both databases and bring their schemas to the server's version (idempotent)."""
    for database, kind in DATABASES.items():
        base = [str(tool), "--plugin", "postgres12", "--ep", "127.0.0.1", "-p", str(port)]
        base += ["-u", USER, "--db", database]
        created = subprocess.run([*base, "create-database"], capture_output=True, text=True)
        if created.returncode != 0 and "already exists" not in created.stdout + created.stderr:
            raise processes.StartupError(f"creating {database}: {created.stderr[-500:]}")
        versioned = schema_dir / "postgresql" / "v12" / kind / "versioned"
        for step in (["setup-schema", "-v", "0.0"], ["update-schema", "-d", str(versioned)]):
            subprocess.run([*base, *step], check=True, capture_output=True)


class _ServicePorts:
    """Free ports for the server's services, each handed out once, below the kernel's
    ephemeral range. Not the kernel's own free ports: the services bind one after the other
    while the first ones already open connections (to PostgreSQL, to each other), and such a
    connection can take, as its local port, a port picked for a service not bound yet (a CI
    run's worker service failed with "bind: address already in use"). The membership table
    also stores ports as a smallint, which the ephemeral range exceeds."""

    def __init__(self) -> None:
        self._given: set[int] = set()

    def __call__(self) -> int:
        for _ in range(200):
            port = random.randrange(*_SERVICE_PORTS)
            if port not in self._given and processes.port_free(port):
                self._given.add(port)
                return port
        raise processes.StartupError(f"no free port in {_SERVICE_PORTS} for Temporal's services")


def _config(workdir: Path, pg_port: int, port: int) -> Path:
    """The server's configuration: PostgreSQL stores, the four services on free ports."""
    free = _ServicePorts()

    def store(database: str, conns: int) -> dict[str, object]:
        sql = {
            "pluginName": "postgres12",
            "databaseName": database,
            "connectAddr": f"127.0.0.1:{pg_port}",
            "connectProtocol": "tcp",
            "user": USER,
            "password": "",
            "maxConns": conns,
            "maxIdleConns": conns,
            "maxConnLifetime": "1h",
        }
        return {"sql": sql}

    def service(grpc: int, **extra: int) -> dict[str, object]:
        rpc = {"grpcPort": grpc, "membershipPort": free(), "bindOnLocalHost": True}
        return {"rpc": {**rpc, **extra}}

    services = {
        "frontend": service(port, httpPort=free()),
        "history": service(free()),
        "matching": service(free()),
        "worker": service(free()),
    }
    config = {
        "log": {"stdout": True, "level": "warn"},
        "persistence": {
            "defaultStore": "default",
            "visibilityStore": "visibility",
            "numHistoryShards": HISTORY_SHARDS,
            "datastores": {
                "default": store("temporal", 40),
                "visibility": store("temporal_visibility", 10),
            },
        },
        "global": {"membership": {"maxJoinDuration": "30s", "broadcastAddress": "127.0.0.1"}},
        "services": services,
        "clusterMetadata": {
            "enableGlobalNamespace": False,
            "failoverVersionIncrement": 10,
            "masterClusterName": "active",
            "currentClusterName": "active",
            "clusterInformation": {
                "active": {
                    "enabled": True,
                    "initialFailoverVersion": 1,
                    "rpcName": "frontend",
                    "rpcAddress": f"127.0.0.1:{port}",
                }
            },
        },
        "dcRedirectionPolicy": {"policy": "noop"},
        "dynamicConfigClient": {
            "filepath": str(workdir / "dynamicconfig.yaml"),
            "pollInterval": "10s",
        },
    }
    # The dev server's defaults that Caldera's e2e tests rely on: many signals per run and
    # the search-attribute cache refreshed at once after a registration.
    dynamic = {
        "system.forceSearchAttributesCacheRefreshOnRead": [{"value": True}],
        "frontend.enableUpdateWorkflowExecution": [{"value": True}],
    }
    (workdir / "dynamicconfig.yaml").write_text(yaml.safe_dump(dynamic))
    path = workdir / "temporal-server.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _ui_config(workdir: Path, port: int, ui_port: int) -> Path:
    path = workdir / "ui" / "config" / "development.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "temporalGrpcAddress": f"127.0.0.1:{port}",
        "host": "127.0.0.1",
        "port": ui_port,
        "enableUi": True,
        "defaultNamespace": NAMESPACE,
        "cors": {"allowOrigins": [f"http://127.0.0.1:{ui_port}"]},
    }
    path.write_text(yaml.safe_dump(config))
    return path.parent.parent


async def _ready(address: str, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            await namespaces.register_namespace(address, NAMESPACE, RETENTION)
            return
        except (RPCError, RuntimeError):
            if loop.time() > deadline:
                raise
            await asyncio.sleep(1)


def start(workdir: Path, port: int, ui_port: int, timeout: float = 120) -> TemporalServer:
    """PostgreSQL, the Temporal server and its UI; stopped again if any fails to start."""
    workdir.mkdir(parents=True, exist_ok=True)
    bin_dir = controlplane.build_binaries("server")  # a cold build takes minutes
    started: list[processes.Process] = []
    try:
        pg_port = processes.free_port()
        started.append(_start_postgres(workdir, pg_port))
        _schema(bin_dir / "temporal-sql-tool", pg_port, bin_dir.parent / "temporal-schema")
        config = _config(workdir, pg_port, port)
        server_argv = [
            str(bin_dir / "temporal-server"),
            "--config-file",
            str(config),
            "--allow-no-auth",
            "start",
        ]
        server = processes.start("temporal-server", server_argv, workdir / "logs")
        started.append(server)
        address = f"127.0.0.1:{port}"
        processes.wait_until(
            server, lambda: not processes.port_free(port), timeout, f"Temporal on {address}"
        )
        asyncio.run(_ready(address, timeout))
        ui_root = _ui_config(workdir, port, ui_port)
        ui_argv = [str(bin_dir / "temporal-ui-server"), "--root", str(ui_root)]
        ui_argv += ["--env", "development", "start"]
        ui = processes.start("temporal-ui", ui_argv, workdir / "logs")
        started.append(ui)
        url = f"http://127.0.0.1:{ui_port}"
        processes.wait_until(ui, lambda: processes.http_ok(url), 60, f"Temporal UI at {url}")
    except BaseException:
        for p in reversed(started):
            processes.stop(p)
        raise
    return TemporalServer(address=address, ui=url, process=server, extra=[started[0], ui])

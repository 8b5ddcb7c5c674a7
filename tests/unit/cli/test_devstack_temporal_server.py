"""The Temporal server's configuration: its services listen on ports no outgoing connection
can take while the server starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cli.devstack import temporal_server

pytestmark = pytest.mark.unit

EPHEMERAL_FIRST = 32768  # the kernel's ephemeral range starts here (ip_local_port_range)


def test_every_service_port_is_distinct_and_below_the_ephemeral_range(tmp_path: Path) -> None:
    frontend = 7233  # the caller's, kept as given
    config = yaml.safe_load(temporal_server._config(tmp_path, 5432, frontend).read_text())
    ports = [
        port
        for service in config["services"].values()
        for key, port in service["rpc"].items()
        if key.endswith("Port") and port != frontend
    ]
    assert len(ports) == 8  # four membership ports, three gRPC ports, the frontend's HTTP port
    assert len(set(ports)) == len(ports)
    assert all(port < EPHEMERAL_FIRST for port in ports), ports
    assert config["services"]["frontend"]["rpc"]["grpcPort"] == frontend

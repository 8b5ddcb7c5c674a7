"""`caldera dev up | status | down` as a user runs them: idempotent up, down stops exactly
the processes up started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from cli.devstack import processes

CALDERA = [sys.executable, "-m", "cli.main"]


def _caldera(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CALDERA, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_dev_up_is_idempotent_and_down_stops_what_it_started(tmp_path: Path) -> None:
    env = {**os.environ, "CALDERA_DEV_DIR": str(tmp_path / "dev")}
    ports = ["--temporal-port", str(processes.free_port()), "--ui-port", str(processes.free_port())]
    first = _caldera(env, "dev", "up", "--nodes", "1", *ports)
    state_file = tmp_path / "dev" / "state.json"
    try:
        assert first.returncode == 0, first.stderr
        assert "started" in first.stdout
        assert "export KUBECONFIG=" in first.stdout
        assert f"Temporal UI:  http://127.0.0.1:{ports[3]}" in first.stdout
        state = json.loads(state_file.read_text())
        pids = [p["pid"] for p in state["control_plane"]["processes"]]
        pids.append(state["temporal"]["process"]["pid"])
        pids += [p["pid"] for p in state["controllers"]]
        assert len(pids) == 9 and all(processes.alive(p) for p in pids)
        assert "history: http://127.0.0.1:" in first.stdout
        urls = {p["name"]: p["metrics_url"] for p in state["controllers"] if p["metrics_url"]}
        assert set(urls) == {"worker", "forwarder"}
        for name, url in urls.items():
            assert f"metrics:      {url}  ({name})" in first.stdout
            with urllib.request.urlopen(url, timeout=10) as scraped:
                assert b"temporal_request" in scraped.read()

        again = _caldera(env, "dev", "up", "--nodes", "1", *ports)
        assert again.returncode == 0, again.stderr
        assert "already running" in again.stdout
        assert json.loads(state_file.read_text()) == state

        status = _caldera(env, "dev", "status")
        assert status.returncode == 0 and status.stdout.startswith("up")
        assert all(url in status.stdout for url in urls.values())
    finally:
        down = _caldera(env, "dev", "down")
    assert down.returncode == 0, down.stderr
    assert all(not processes.alive(p) for p in pids)
    assert not state_file.exists()
    assert _caldera(env, "dev", "status").stdout.strip() == "down"

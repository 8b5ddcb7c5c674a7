"""The soak's `--temporal` option and its fault timeline: the dev profile's is today's, the
server profile's swaps the dev server's restarts for the Temporal server's SIGTERM and SIGKILL
and adds two PostgreSQL kills, every one inside the run; the report names the profile and gives
each fault's recovery, so a slow one is not hidden in its kind's percentiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import config, report, schedule
from bench.chaos.stack import Stack
from cli.devstack.controlplane import ControlPlane
from cli.devstack.nodes import NodeTemplate
from cli.devstack.processes import Process
from cli.devstack.temporal_dev import TemporalServer


def test_the_dev_profile_keeps_the_timeline_it_had() -> None:
    d = 600.0
    assert schedule.timed_faults(10) == [
        (d * 0.15, "forwarder SIGKILL"),
        (d * 0.25, "Temporal restart"),
        (d * 0.40, "kube-apiserver restart"),
        (d * 0.50, "node removed"),
        (d * 0.50 + 30, "node re-added"),
        (d * 0.60, "forwarder SIGKILL"),
        (d * 0.70, "Temporal restart"),
    ]


def test_the_dev_profile_keeps_its_order_where_two_faults_fall_on_one_second() -> None:
    # at 5 minutes the node returns (150 s + 30 s) as the second forwarder kill (60 %) is due:
    # the node first, as the soak's list always had them
    assert schedule.timed_faults(5)[4:6] == [(180.0, "node re-added"), (180.0, "forwarder SIGKILL")]


def test_the_server_profile_stops_kills_the_server_and_kills_postgres_twice() -> None:
    d = 180.0
    timeline = schedule.timed_faults(3, "server")
    assert timeline == sorted(timeline)
    assert all(0 < at < d for at, _ in timeline)
    kinds = [kind for _, kind in timeline]
    assert schedule.DEV_SERVER_RESTART not in kinds
    assert (d * 0.25, schedule.SERVER_SIGTERM) in timeline
    assert (d * 0.70, schedule.SERVER_SIGKILL) in timeline
    assert [at for at, kind in timeline if kind == schedule.POSTGRES_KILL] == [d * 0.33, d * 0.85]
    # every other fault where the dev profile has it
    dev = schedule.timed_faults(3, "dev")
    same = [(at, k) for at, k in dev if k != schedule.DEV_SERVER_RESTART]
    assert [(at, k) for at, k in timeline if k in {k for _, k in same}] == same


def test_temporal_defaults_to_dev_and_takes_server(tmp_path: Path) -> None:
    assert config.parse(["--out", str(tmp_path)]).temporal == "dev"
    opts = config.parse(["--temporal", "server", "--minutes", "3", "--burst", "1000"])
    assert opts.temporal == "server" and opts.minutes == 3 and opts.burst == 1000
    assert opts.out.name.startswith("soak-3m-1w-server-")
    assert config.parse(["--minutes", "3"]).out.name.startswith("soak-3m-1w-2")


def test_another_temporal_profile_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        config.parse(["--temporal", "cloud"])
    assert "invalid choice" in capsys.readouterr().err


def _process(name: str, pid: int) -> Process:
    return Process(name=name, pid=pid, log=f"/tmp/{name}.log")


def test_a_restarted_postgres_or_server_takes_its_place_in_the_stack(tmp_path: Path) -> None:
    pg, server, ui = _process("postgres", 1), _process("temporal-server", 2), _process("ui", 3)
    temporal = TemporalServer(address="127.0.0.1:1", ui="", process=server, extra=[pg, ui])
    plane = ControlPlane(workdir="", kubeconfig="", server="", bin_dir="", processes=[])
    stack = Stack(tmp_path, temporal, plane, NodeTemplate(), profile="server")
    assert stack.postgres() == pg
    pg2, server2 = _process("postgres", 11), _process("temporal-server", 12)
    stack.replace(pg, pg2)
    stack.replace(server, server2)
    assert stack.temporal.processes == [pg2, server2, ui]
    assert stack.postgres() == pg2


def _result(temporal: str, injected: list[report.Injected]) -> report.Result:
    opts = {"minutes": 10, "workers": 1, "nodes": 14, "settle_bound": 600, "temporal": temporal}
    return report.Result(
        options=opts,
        namespace="chaos-x",
        jobs_by_kind={},
        ends_by_kind={},
        refused=[],
        faults_by_kind={},
        evictions=0,
        recovery=[],
        invariants={},
        violations={},
        settled_s=1.0,
        runs=0,
        events=0,
        largest="",
        task_timeouts={},
        timers={},
        injected=injected,
    )


def test_the_report_names_the_profile_and_gives_each_fault_its_recovery() -> None:
    kill = report.Injected(198.0, schedule.POSTGRES_KILL, 21.5, 40.25, "PostgreSQL pid 7 killed")
    text = report.markdown(_result("server", [kill]))
    assert text.startswith("# Chaos soak: 10 min of faults, 1 worker(s), the Temporal server on")
    assert "| 198 s | PostgreSQL SIGKILL | 21.5 s | 40.2 s | PostgreSQL pid 7 killed |" in text
    assert "the Temporal dev server on SQLite" in report.markdown(_result("dev", []))

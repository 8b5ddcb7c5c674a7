"""`caldera cluster list`: the flags, and how a probe reads in the table and in JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from cli import clusters, output
from cli.main import parser
from models.dispatch import ClusterStatus

pytestmark = pytest.mark.unit

UP = ClusterStatus(
    name="worker-0",
    reachable=True,
    nodes=2,
    allocatable={"cpu": "16", "memory": str(64 * 2**30), "pods": "220"},
    free={"cpu": "13500m", "memory": str(60 * 2**30 + 2**29), "pods": "217"},
    probed_at=datetime(2026, 1, 1, tzinfo=UTC),
)
DOWN = ClusterStatus(
    name="worker-1", reachable=False, error="unreachable: https://127.0.0.1:1: connection refused"
)


def test_list_flags() -> None:
    args = parser().parse_args(["cluster", "list", "-o", "json", "--cluster-namespace", "ops"])
    assert (args.output, args.cluster_namespace) == (output.Format.JSON, "ops")
    assert parser().parse_args(["cluster", "list"]).output is output.Format.TABLE


@pytest.mark.parametrize(
    ("quantity", "cores", "memory"),
    [
        ("32", "32", "32"),
        ("1500m", "1.5", "1.5"),
        (str(256 * 2**30), str(256 * 2**30), "256Gi"),
        (str(3 * 2**19), str(3 * 2**19), "1.5Mi"),
        ("2Ti", str(2 * 2**40), "2Ti"),
        (None, "-", "-"),
    ],
)
def test_quantities_read_as_cores_and_binary_units(
    quantity: str | None, cores: str, memory: str
) -> None:
    assert clusters.cores(quantity) == cores
    assert clusters.memory(quantity) == memory


def test_a_row_per_cluster_free_over_allocatable() -> None:
    assert clusters.list_row(UP) == ["worker-0", "yes", "no", 2, "13.5/16", "60.5Gi/64Gi", None]
    assert clusters.list_row(DOWN) == ["worker-1", "no", "no", "-", "-", "-", DOWN.error]
    full = UP.model_copy(update={"free": {}})
    assert clusters.list_row(full)[4:6] == ["0/16", "0/64Gi"]
    assert clusters.list_row(UP.model_copy(update={"drained": True}))[2] == "yes"


def test_the_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert clusters.show([UP, DOWN], output.Format.TABLE, "caldera-system") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == list(clusters.LIST_HEADERS)
    assert lines[1].split() == ["worker-0", "yes", "no", "2", "13.5/16", "60.5Gi/64Gi", "-"]
    assert lines[2].split()[:6] == ["worker-1", "no", "no", "-", "-", "-"]
    assert lines[2].endswith(DOWN.error)
    clusters.show([UP, DOWN], output.Format.JSON, "caldera-system")
    data = json.loads(capsys.readouterr().out)
    assert data[0]["free"]["pods"] == "217" and data[0]["probed_at"].startswith("2026-01-01")
    assert data[1] == {**DOWN.model_dump(mode="json")}


def test_no_cluster_says_where_it_looked(capsys: pytest.CaptureFixture[str]) -> None:
    assert clusters.show([], output.Format.TABLE, "ops") == 0
    assert "no Secret labelled caldera.dev/cluster in ops" in capsys.readouterr().err

"""Tables, JSON/YAML and ages as the job and queue commands print them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from cli import output
from cli.history import Entry

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_table_aligns_columns_and_shows_missing_values_as_dashes() -> None:
    text = output.table(
        ("NAME", "PHASE", "PODS"),
        [("train", "Running", {"Running": 2, "Pending": 1}), ("a-much-longer-name", None, [])],
    )
    assert text.splitlines() == [
        "NAME                 PHASE     PODS",
        "train                Running   Running=2,Pending=1",
        "a-much-longer-name   -         -",
    ]


def test_table_without_rows_is_the_header_alone() -> None:
    assert output.table(("NAME", "AGE"), []) == "NAME   AGE"


def test_records_key_rows_by_their_headers() -> None:
    assert output.records(("NAME", "FIRES AT"), [("a", "t1")]) == [{"name": "a", "fires_at": "t1"}]


@pytest.mark.parametrize("fmt", [output.Format.JSON, output.Format.YAML])
def test_dump_round_trips_plain_data(fmt: output.Format) -> None:
    data = {"name": "a", "pods": {"running": 2}, "tasks": [{"name": "w", "ready": True}]}
    text = output.dump(data, fmt)
    loaded = json.loads(text) if fmt is output.Format.JSON else yaml.safe_load(text)
    assert loaded == data


def test_yaml_keeps_key_order_and_stringifies_enums() -> None:
    text = output.dump({"z": output.Format.JSON, "a": 1}, output.Format.YAML)
    assert text.splitlines() == ["z: json", "a: 1"]


def test_dump_refuses_the_table_format() -> None:
    with pytest.raises(ValueError, match="json or yaml"):
        output.dump({}, output.Format.TABLE)


@pytest.mark.parametrize(
    ("ago", "shown"),
    [
        (timedelta(seconds=5), "5s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=7), "7m"),
        (timedelta(minutes=119), "119m"),
        (timedelta(hours=5), "5h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=3, hours=5), "3d"),
        (timedelta(seconds=-3), "0s"),  # clock skew: never negative
    ],
)
def test_age_in_kubectl_buckets(ago: timedelta, shown: str) -> None:
    created = (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert output.age(created, NOW) == shown


def test_age_without_timestamp_is_unknown() -> None:
    assert output.age(None, NOW) == "<unknown>"


def test_fields_align_values() -> None:
    assert output.fields([("Job", "ns/a"), ("MinAvailable", 3), ("Parent", None)]).splitlines() == [
        "Job:           ns/a",
        "MinAvailable:  3",
        "Parent:        -",
    ]


def test_history_prints_the_timeline_then_the_link() -> None:
    time = "2026-11-30T07:53:34.770751927Z"
    entries = [Entry(time=time, kind="signal", detail="job_observed", event_id=3, run_id="r")]
    text = output.history(entries, "vcjob/ns/a", "http://ui/x", output.Format.TABLE)
    assert text.splitlines() == [
        "TIME                       EVENT    DETAIL",
        "2026-11-30T07:53:34.770Z   signal   job_observed",
        "",
        "workflow vcjob/ns/a: http://ui/x",
    ]
    data = json.loads(output.history(entries, "vcjob/ns/a", "http://ui/x", output.Format.JSON))
    assert data == {
        "workflow_id": "vcjob/ns/a",
        "url": "http://ui/x",
        "events": [
            {"time": time, "kind": "signal", "detail": "job_observed", "event_id": 3, "run_id": "r"}
        ],
    }

"""Workflow history → timeline: the recorded JobWorkflow history reads as the job's story, and
the events it lacks (updates, failures, continue-as-new) read as a user expects."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from cli import history, remote
from service import codec

RECORDED = Path(__file__).parents[2] / "workflows" / "histories" / "restart_with_timeout.json"


def _events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(RECORDED.read_text())["events"]
    return events


def _payload(value: object) -> dict[str, Any]:
    return {
        "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
        "data": base64.b64encode(json.dumps(value).encode()).decode(),
    }


def _event(event_id: int, kind: str, attributes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    words = kind.lower().split("_")
    key = words[0] + "".join(w.title() for w in words[1:]) + "EventAttributes"
    return {
        "eventId": str(event_id),
        "eventTime": f"2026-01-01T00:00:{event_id:02d}Z",
        "eventType": f"EVENT_TYPE_{kind}",
        key: attributes,
        **extra,
    }


def _kinds(entries: list[history.Entry]) -> list[tuple[str, str]]:
    return [(e.kind, e.detail) for e in entries]


def test_recorded_history_reads_as_the_jobs_story() -> None:
    entries = history.timeline(_events(), run_id="run-1")
    story = _kinds(entries)
    assert story[0] == ("started", "JobWorkflow")
    assert story[1] == ("signal", "job_observed")
    assert story[-1] == ("completed", "")
    assert [d for k, d in story if k == "phase"] == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Completed",
    ]
    timer = "RestartJob in 5m0s: PodEvicted on task worker"
    ttl = "delete job in 30s: ttlSecondsAfterFinished 30s after Completed"
    assert [(k, d) for k, d in story if k.startswith("timer")] == [
        ("timer started", f"{timer} (fires after 5m0s)"),
        ("timer fired", timer),
        ("timer started", f"{ttl} (fires after 30s)"),
        ("timer cancelled", ttl),
    ]
    assert ("signal", "pods_changed: story-worker-1 deleted") in story
    assert ("signal", "job_deleted") in story
    assert ("activity scheduled", "create_pods: create 3 pods (version 1)") in story
    assert ("activity completed", "delete_pod_group: delete PodGroup story-uid-1") in story
    assert all(e.run_id == "run-1" for e in entries)
    assert [e.event_id for e in entries] == sorted(e.event_id for e in entries)
    assert entries[0].time == "2026-11-30T05:16:46.892Z"


def test_recorded_history_leaves_out_workflow_task_bookkeeping() -> None:
    events = _events()
    entries = history.timeline(events)
    kept = {e.event_id for e in entries}
    for event in events:
        if event["eventType"].startswith("EVENT_TYPE_WORKFLOW_TASK_"):
            assert int(event["eventId"]) not in kept
    scheduled = sum(e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" for e in events)
    assert sum(e.kind == "activity scheduled" for e in entries) == scheduled == 14
    assert not any(e.kind == "activity started" for e in entries)


def test_first_run_continued_from_nothing() -> None:
    assert history.continued_from(_events()) is None


def test_continued_run_names_its_predecessor_and_the_next_one() -> None:
    events = [
        _event(
            1,
            "WORKFLOW_EXECUTION_STARTED",
            {"workflowType": {"name": "JobWorkflow"}, "continuedExecutionRunId": "run-a"},
        ),
        _event(2, "WORKFLOW_EXECUTION_CONTINUED_AS_NEW", {"newExecutionRunId": "run-c"}),
    ]
    assert history.continued_from(events) == "run-a"
    assert _kinds(history.timeline(events)) == [
        ("started", "JobWorkflow, continued from run run-a"),
        ("continued as new", "next run run-c"),
    ]


def test_updates_read_with_their_name_reason_and_transition() -> None:
    request = {
        "meta": {"updateId": "u-1"},
        "input": {"name": "abort", "args": {"payloads": [_payload({"reason": "maintenance"})]}},
    }
    result = {"action": "AbortJob", "phaseBefore": "Running", "phaseAfter": "Aborting"}
    events = [
        _event(1, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED", {"acceptedRequest": request}),
        _event(
            2,
            "WORKFLOW_EXECUTION_UPDATE_COMPLETED",
            {"meta": {"updateId": "u-1"}, "outcome": {"success": {"payloads": [_payload(result)]}}},
        ),
        _event(
            3,
            "WORKFLOW_EXECUTION_UPDATE_REJECTED",
            {
                "rejectedRequest": {"input": {"name": "resume"}},
                "failure": {"message": "job ns/a is Running: only an Aborting or Aborted job"},
            },
        ),
    ]
    assert _kinds(history.timeline(events)) == [
        ("update accepted", "abort: maintenance"),
        ("update completed", "abort: Running → Aborting"),
        ("update rejected", "resume: job ns/a is Running: only an Aborting or Aborted job"),
    ]


def test_failed_activity_shows_its_summary_attempts_and_error() -> None:
    summary = {"summary": _payload("bind 2 pods (session 4) to n1")}
    events = [
        _event(5, "ACTIVITY_TASK_SCHEDULED", {"activityType": {"name": "bind_placements"}})
        | {"userMetadata": summary},
        _event(6, "ACTIVITY_TASK_STARTED", {"scheduledEventId": "5", "attempt": 15}),
        _event(
            7,
            "ACTIVITY_TASK_FAILED",
            {
                "scheduledEventId": "5",
                "failure": {
                    "message": "activity failed",
                    "cause": {"message": "node n1 not found\nTraceback ..."},
                },
            },
        ),
    ]
    assert _kinds(history.timeline(events))[-1] == (
        "activity failed",
        "bind_placements: bind 2 pods (session 4) to n1; after 15 attempts; "
        "activity failed: node n1 not found",
    )


@pytest.mark.parametrize(
    ("signal", "payload", "detail"),
    [
        pytest.param(
            "command_issued",
            {"action": "AbortJob", "command": "a-abortjob-x", "reason": "ops"},
            "command_issued: AbortJob (Command a-abortjob-x): ops",
            id="command",
        ),
        pytest.param(
            "pods_changed",
            {"pods": [{"name": f"p{i}", "phase": "Failed", "exitCode": 3} for i in range(5)]},
            "pods_changed: p0 Failed (exit 3), p1 Failed (exit 3), p2 Failed (exit 3) (+2 more)",
            id="many-pods",
        ),
        pytest.param(
            "pod_group_observed", {"name": "pg", "phase": "Inqueue"}, "pod_group_observed: Inqueue"
        ),
        pytest.param(
            "parent_state_changed",
            {"parent": "research", "state": "Closed"},
            "parent_state_changed: research Closed",
            id="queue-parent",
        ),
        pytest.param("job_deleted", {"uid": "u"}, "job_deleted", id="nothing-to-add"),
    ],
)
def test_signal_detail_names_what_it_carries(signal: str, payload: object, detail: str) -> None:
    event = _event(
        1,
        "WORKFLOW_EXECUTION_SIGNALED",
        {"signalName": signal, "input": {"payloads": [_payload(payload)]}},
    )
    assert _kinds(history.timeline([event])) == [("signal", detail)]


def test_workflow_task_failure_is_shown_with_its_first_line() -> None:
    event = _event(
        9,
        "WORKFLOW_TASK_FAILED",
        {
            "cause": "WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR",
            "failure": {"message": "[TMPRL1100] Nondeterminism error\nstack"},
        },
    )
    assert _kinds(history.timeline([event])) == [
        ("workflow task failed", "non deterministic error: [TMPRL1100] Nondeterminism error")
    ]


def test_payloads_that_are_not_plain_json_decode_to_nothing() -> None:
    assert history.decode(None) is None
    binary_null = {"metadata": {"encoding": base64.b64encode(b"binary/null").decode()}}
    assert history.decode(binary_null) is None
    assert history.decode({"metadata": {"encoding": "%%%"}, "data": "x"}) is None


async def test_encrypted_history_reads_like_the_plain_one() -> None:
    keys = codec.CodecKeys(active="k1", keys={"k1": b"k" * 32})
    cipher = codec.EncryptionCodec(keys)
    plain = _events()
    sealed = json.loads(json.dumps(plain))
    for event in sealed:
        summary = (event.get("userMetadata") or {}).get("summary")
        if summary:
            encoded = cipher.encode_sync([json_format.ParseDict(summary, Payload())])[0]
            summary.clear()
            summary.update(json_format.MessageToDict(encoded))
    assert _kinds(history.timeline(sealed)) != _kinds(history.timeline(plain))
    await remote._decode(sealed, cipher)
    assert _kinds(history.timeline(sealed)) == _kinds(history.timeline(plain))


def _marker(event_id: int, data: dict[str, Any], summary: str, **attributes: Any) -> dict[str, Any]:
    details = {"data": {"payloads": [_payload(data)]}}
    return _event(
        event_id,
        "MARKER_RECORDED",
        {"markerName": "core_local_activity", "details": details, **attributes},
        userMetadata={"summary": _payload(summary)},
    )


def test_local_activities_read_as_their_writes_and_patches_are_left_out() -> None:
    events = [
        _marker(1, {"activity_type": "write_job_status", "attempt": 1}, "write status Running"),
        _event(2, "MARKER_RECORDED", {"markerName": "core_patch", "details": {}}),
        _marker(
            3,
            {"activity_type": "record_event", "attempt": 3},
            "event Started: pods up",
            failure={"message": "403 Forbidden"},
        ),
    ]
    assert _kinds(history.timeline(events, run_id="run-1")) == [
        ("local activity", "write_job_status: write status Running"),
        (
            "local activity failed",
            "record_event: event Started: pods up; after 3 attempts; 403 Forbidden",
        ),
    ]


def _outcomes(*errors: str) -> dict[str, Any]:
    return {"payloads": [_payload({"outcomes": [{"error": e} for e in errors]})]}


def test_writes_done_together_read_as_their_steps_and_a_failed_one() -> None:
    """`apply_writes` completes whatever its steps came to: a failed step is read from its
    outcomes, by its place in the summary's list."""
    steps = "ensure PodGroup · create 1 pods (version 0) · write status Pending"
    done = {"activity_type": "apply_writes", "attempt": 1}

    def marker(event_id: int, result: dict[str, Any]) -> dict[str, Any]:
        event = _marker(event_id, done, steps)
        event["markerRecordedEventAttributes"]["details"]["result"] = result
        return event

    invalid = "Invalid: create pod test/one-worker-0: 422 Invalid: spec\nmore"
    events = [
        marker(1, _outcomes("", "", "")),
        marker(2, _outcomes("", invalid, "")),
        marker(3, _outcomes("", "NamespaceGone: namespace test is being terminated")),
    ]
    assert _kinds(history.timeline(events)) == [
        ("local activity", f"apply_writes: {steps}"),
        (
            "local activity failed",
            f"apply_writes: {steps}; "
            "step 2: Invalid: create pod test/one-worker-0: 422 Invalid: spec",
        ),
        (
            "local activity failed",
            f"apply_writes: {steps}; step 2: NamespaceGone: namespace test is being terminated",
        ),
    ]


def test_the_first_phase_given_with_the_start_reads_as_a_phase() -> None:
    """The forwarder sets a new job's first phase in its start request, which the workflow
    then need not upsert: the story still says Pending, once, at the first run's start."""
    given = {"searchAttributes": {"indexedFields": {"CalderaJobPhase": _payload("Pending")}}}
    first = {"workflowType": {"name": "JobWorkflow"}, **given}
    continued = {**first, "continuedExecutionRunId": "run-a"}
    assert _kinds(history.timeline([_event(1, "WORKFLOW_EXECUTION_STARTED", first)])) == [
        ("started", "JobWorkflow"),
        ("phase", "Pending"),
    ]
    assert _kinds(history.timeline([_event(1, "WORKFLOW_EXECUTION_STARTED", continued)])) == [
        ("started", "JobWorkflow, continued from run run-a"),
    ]

"""Every (phase, action) cell of Volcano's job state machine, written out literally.

Each row is one cell read from Volcano's `pkg/controllers/job/state/*.go` (ed72c7c): the
operation (SyncJob, KillJob of every pod, KillTarget of the event's task, pod or partition),
the retain set a KillJob keeps (None: delete every pod; Soft: keep Succeeded and Failed pods),
the status function (`to` a fixed phase, Volcano's pending / running / restarting closures,
`drain` into `target` once no pod is alive, `keep` for a nil closure), and whether
status.retryCount is incremented. No value below is computed from the product's table.
A SyncJob or KillTarget row has retain "None": Volcano's SyncJob and KillTarget take no retain
set (a targeted kill deletes its pods whatever their phase), so only KillJob rows use it.
Every row agrees with Volcano; none is marked "differs from Volcano".
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from controllers.job.transitions import FINISHED, JOB_ACTIONS, TRANSITIONS, rule_for
from models.bus import Action
from models.vcjob import JobPhase


def _row(
    phase: str,
    action: str,
    operation: str,
    retain: str,
    status: str,
    target: str | None,
    retry: bool,
) -> Any:
    """One literal cell; `target` None: the status function decides the phase itself."""
    expected = {
        "operation": operation,
        "retain": retain,
        "status": status,
        "target": target,
        "retry": retry,
    }
    return pytest.param(phase, action, expected, id=f"{phase}-{action}")


# fmt: off
CELLS = [
    # pending.go: Restart* kill and count a retry; Abort/Complete/Terminate kill softly;
    # everything else (default arm) syncs with the minAvailable check.
    _row("Pending", "RestartJob",       "KillJob",    "None", "to",      "Restarting",  True),
    _row("Pending", "RestartTask",      "KillTarget", "None", "to",      "Restarting",  True),
    _row("Pending", "RestartPod",       "KillTarget", "None", "to",      "Restarting",  True),
    _row("Pending", "RestartPartition", "KillTarget", "None", "to",      "Restarting",  True),
    _row("Pending", "AbortJob",         "KillJob",    "Soft", "to",      "Aborting",    False),
    _row("Pending", "CompleteJob",      "KillJob",    "Soft", "to",      "Completing",  False),
    _row("Pending", "TerminateJob",     "KillJob",    "Soft", "to",      "Terminating", False),
    _row("Pending", "ResumeJob",        "SyncJob",    "None", "pending", None,          False),
    _row("Pending", "SyncJob",          "SyncJob",    "None", "pending", None,          False),
    _row("Pending", "EnqueueJob",       "SyncJob",    "None", "pending", None,          False),
    # running.go: the same arms; the default arm syncs with the completion / gang-lost check.
    _row("Running", "RestartJob",       "KillJob",    "None", "to",      "Restarting",  True),
    _row("Running", "RestartTask",      "KillTarget", "None", "to",      "Restarting",  True),
    _row("Running", "RestartPod",       "KillTarget", "None", "to",      "Restarting",  True),
    _row("Running", "RestartPartition", "KillTarget", "None", "to",      "Restarting",  True),
    _row("Running", "AbortJob",         "KillJob",    "Soft", "to",      "Aborting",    False),
    _row("Running", "CompleteJob",      "KillJob",    "Soft", "to",      "Completing",  False),
    _row("Running", "TerminateJob",     "KillJob",    "Soft", "to",      "Terminating", False),
    _row("Running", "ResumeJob",        "SyncJob",    "None", "running", None,          False),
    _row("Running", "SyncJob",          "SyncJob",    "None", "running", None,          False),
    _row("Running", "EnqueueJob",       "SyncJob",    "None", "running", None,          False),
    # restarting.go: SyncJob syncs, Restart{Task,Pod,Partition} kill the target, the default
    # arm kills every pod (PodRetainPhaseNone); all use restartingUpdateStatus, no retry++.
    _row("Restarting", "RestartJob",       "KillJob",    "None", "restarting", None, False),
    _row("Restarting", "RestartTask",      "KillTarget", "None", "restarting", None, False),
    _row("Restarting", "RestartPod",       "KillTarget", "None", "restarting", None, False),
    _row("Restarting", "RestartPartition", "KillTarget", "None", "restarting", None, False),
    _row("Restarting", "AbortJob",         "KillJob",    "None", "restarting", None, False),
    _row("Restarting", "CompleteJob",      "KillJob",    "None", "restarting", None, False),
    _row("Restarting", "TerminateJob",     "KillJob",    "None", "restarting", None, False),
    _row("Restarting", "ResumeJob",        "KillJob",    "None", "restarting", None, False),
    _row("Restarting", "SyncJob",          "SyncJob",    "None", "restarting", None, False),
    _row("Restarting", "EnqueueJob",       "KillJob",    "None", "restarting", None, False),
    # aborting.go: ResumeJob restarts (retry++); anything else kills softly until drained.
    _row("Aborting", "RestartJob",       "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "RestartTask",      "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "RestartPod",       "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "RestartPartition", "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "AbortJob",         "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "CompleteJob",      "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "TerminateJob",     "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "ResumeJob",        "KillJob", "Soft", "to",    "Restarting", True),
    _row("Aborting", "SyncJob",          "KillJob", "Soft", "drain", "Aborted",    False),
    _row("Aborting", "EnqueueJob",       "KillJob", "Soft", "drain", "Aborted",    False),
    # aborted.go: ResumeJob restarts (retry++); anything else kills softly with a nil closure.
    _row("Aborted", "RestartJob",       "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "RestartTask",      "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "RestartPod",       "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "RestartPartition", "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "AbortJob",         "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "CompleteJob",      "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "TerminateJob",     "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "ResumeJob",        "KillJob", "Soft", "to",   "Restarting", True),
    _row("Aborted", "SyncJob",          "KillJob", "Soft", "keep", None,         False),
    _row("Aborted", "EnqueueJob",       "KillJob", "Soft", "keep", None,         False),
    # completing.go: one arm for every action, soft kill until drained into Completed.
    _row("Completing", "RestartJob",       "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "RestartTask",      "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "RestartPod",       "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "RestartPartition", "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "AbortJob",         "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "CompleteJob",      "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "TerminateJob",     "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "ResumeJob",        "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "SyncJob",          "KillJob", "Soft", "drain", "Completed", False),
    _row("Completing", "EnqueueJob",       "KillJob", "Soft", "drain", "Completed", False),
    # terminating.go: one arm for every action, soft kill until drained into Terminated.
    _row("Terminating", "RestartJob",       "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "RestartTask",      "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "RestartPod",       "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "RestartPartition", "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "AbortJob",         "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "CompleteJob",      "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "TerminateJob",     "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "ResumeJob",        "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "SyncJob",          "KillJob", "Soft", "drain", "Terminated", False),
    _row("Terminating", "EnqueueJob",       "KillJob", "Soft", "drain", "Terminated", False),
    # finished.go (Completed, Failed, Terminated): always a soft kill, nil closure.
    _row("Completed", "RestartJob",       "KillJob", "Soft", "keep", None, False),
    _row("Completed", "RestartTask",      "KillJob", "Soft", "keep", None, False),
    _row("Completed", "RestartPod",       "KillJob", "Soft", "keep", None, False),
    _row("Completed", "RestartPartition", "KillJob", "Soft", "keep", None, False),
    _row("Completed", "AbortJob",         "KillJob", "Soft", "keep", None, False),
    _row("Completed", "CompleteJob",      "KillJob", "Soft", "keep", None, False),
    _row("Completed", "TerminateJob",     "KillJob", "Soft", "keep", None, False),
    _row("Completed", "ResumeJob",        "KillJob", "Soft", "keep", None, False),
    _row("Completed", "SyncJob",          "KillJob", "Soft", "keep", None, False),
    _row("Completed", "EnqueueJob",       "KillJob", "Soft", "keep", None, False),
    _row("Failed", "RestartJob",       "KillJob", "Soft", "keep", None, False),
    _row("Failed", "RestartTask",      "KillJob", "Soft", "keep", None, False),
    _row("Failed", "RestartPod",       "KillJob", "Soft", "keep", None, False),
    _row("Failed", "RestartPartition", "KillJob", "Soft", "keep", None, False),
    _row("Failed", "AbortJob",         "KillJob", "Soft", "keep", None, False),
    _row("Failed", "CompleteJob",      "KillJob", "Soft", "keep", None, False),
    _row("Failed", "TerminateJob",     "KillJob", "Soft", "keep", None, False),
    _row("Failed", "ResumeJob",        "KillJob", "Soft", "keep", None, False),
    _row("Failed", "SyncJob",          "KillJob", "Soft", "keep", None, False),
    _row("Failed", "EnqueueJob",       "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "RestartJob",       "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "RestartTask",      "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "RestartPod",       "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "RestartPartition", "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "AbortJob",         "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "CompleteJob",      "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "TerminateJob",     "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "ResumeJob",        "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "SyncJob",          "KillJob", "Soft", "keep", None, False),
    _row("Terminated", "EnqueueJob",       "KillJob", "Soft", "keep", None, False),
]
# fmt: on

PENDING_CELLS = [c for c in CELLS if c.values[0] == "Pending"]


@pytest.mark.parametrize(("phase", "action", "expected"), CELLS)
def test_cell(phase: str, action: str, expected: dict[str, object]) -> None:
    rule = TRANSITIONS[(JobPhase(phase), Action(action))]
    assert rule.model_dump(mode="json") == expected


def test_job_actions_are_the_ten_job_bus_actions() -> None:
    assert [str(a) for a in JOB_ACTIONS] == [
        "AbortJob",
        "RestartJob",
        "RestartTask",
        "RestartPod",
        "RestartPartition",
        "TerminateJob",
        "CompleteJob",
        "ResumeJob",
        "SyncJob",
        "EnqueueJob",
    ]


def test_every_product_cell_has_exactly_one_literal_row() -> None:
    rows = [(JobPhase(c.values[0]), Action(c.values[1])) for c in CELLS]
    assert len(rows) == len(set(rows)), "a cell is written twice"
    assert set(rows) == set(TRANSITIONS)
    assert set(TRANSITIONS) == set(itertools.product(JobPhase, JOB_ACTIONS))


@pytest.mark.parametrize(("phase", "action", "expected"), PENDING_CELLS)
def test_never_initiated_job_behaves_as_pending(
    phase: str, action: str, expected: dict[str, object]
) -> None:
    """factory.go NewState: a phase Volcano does not know ("") falls back to pendingState."""
    assert rule_for(None, Action(action)).model_dump(mode="json") == expected


def test_finished_phases_are_completed_failed_terminated() -> None:
    """finished.go serves these three; Aborted is resumable, so it is not finished."""
    assert {str(p) for p in FINISHED} == {"Completed", "Failed", "Terminated"}

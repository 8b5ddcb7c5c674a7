"""Local activities retried through `activity_call.run`: each retry gets its own start-to-close,
and a worker shut down after them leaves no timer behind to panic the SDK's core later."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PANIC = "panicked at"


def test_retried_local_activities_leave_no_timer_armed_past_the_workers_shutdown() -> None:
    # In a process of its own: the core's panic is printed to stderr by one of its threads,
    # and the process goes on (exit status 0), so stderr is the only place it shows.
    done = subprocess.run(
        [sys.executable, "-c", "from tests.workflows.retried_local import main; main()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    panics = [line for line in done.stderr.splitlines() if PANIC in line]
    assert not panics, done.stderr[-4000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    # The slow activity's second attempt ran its own 2 s, not what its first attempt's timer
    # had left (0.5 s), so it needed no third.
    assert outcome == {"ended": "quick", "attempts": {"slow": [1, 2], "quick": [1, 2]}}, outcome

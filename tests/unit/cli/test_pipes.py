"""`caldera ... | head -1`: a reader that stops early ends the command quietly, with the exit
status the shell reports for `cat` in its place (141), never a BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import PIPE_CLOSED

pytestmark = pytest.mark.unit


def _dev_status(tmp_path: Path, stdout: int) -> subprocess.CompletedProcess[str]:
    """`caldera dev status` on an empty dev directory: one line, "down"."""
    env = {**os.environ, "CALDERA_DEV_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "dev", "status"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_reader_that_closed_early_gets_no_traceback(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written, as after `head -1`
    try:
        done = _dev_status(tmp_path, write)
    finally:
        os.close(write)
    assert done.stderr == ""  # neither a traceback nor "Exception ignored ... BrokenPipeError"
    assert done.returncode == PIPE_CLOSED == 128 + 13


def test_a_reader_that_reads_everything_sees_the_commands_own_status(tmp_path: Path) -> None:
    done = _dev_status(tmp_path, subprocess.PIPE)
    assert (done.stdout, done.stderr, done.returncode) == ("down\n", "", 3)

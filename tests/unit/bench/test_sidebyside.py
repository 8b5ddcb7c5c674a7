"""The side-by-side benchmark's pure parts: which sides a run may ask for, what each side
submits, and the CPU a process and its children spent."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.sidebyside import config, workload
from bench.sidebyside import stack as stacks


def test_the_server_side_is_asked_for_by_name_and_not_run_by_default() -> None:
    opts = config.parse(["--sides", "builtin,caldera,caldera-server", "--out", "/tmp/x"])
    assert opts.sides == ("builtin", "caldera", "caldera-server")
    assert config.SERVER_SIDE not in config.parse(["--out", "/tmp/x"]).sides
    with pytest.raises(SystemExit):
        config.parse(["--sides", "caldera-postgres"])


def test_the_server_side_submits_the_caldera_sides_volcano_jobs() -> None:
    (plan,) = workload.plan("gangs", 1, 3)
    assert workload.manifest("caldera-server", plan, "ns") == workload.manifest(
        "caldera", plan, "ns"
    )


def test_a_processes_cpu_counts_what_its_children_spent() -> None:
    busy = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    wait = f"import subprocess,sys; subprocess.run([sys.executable, '-c', {busy!r}]); input()"
    parent = subprocess.Popen([sys.executable, "-c", wait], stdin=subprocess.PIPE, text=True)
    try:
        deadline = 600  # a minute: the child may get little of a busy machine
        while deadline and (stacks.cpu_seconds(parent.pid) or 0) < 0.5:
            os.sched_yield()
            subprocess.run(["sleep", "0.1"], check=True)
            deadline -= 1
        assert (stacks.cpu_seconds(parent.pid) or 0) >= 0.5  # the child's half second
    finally:
        parent.communicate("\n", timeout=10)

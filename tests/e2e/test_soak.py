"""The chaos soak, short: two and a half minutes of the mixed workload while workers,
forwarders, the Temporal server and the apiserver are killed and restarted, pods evicted and a
node removed, on a stack of its own. Every invariant holds: no duplicate pod, no lost timer, no
stuck job, no gang partly bound, queues agree with pods, no failed workflow task.

The ten-minute soaks (one and two workers) are run by hand: `python -m bench.chaos`.
"""

from __future__ import annotations

from pathlib import Path

from bench.chaos import config, run


def test_a_short_soak_under_repeated_faults_keeps_every_invariant(tmp_path: Path) -> None:
    opts = config.Options(minutes=2.5, wave_every=30, nodes=4, out=tmp_path / "soak")
    result = run.run(opts)
    run.write(result, opts)
    assert sum(result.faults_by_kind.values()) >= 10, result.faults_by_kind
    assert sum(result.jobs_by_kind.values()) >= 40, result.jobs_by_kind
    broken = {name: result.violations.get(name, []) for name, n in result.invariants.items() if n}
    assert not broken, f"{broken} (report: {opts.out / 'report.md'})"

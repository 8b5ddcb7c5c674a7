"""Where a benchmark run writes its report: outside the repository, one folder per run.

`$CALDERA_RESULTS/<tool>/<name>-<time>` when `CALDERA_RESULTS` is set, else
`~/.cache/caldera/results/<tool>/<name>-<time>`, where `CALDERA_CACHE` moves `~/.cache/caldera`
as it does for `caldera dev up` (`cli/devstack/stack.py`) and `deploy/devcluster/build.sh`.
Every command's `--out` overrides it. Runs are not kept in git: a result folder per development
stage grew to most of the repository's pack. The figures worth keeping are copied by hand into
`bench/FIGURES.md`. `CALDERA_RESULTS=results` keeps runs in the checkout, in the git-ignored
`results/` folder.

Read when the options are parsed (a benchmark is a command, not workflow code).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cli.devstack import stack


def root() -> Path:
    """The folder every tool's runs go under."""
    results = os.environ.get("CALDERA_RESULTS")
    if results:
        return Path(results)
    return stack.CACHE / "results"


def run_dir(tool: str, name: str) -> Path:
    """`<root>/<tool>/<name>-<local time>`: a fresh folder per run, so no run overwrites one
    before it."""
    return root() / tool / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"

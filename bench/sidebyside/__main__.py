"""`python -m bench.sidebyside --shape singles --jobs 1000 [--sides ...]`: see README.md."""

from __future__ import annotations

import signal
import sys

from bench.sidebyside import config, report, runner


def main(argv: list[str] | None = None) -> int:
    # SIGTERM unwinds like Ctrl-C, so every process the run started is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    opts = config.parse(argv)
    result = runner.run(opts)
    text = report.write(result, opts.out)
    print(text)
    print(f"\nreport: {opts.out / 'report.md'}", flush=True)
    failed = any("error" in s for s in result["sides"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m bench.dispatch --jobs 50 --workers 2`: see README.md."""

from __future__ import annotations

import signal
import sys

from bench.dispatch import config, report, run


def main(argv: list[str] | None = None) -> int:
    # SIGTERM unwinds like Ctrl-C, so every process the run started is stopped by its PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    opts = config.parse(argv)
    result = run.run(opts)
    text = report.write(result, opts.out)
    print(text)
    print(f"\nreport: {opts.out / 'report.md'}", flush=True)
    return 1 if report.failed(result) else 0


if __name__ == "__main__":
    sys.exit(main())

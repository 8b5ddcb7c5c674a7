"""`python -m bench.chaos`: one soak on its own stack; exits 1 when an invariant broke."""

from __future__ import annotations

import signal
import sys

from bench.chaos import config, run


def main(argv: list[str] | None = None) -> int:
    # SIGTERM and SIGINT (ignored in a shell's background jobs) unwind: the stack is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    opts = config.parse(argv)
    result = run.run(opts)
    run.write(result, opts)
    print(f"report: {opts.out / 'report.md'}")
    return 0 if result.clean else 1


if __name__ == "__main__":
    sys.exit(main())

"""`python -m forwarder`: the same process as `caldera forwarder`, for images without the CLI."""

from __future__ import annotations

import argparse
import sys

from forwarder import main


def _main() -> int:
    p = argparse.ArgumentParser(prog="python -m forwarder", description=main.__doc__)
    main.add_arguments(p)
    args = p.parse_args()
    return main.serve(main.options_from(args), args.log_level)


if __name__ == "__main__":
    sys.exit(_main())

"""The `caldera` command: dev stack and CRD generation (job and queue commands follow)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cli import crds
from cli.devstack import processes, stack, temporal
from cli.devstack.controlplane import REPO
from cli.devstack.nodes import NodeTemplate
from forwarder import main as forwarder_main


def _dev_up(args: argparse.Namespace) -> int:
    template = NodeTemplate(
        count=args.nodes, cpu=args.node_cpu, memory=args.node_memory, pods=args.node_pods
    )
    try:
        current, started = stack.up(template, args.temporal_port, args.ui_port, args.sample)
    except processes.StartupError as e:
        print(f"caldera dev up: {e}", file=sys.stderr)
        return 1
    print("started" if started else "already running")
    print(current.summary())
    if args.sample:
        print(f"sample job:   kubectl get vcjob sample   history: {stack.sample_url(current)}")
    return 0


def _dev_down(args: argparse.Namespace) -> int:
    stopped = stack.down()
    if stopped is None:
        print("nothing recorded: the dev stack is not up")
    else:
        print("stopped " + ", ".join(f"{p.name} ({p.pid})" for p in stopped.processes))
    return 0


def _dev_status(args: argparse.Namespace) -> int:
    current = stack.load()
    if current is None:
        print("down")
        return 3
    state = "up" if current.healthy() else "degraded (run `caldera dev up` to restart)"
    print(state)
    for p in current.processes:
        print(f"  {p.name:<24} pid {p.pid:<8} {'alive' if processes.alive(p.pid) else 'DEAD'}")
    print(current.summary().splitlines()[0])
    return 0 if current.healthy() else 1


def _crds(args: argparse.Namespace) -> int:
    for path in crds.write(Path(args.out)):
        print(path)
    return 0


def _forwarder(args: argparse.Namespace) -> int:
    return forwarder_main.serve(forwarder_main.options_from(args), args.log_level)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="caldera", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="the embedded dev stack").add_subparsers(
        dest="dev_command", required=True
    )
    up = dev.add_parser("up", help="start (or reuse) Temporal + the local control plane")
    up.add_argument("--nodes", type=int, default=4, help="fake nodes (default 4)")
    up.add_argument("--node-cpu", default="32")
    up.add_argument("--node-memory", default="256Gi")
    up.add_argument("--node-pods", type=int, default=110)
    up.add_argument("--temporal-port", type=int, default=temporal.DEFAULT_PORT)
    up.add_argument("--ui-port", type=int, default=temporal.DEFAULT_UI_PORT)
    up.add_argument(
        "--no-sample", dest="sample", action="store_false", help="do not submit the sample job"
    )
    up.set_defaults(fn=_dev_up)
    dev.add_parser("down", help="stop exactly what `up` started").set_defaults(fn=_dev_down)
    dev.add_parser("status", help="is the stack up?").set_defaults(fn=_dev_status)

    gen = sub.add_parser("crds", help="write the CRDs generated from the models")
    gen.add_argument("--out", default=str(REPO / "deploy" / "crds"))
    gen.set_defaults(fn=_crds)

    fwd = sub.add_parser("forwarder", help="watch Kubernetes, signal the Job workflows")
    forwarder_main.add_arguments(fwd)
    fwd.set_defaults(fn=_forwarder)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.fn(args)
    return code


if __name__ == "__main__":
    sys.exit(main())

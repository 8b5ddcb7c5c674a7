"""The `caldera` command: dev stack, CRD generation, controllers, and vcctl's commands (job,
queue, jobflow, jobtemplate, pod)."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from admission import lookup as admission_lookup
from admission import server as admission_server
from cli import clients, clusters, crds, flows, jobs, pods, queues, reference
from cli.devstack import clusters as dev_clusters
from cli.devstack import devices, processes, stack, temporal_dev, webhook
from cli.devstack.controlplane import REPO
from cli.devstack.nodes import NodeTemplate
from forwarder import main as forwarder_main
from service import codec_server

PIPE_CLOSED: Final = 141  # 128 + SIGPIPE: what the shell reports for `cat` in the same place


def _dev_up(args: argparse.Namespace) -> int:
    template = NodeTemplate(
        count=args.nodes,
        cpu=args.node_cpu,
        memory=args.node_memory,
        pods=args.node_pods,
        gpus=devices.Gpus(count=args.gpus_per_node, model=args.gpu_model),
    )
    try:
        current, started = stack.up(
            template, args.temporal_port, args.ui_port, args.sample, args.temporal, args.clusters
        )
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
        print("stopped " + ", ".join(f"{name} ({p.pid})" for name, p in stopped.labelled()))
    return 0


def _dev_status(args: argparse.Namespace) -> int:
    current = stack.load()
    if current is None:
        print("down")
        return 3
    state = "up" if current.healthy() else "degraded (run `caldera dev up` to restart)"
    print(state)
    width = current.name_width()
    for name, p in current.labelled():
        print(f"  {name:<{width}} pid {p.pid:<8} {'alive' if processes.alive(p.pid) else 'DEAD'}")
    print(current.summary().splitlines()[0])
    for line in current.metrics_lines():
        print(line)
    return 0 if current.healthy() else 1


def _crds(args: argparse.Namespace) -> int:
    for path in crds.write(Path(args.out)):
        print(path)
    return 0


def _docs(args: argparse.Namespace) -> int:
    sys.stdout.write(reference.rbac_page())
    return 0


def _forwarder(args: argparse.Namespace) -> int:
    return forwarder_main.serve(forwarder_main.options_from(args), args.log_level)


def _webhook(args: argparse.Namespace) -> int:
    options = admission_server.options_from(args)
    on_stop = None
    if args.withdraw_on_exit:
        url = f"https://{options.bind}:{options.port}{webhook.PATH}"
        on_stop = functools.partial(_withdraw, options.kubeconfig, url)
    return admission_server.serve(options, args.log_level, on_stop)


def _codec_server(args: argparse.Namespace) -> int:
    return codec_server.serve(codec_server.options_from(args), args.log_level)


def _withdraw(kubeconfig: str | None, url: str) -> None:
    """A stopped webhook must not stay registered: `failurePolicy: Fail` would refuse writes."""
    withdrawn = webhook.withdraw(admission_lookup.new_api(kubeconfig), url)
    logging.getLogger("caldera.webhook").info(
        "registration %s name=%s url=%s", "withdrawn" if withdrawn else "kept", webhook.NAME, url
    )


def _gpu_count(text: str) -> int:
    """Refused by argparse, before anything starts, rather than by the apiserver after."""
    count = int(text)
    if not 0 <= count <= devices.MAX_DEVICES:
        raise argparse.ArgumentTypeError(f"{count} is not within 0..{devices.MAX_DEVICES}")
    return count


def _cluster_count(text: str) -> int:
    count = int(text)
    if not 0 <= count <= dev_clusters.MAX_CLUSTERS:
        raise argparse.ArgumentTypeError(f"{count} is not within 0..{dev_clusters.MAX_CLUSTERS}")
    return count


def _gpu_model(text: str) -> str:
    if not 0 < len(text) <= devices.MAX_STRING_ATTRIBUTE:
        raise argparse.ArgumentTypeError(
            f"needs 1 to {devices.MAX_STRING_ATTRIBUTE} characters, not {len(text)}"
        )
    return text


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
    up.add_argument(
        "--gpus-per-node",
        type=_gpu_count,
        default=devices.DEFAULT_COUNT,
        metavar="N",
        help=f"fake {devices.DRIVER} DRA devices in each node's ResourceSlice"
        f" (default {devices.DEFAULT_COUNT}; 0: none)",
    )
    up.add_argument(
        "--gpu-model",
        type=_gpu_model,
        default=devices.DEFAULT_MODEL,
        metavar="TEXT",
        help=f"the devices' `model` attribute (default {devices.DEFAULT_MODEL})",
    )
    up.add_argument("--temporal-port", type=int, default=temporal_dev.DEFAULT_PORT)
    up.add_argument("--ui-port", type=int, default=temporal_dev.DEFAULT_UI_PORT)
    up.add_argument(
        "--temporal",
        choices=("dev", "server"),
        default="dev",
        help="dev: the dev server on SQLite (default); server: the Temporal server on PostgreSQL",
    )
    up.add_argument(
        "--clusters",
        type=_cluster_count,
        default=0,
        metavar="N",
        help="worker clusters beside this one, each with its own control plane, Caldera worker"
        " and forwarder and Temporal namespace, registered here; the sample job goes to their"
        f" queue `{dev_clusters.QUEUE}` (default 0)",
    )
    up.add_argument(
        "--no-sample", dest="sample", action="store_false", help="do not submit the sample job"
    )
    up.set_defaults(fn=_dev_up)
    dev.add_parser("down", help="stop exactly what `up` started").set_defaults(fn=_dev_down)
    dev.add_parser("status", help="is the stack up?").set_defaults(fn=_dev_status)

    gen = sub.add_parser("crds", help="write the CRDs generated from the models")
    gen.add_argument("--out", default=str(REPO / "deploy" / "crds"))
    gen.set_defaults(fn=_crds)

    docs = sub.add_parser("docs", help="print a reference page generated from deploy/")
    docs.add_argument("page", choices=("rbac",), help=f"rbac: `{reference.COMMAND}`")
    docs.set_defaults(fn=_docs)

    fwd = sub.add_parser("forwarder", help="watch Kubernetes, signal the Job workflows")
    forwarder_main.add_arguments(fwd)
    fwd.set_defaults(fn=_forwarder)

    hook = sub.add_parser(
        "webhook", help="validating admission webhook: queues exist, are Open, form a tree"
    )
    admission_server.add_arguments(hook)
    hook.add_argument(
        "--withdraw-on-exit",
        action="store_true",
        help=f"dev stack: delete the {webhook.NAME} registration that calls this process on stop",
    )
    hook.set_defaults(fn=_webhook)

    codec = sub.add_parser(
        "codec-server", help="decrypt payloads for the Temporal UI and CLI ($CALDERA_CODEC_KEY)"
    )
    codec_server.add_arguments(codec)
    codec.set_defaults(fn=_codec_server)

    jobs.add_parser(sub)
    queues.add_parser(sub)
    flows.add_parsers(sub)
    pods.add_parser(sub)
    clusters.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        code: int = args.fn(args)
        sys.stdout.flush()  # a reader gone shows here, not as "Exception ignored" at exit
    except BrokenPipeError:
        code = _reader_gone()
    return clients.finish(code)


def _reader_gone() -> int:
    """The reader closed the pipe (`caldera dev status | head -1`): stop quietly, as `cat` does.

    Unix tools die of SIGPIPE, which the shell reports as 141 (128 + 13), so a pipeline under
    `set -o pipefail` sees caldera as it sees `cat`, and 0 would claim every line was read.
    Python ignores SIGPIPE (the Temporal and apiserver sockets must not kill the process), so
    the write fails instead; stdout is pointed at /dev/null so that flushing what is left
    (at exit, or in `clients.finish`) does not fail again.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return PIPE_CLOSED


if __name__ == "__main__":
    sys.exit(main())

"""`caldera cluster list`: the worker clusters registered on this cluster, each probed now.

A worker cluster is a Secret labelled `caldera.dev/cluster` (see `models/dispatch.py`); the
probe is the worker's (`activities/dispatch/clusters.py`), run from where the command runs, so a
cluster the worker reaches through a network this machine is not on reads as unreachable here while
the worker's `caldera_cluster_reachable` says 1. The table shows free/allocatable CPU (cores) and
memory; `-o json|yaml` gives each probe whole (every resource, the probe's time).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Final

from activities.dispatch import cluster_secrets, clusters
from cli import output, verbs
from cli.clients import Connections, add_arguments, guarded
from models.dispatch import CLUSTER_LABEL, ClusterStatus
from models.quantity import parse_quantity

LIST_HEADERS: Final = ("NAME", "REACHABLE", "DRAINED", "NODES", "CPU", "MEMORY", "ERROR")
_BINARY: Final = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _number(value: Fraction) -> str:
    """At most one decimal, none when whole: 31.5, 32."""
    rounded = round(float(value), 1)
    return str(int(rounded)) if rounded == int(rounded) else f"{rounded:.1f}"


def cores(quantity: str | None) -> str:
    return "-" if quantity is None else _number(parse_quantity(quantity))


def memory(quantity: str | None) -> str:
    """Bytes in the largest binary unit that keeps a whole part: 256Gi, 1.5Mi, 512."""
    if quantity is None:
        return "-"
    value = parse_quantity(quantity)
    for suffix, size in _BINARY:
        if value >= size:
            return f"{_number(value / size)}{suffix}"
    return _number(value)


def pair(free: Mapping[str, str], allocatable: Mapping[str, str], resource: str) -> str:
    """`free/allocatable` of one resource; `-` when the probe did not get that far."""
    if resource not in allocatable:
        return "-"
    show = cores if resource == "cpu" else memory
    return f"{show(free.get(resource, '0'))}/{show(allocatable[resource])}"


def list_row(status: ClusterStatus) -> list[object]:
    return [
        status.name,
        "yes" if status.reachable else "no",
        "yes" if status.drained else "no",
        status.nodes if status.reachable else "-",
        pair(status.free, status.allocatable, "cpu"),
        pair(status.free, status.allocatable, "memory"),
        status.error or None,
    ]


def show(statuses: Sequence[ClusterStatus], fmt: output.Format, where: str) -> int:
    if fmt is not output.Format.TABLE:
        print(output.dump([s.model_dump(mode="json") for s in statuses], fmt))
        return 0
    empty = f"no worker clusters: no Secret labelled {CLUSTER_LABEL} in {where}"
    return verbs.show_list(LIST_HEADERS, [list_row(s) for s in statuses], fmt, empty)


def add_parser(sub: verbs.Verbs) -> None:
    common = argparse.ArgumentParser(add_help=False)
    add_arguments(common)
    common.add_argument(
        "--cluster-namespace",
        default=os.environ.get(cluster_secrets.ENV_NAMESPACE) or None,
        help=f"where the clusters' Secrets are (${cluster_secrets.ENV_NAMESPACE}, "
        f"default {cluster_secrets.namespace()})",
    )
    parser = sub.add_parser("cluster", help="worker clusters registered here: list")
    choices = parser.add_subparsers(dest="cluster_command", required=True)
    ls = choices.add_parser(
        "list", parents=[common], help="each worker cluster probed: reachable, nodes, room"
    )
    output.add_argument(ls)
    ls.set_defaults(fn=guarded(_list))


def _list(args: argparse.Namespace) -> int:
    conn = Connections(args)
    where = args.cluster_namespace or cluster_secrets.namespace()
    with conn.kube_call(f"list the cluster Secrets in {where}"):
        statuses = clusters.probe_all(conn.api, where)
    return show(statuses, args.output, where)

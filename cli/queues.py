"""`caldera queue ...`: Volcano Queues from the terminal, modelled on `vcctl queue`.

Queues are created, listed, updated and deleted on the apiserver; `open` and `close` go to the
queue's workflow as its validated `open`/`close` updates (or, with `--via-command`, as an
OpenQueue/CloseQueue Command CR like `vcctl queue operate`). `update` is vcctl's `queue operate
-a update` (which sets the weight only), with the other shares Caldera's scheduler reads; the
workflow and the scheduler see the new spec as they see any edit. `get` adds what only the
workflow knows: which children it closed, whether an open waits for the parent.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any, Final

from cli import output, remote, verbs, waiting
from cli.apiserver import QUEUES, Resources
from cli.clients import CliError, Connections, add_arguments, guarded
from models import keys, scheduling
from models.bus import Action
from models.signals import queue as queue_signals

LIST_HEADERS: Final = (
    "NAME",
    "STATE",
    "WEIGHT",
    "PARENT",
    "PENDING",
    "INQUEUE",
    "RUNNING",
    "UNKNOWN",
    "COMPLETED",
    "AGE",
)
COUNTS: Final = ("pending", "inqueue", "running", "unknown", "completed")
ACTIONS: Final = {"open": Action.OPEN_QUEUE, "close": Action.CLOSE_QUEUE}
COMMAND_NAMESPACE: Final = "default"  # Commands are namespaced, Queues are not (vcctl's choice)
MAX_WEIGHT: Final = 65535  # the CRD's bound
# `update`'s flags, each the spec field it sets whole (a resource list replaces the old one).
UPDATED: Final = ("weight", "capability", "deserved", "guarantee", "reclaimable")


def resource_list(text: str) -> dict[str, str]:
    """`cpu=8,memory=32Gi` → {"cpu": "8", "memory": "32Gi"} (quantities stay strings)."""
    found: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, quantity = part.partition("=")
        if not sep or not name.strip() or not quantity.strip():
            raise argparse.ArgumentTypeError(f"{part!r} is not resource=quantity")
        found[name.strip()] = quantity.strip()
    if not found:
        raise argparse.ArgumentTypeError("no resource=quantity given")
    return found


def queue_weight(text: str) -> int:
    """A queue weight: a whole number from 1 (vcctl: "greater than 0") to the CRD's bound."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= MAX_WEIGHT:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and {MAX_WEIGHT}")
    return value


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"{text!r} is not true or false")
    return text.lower() == "true"


def update_operations(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The JSON Patch `update` sends: one `add` (set whole) per flag given, none for the rest."""
    operations = []
    for field in UPDATED:
        value = getattr(args, field)
        if value is None:
            continue
        if field == "guarantee":
            value = {"resource": value}
        operations.append({"op": "add", "path": f"/spec/{field}", "value": value})
    return operations


def changes(before: dict[str, Any], after: dict[str, Any], operations: list[dict[str, Any]]) -> str:
    """`weight 1 → 4, capability - → cpu=8`: each field the patch set, in the flags' order."""
    old, new = before.get("spec") or {}, after.get("spec") or {}
    parts = []
    for op in operations:
        field = op["path"].removeprefix("/spec/")
        parts.append(f"{field} {_shown(field, old)} → {_shown(field, new)}")
    return ", ".join(parts)


def _shown(field: str, spec: dict[str, Any]) -> str:
    value = spec.get(field)
    if field == "guarantee":
        value = (value or {}).get("resource")
    if field == "weight" and value is None:
        value = 1
    if field == "reclaimable" and value is None:
        value = True
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, bool):
        return str(value).lower()
    return "-" if value is None else str(value)


def manifest(name: str, weight: int, parent: str | None, capability: dict[str, str] | None) -> Any:
    """The Queue `create` submits; parent None: the controller hangs it under root."""
    spec: dict[str, Any] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    if capability:
        spec["capability"] = capability
    return {
        "apiVersion": scheduling.API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def list_row(queue: dict[str, Any], now: datetime) -> list[object]:
    meta = queue.get("metadata") or {}
    spec = queue.get("spec") or {}
    status = queue.get("status") or {}
    return [
        meta.get("name", ""),
        status.get("state"),
        spec.get("weight", 1),
        spec.get("parent"),
        *(status.get(k, 0) for k in COUNTS),
        output.age(meta.get("creationTimestamp"), now),
    ]


def summary(
    queue: dict[str, Any], view: queue_signals.QueueView | str, url: str, now: datetime
) -> dict[str, Any]:
    """view: the workflow's status query answer, or why it could not be had."""
    meta = queue.get("metadata") or {}
    spec = queue.get("spec") or {}
    status = queue.get("status") or {}
    workflow: dict[str, Any] = {"id": keys.queue_workflow_id(str(meta.get("name", "")))}
    if isinstance(view, str):
        workflow["error"] = view
    else:
        workflow |= {
            "state": view.state,
            "closed_by_parent": view.closed_by_parent,
            "open_waiting_for_parent": view.open_waiting_for_parent,
            "pod_groups": view.pod_groups,
            "children": view.children,
        }
    return {
        "name": meta.get("name", ""),
        "state": status.get("state"),
        "weight": spec.get("weight", 1),
        "parent": spec.get("parent"),
        "capability": spec.get("capability"),
        "reclaimable": spec.get("reclaimable", True),
        "counts": {k: status.get(k, 0) for k in COUNTS},
        "allocated": status.get("allocated"),
        "age": output.age(meta.get("creationTimestamp"), now),
        "workflow": workflow,
        "url": url,
    }


def render(s: dict[str, Any]) -> str:
    wf = s["workflow"]
    if "error" in wf:
        workflow = f"{wf['id']} ({wf['error']})"
    else:
        notes = [f"state {wf['state']}"]
        if wf["closed_by_parent"]:
            notes.append("closed by its parent")
        if wf["open_waiting_for_parent"]:
            notes.append("open waits for the parent")
        workflow = f"{wf['id']} ({', '.join(notes)})"
    pairs: list[tuple[str, object]] = [
        ("Queue", s["name"]),
        ("State", s["state"]),
        ("Weight", s["weight"]),
        ("Parent", s["parent"]),
        ("Capability", s["capability"]),
        ("Reclaimable", s["reclaimable"]),
        ("PodGroups", " ".join(f"{k}={v}" for k, v in s["counts"].items())),
        ("Allocated", s["allocated"]),
        ("Age", s["age"]),
        ("Workflow", workflow),
    ]
    if wf.get("children"):
        pairs.append(("Children", wf["children"]))
    return f"{output.fields(pairs)}\nHistory: {s['url']}"


async def _update(
    conn: Connections, wid: str, action: Action, args: argparse.Namespace, what: str
) -> str:
    cmd = queue_signals.QueueCommand(reason=args.reason)
    result = await remote.queue_command(conn, wid, action, cmd, what)
    return f"{result.action}: {result.state_before} → {result.state_after}"


def _summary(
    queue: dict[str, Any], wid: str, view: queue_signals.QueueView | str, url: str, now: datetime
) -> dict[str, Any]:
    return summary(queue, view, url, now)  # the workflow id follows from the queue's name


QUEUE: Final = verbs.Subject(
    kind=QUEUES,
    workflow_id=lambda namespace, name: keys.queue_workflow_id(name),
    namespace=lambda args, conn: "",  # Queues are cluster-scoped
    update=_update,
    query=remote.queue_view,
    summary=_summary,
    render=render,
    takes_message=False,
    command_namespace=COMMAND_NAMESPACE,
)


def add_parser(sub: verbs.Verbs) -> None:
    common = argparse.ArgumentParser(add_help=False)
    add_arguments(common)
    queues = sub.add_parser(
        "queue", help="Volcano Queues: create, list, get, update, open, close, pending"
    )
    choices = queues.add_subparsers(dest="queue_command", required=True)

    create = choices.add_parser("create", parents=[common], help="create a Queue")
    create.add_argument("name")
    create.add_argument("--weight", type=int, default=1)
    create.add_argument("--parent", default=None, help="parent queue (default: root)")
    create.add_argument(
        "--capability", type=resource_list, default=None, help="upper limit, e.g. cpu=8,memory=32Gi"
    )
    create.set_defaults(fn=guarded(_create))

    update = choices.add_parser(
        "update",
        parents=[common],
        help="set a Queue's weight, capability, deserved, guarantee, reclaimable",
    )
    update.add_argument("name")
    update.add_argument("-w", "--weight", type=queue_weight, default=None, help="1 to 65535")
    for flag, what in (
        ("capability", "upper limit"),
        ("deserved", "deserved share (capacity plugin)"),
        ("guarantee", "reserved resources"),
    ):
        update.add_argument(
            f"--{flag}",
            type=resource_list,
            default=None,
            help=f"{what}, e.g. cpu=8,memory=32Gi; replaces the whole list",
        )
    update.add_argument(
        "--reclaimable",
        type=boolean,
        default=None,
        metavar="{true,false}",
        help="may other queues reclaim what it holds beyond its share",
    )
    update.set_defaults(fn=guarded(_update_spec))

    ls = choices.add_parser("list", parents=[common], help="Queues with state and PodGroup counts")
    output.add_argument(ls)
    ls.set_defaults(fn=guarded(_list))

    verbs.add_verbs(choices, common, QUEUE, ("get", "one Queue, with its workflow's view"), ACTIONS)
    waiting.add_queue_pending(choices, common)


def _create(args: argparse.Namespace) -> int:
    conn = Connections(args)
    body = manifest(args.name, args.weight, args.parent, args.capability)
    Resources(conn).create(QUEUES, body)
    verbs.created(conn, QUEUES.ref(args.name, ""), keys.queue_workflow_id(args.name))
    return 0


def _update_spec(args: argparse.Namespace) -> int:
    operations = update_operations(args)
    if not operations:
        flags = ", ".join(f"--{flag}" for flag in UPDATED)
        raise CliError(f"queue update {args.name}: nothing to change; give one of {flags}")
    conn = Connections(args)
    resources = Resources(conn)
    before = resources.get(QUEUES, args.name)
    after = resources.patch(QUEUES, args.name, operations)
    print(f"{QUEUES.ref(args.name, '')} updated: {changes(before, after, operations)}")
    print(f"  history: {conn.url(keys.queue_workflow_id(args.name))}")
    return 0


def _list(args: argparse.Namespace) -> int:
    conn = Connections(args)
    queues = sorted(Resources(conn).list(QUEUES), key=lambda q: q["metadata"].get("name", ""))
    now = datetime.now(UTC)
    rows = [list_row(q, now) for q in queues]
    return verbs.show_list(LIST_HEADERS, rows, args.output, "no queues")

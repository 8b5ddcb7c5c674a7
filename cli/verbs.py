"""The verbs `caldera job` and `caldera queue` share, written once for any `Subject`.

Each subject names what differs: its resource, its workflow id, where its namespace comes from,
its update and its status query, and, when the object itself says which workflow drives it (a
Job dispatched to a worker cluster: its DispatchWorkflow), how to tell. The rest is the same
for both: an action goes to the workflow as a validated update (or, with `--via-command`, as a
Command CR the forwarder delivers later), and every command that names an object prints its
Temporal UI link.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeAlias, TypeVar

from cli import bus, output, remote
from cli.apiserver import COMMANDS, Kind, Obj, Resources
from cli.clients import CliError, Connections, guarded
from models.bus import Action

V = TypeVar("V")  # the workflow's status query answer
Verbs: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # a parser's verbs
# A workflow's status query: (conn, workflow id, what) → its answer.
Query: TypeAlias = Callable[[Connections, str, str], Coroutine[Any, Any, V]]

VIA_COMMAND_HELP = "create a bus.volcano.sh Command CR instead (not validated, not waited for)"


@dataclass(frozen=True)
class Subject(Generic[V]):
    """One kind of object the CLI commands, and how its workflow is reached."""

    kind: Kind
    workflow_id: Callable[[str, str], str]  # (namespace, name)
    namespace: Callable[[argparse.Namespace, Connections], str]  # "": cluster-scoped
    # (conn, workflow id, action, args, what) → "action: before → after"
    update: Callable[[Connections, str, Action, argparse.Namespace, str], Coroutine[Any, Any, str]]
    query: Query[V]
    # (object, workflow id, the query's answer or why there is none, url, now) → summary
    summary: Callable[[Obj, str, V | str, str, datetime], dict[str, Any]]
    render: Callable[[dict[str, Any]], str]
    takes_message: bool  # the update and the Command carry a --message too
    command_namespace: str | None  # default --command-namespace; None: the object's own
    # (conn, the object as read) → the workflow that drives it and the query it answers, when
    # that depends on the object; None: always `workflow_id`'s, asked with `query`
    owner: Callable[[Connections, Obj], tuple[str, Query[V]]] | None = None

    def ref(self, args: argparse.Namespace, namespace: str) -> str:
        return self.kind.ref(args.name, namespace)

    def driver(self, conn: Connections, obj: Obj, namespace: str) -> tuple[str, Query[V]]:
        """The workflow that drives `obj` (as read from the apiserver), and its status query."""
        if self.owner is not None:
            return self.owner(conn, obj)
        name = str((obj.get("metadata") or {}).get("name", ""))
        return self.workflow_id(namespace, name), self.query


def add_verbs(
    verbs: Verbs,
    common: argparse.ArgumentParser,
    subject: Subject[Any],
    view: tuple[str, str],
    actions: Mapping[str, Action],
) -> None:
    """The verbs on one named object: `view` (its verb and help) with the workflow's status,
    one verb per action, `delete` and `history`."""
    verb, text = view
    shown = verbs.add_parser(verb, parents=[common], help=text)
    shown.add_argument("name")
    output.add_argument(shown)
    shown.set_defaults(fn=guarded(functools.partial(show, subject)))
    for verb, action in actions.items():
        _add_action(verbs, common, subject, verb, action)
    noun = subject.kind.noun
    delete = verbs.add_parser("delete", parents=[common], help=f"delete a {noun.capitalize()}")
    delete.add_argument("name")
    delete.set_defaults(fn=guarded(functools.partial(delete_one, subject)))
    hist = verbs.add_parser("history", parents=[common], help=f"the {noun}'s workflow history")
    hist.add_argument("name")
    hist.add_argument("--runs", type=int, default=0, help="newest runs to show (0: all)")
    output.add_argument(hist)
    hist.set_defaults(fn=guarded(functools.partial(history, subject)))


def _add_action(
    verbs: Verbs, common: argparse.ArgumentParser, subject: Subject[Any], verb: str, action: Action
) -> None:
    """A validated update, or a Command CR with --via-command."""
    cmd = verbs.add_parser(verb, parents=[common], help=f"{action} (a validated update)")
    cmd.add_argument("name")
    cmd.add_argument("--reason", default="", help=f"recorded in the {subject.kind.noun}'s history")
    if subject.takes_message:
        cmd.add_argument("--message", default="")
    else:
        cmd.set_defaults(message="")
    cmd.add_argument("--via-command", action="store_true", help=VIA_COMMAND_HELP)
    where = subject.command_namespace
    if where is not None:
        cmd.add_argument(
            "--command-namespace",
            default=where,
            help=f"where the Command CR goes (default {where})",
        )
    else:
        cmd.set_defaults(command_namespace=None)
    cmd.set_defaults(fn=guarded(functools.partial(command, subject, verb)), action=action)


def command(subject: Subject[Any], verb: str, args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = subject.namespace(args, conn)
    resources = Resources(conn)
    action: Action = args.action
    ref = subject.ref(args, namespace)
    target = resources.get(subject.kind, args.name, namespace)
    wid, _ = subject.driver(conn, target, namespace)
    if args.via_command:
        where = args.command_namespace or namespace
        body = bus.command(target, action, where, args.reason, args.message)
        created = resources.create(COMMANDS, body, where)
        print(f"command {where}/{created['metadata']['name']} created: {action} for {ref}")
    else:
        what = f"{verb} {ref}"
        print(f"{ref}: {asyncio.run(subject.update(conn, wid, action, args, what))}")
    print(f"  history: {conn.url(wid)}")
    return 0


def show(subject: Subject[V], args: argparse.Namespace) -> int:
    """The object as the apiserver has it, with its workflow's status query answer."""
    conn = Connections(args)
    namespace = subject.namespace(args, conn)
    found = Resources(conn).get(subject.kind, args.name, namespace)
    wid, query = subject.driver(conn, found, namespace)
    answer: V | str
    try:
        answer = asyncio.run(query(conn, wid, f"query workflow {wid}"))
    except CliError as e:
        answer = str(e)  # the apiserver's half is still worth showing
    summary = subject.summary(found, wid, answer, conn.url(wid), datetime.now(UTC))
    if args.output is output.Format.TABLE:
        print(subject.render(summary))
    else:
        print(output.dump(summary, args.output))
    return 0


def show_list(
    headers: Sequence[str], rows: Sequence[Sequence[object]], fmt: output.Format, empty: str
) -> int:
    """A table for people (`empty` on stderr when there are no rows), records for scripts."""
    if fmt is not output.Format.TABLE:
        print(output.dump(output.records(headers, rows), fmt))
    elif rows:
        print(output.table(headers, rows))
    else:
        print(empty, file=sys.stderr)
    return 0


def created(conn: Connections, ref: str, workflow_id: str) -> None:
    print(f"{ref} created")
    print(f"  history: {conn.url(workflow_id)}")


def delete_one(subject: Subject[Any], args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = subject.namespace(args, conn)
    Resources(conn).delete(subject.kind, args.name, namespace)
    print(f"{subject.ref(args, namespace)} deleted")
    return 0


def history(subject: Subject[Any], args: argparse.Namespace) -> int:
    """The history of the workflow that drives the object; one no longer there (deleted, its
    workflow still cleaning up or finished) is taken to be driven by `workflow_id`'s."""
    conn = Connections(args)
    namespace = subject.namespace(args, conn)
    wid = subject.workflow_id(namespace, args.name)
    if subject.owner is not None:
        found = Resources(conn).find(subject.kind, args.name, namespace)
        if found is not None:
            wid, _ = subject.driver(conn, found, namespace)
    what = f"read the history of {subject.ref(args, namespace)}"
    entries = asyncio.run(remote.timeline(conn, wid, what, args.runs))
    print(output.history(entries, wid, conn.url(wid), args.output))
    return 0

"""`caldera jobflow ...` and `caldera jobtemplate ...`: Volcano's flows of Jobs, modelled on
`vcctl jobflow` and `vcctl jobtemplate` (their `list`, `get` and `delete`).

Both are read from and deleted on the apiserver, with vcctl's columns: a JobFlow's NAME,
NAMESPACE, PHASE and AGE, a JobTemplate's NAME and NAMESPACE. `delete -f FILE` deletes what a
file names, as vcctl's does. A JobFlow has a workflow (`jobflow/<namespace>/<name>`), so the
commands that name one print its Temporal UI link; a JobTemplate has none.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from cli import clients, jobs, output, verbs
from cli.apiserver import JOBFLOWS, JOBTEMPLATES, Kind, Obj, Resources
from cli.clients import CliError, Connections, guarded
from models import jobflow, keys

FLOW_HEADERS: Final = ("NAME", "NAMESPACE", "PHASE", "AGE")
TEMPLATE_HEADERS: Final = ("NAME", "NAMESPACE")


def flow_row(flow: Obj, now: datetime) -> list[object]:
    """vcctl's row; a flow not reconciled yet reads Pending, as its controller reads it."""
    meta = flow.get("metadata") or {}
    state = (flow.get("status") or {}).get("state") or {}
    return [
        meta.get("name", ""),
        meta.get("namespace", ""),
        state.get("phase") or jobflow.FlowPhase.PENDING.value,
        output.age(meta.get("creationTimestamp"), now),
    ]


def template_row(template: Obj, now: datetime) -> list[object]:
    meta = template.get("metadata") or {}
    return [meta.get("name", ""), meta.get("namespace", "")]


@dataclass(frozen=True)
class Listed:
    """One of the two kinds: its resource, its columns, and its workflow if it has one."""

    kind: Kind
    object_kind: str  # the manifests' `kind`, which `delete -f` checks
    headers: tuple[str, ...]
    row: Callable[[Obj, datetime], list[object]]
    workflow_id: Callable[[str, str], str] | None  # (namespace, name); None: no workflow


FLOW: Final = Listed(JOBFLOWS, jobflow.FLOW_KIND, FLOW_HEADERS, flow_row, keys.jobflow_workflow_id)
TEMPLATE: Final = Listed(JOBTEMPLATES, jobflow.TEMPLATE_KIND, TEMPLATE_HEADERS, template_row, None)


def add_parsers(sub: verbs.Verbs) -> None:
    _add_parser(sub, FLOW, "Volcano JobFlows: list, get, delete")
    _add_parser(sub, TEMPLATE, "Volcano JobTemplates: list, get, delete")


def _add_parser(sub: verbs.Verbs, listed: Listed, text: str) -> None:
    noun = listed.kind.noun
    common = clients.namespaced(f"the {noun}'s")
    choices = sub.add_parser(noun, help=text).add_subparsers(dest=f"{noun}_command", required=True)

    ls = choices.add_parser("list", parents=[common], help=f"{listed.object_kind}s")
    ls.add_argument("-A", "--all-namespaces", action="store_true")
    output.add_argument(ls)
    ls.set_defaults(fn=guarded(functools.partial(list_all, listed)))

    get = choices.add_parser("get", parents=[common], help=f"one {listed.object_kind}")
    get.add_argument("name")
    output.add_argument(get)
    get.set_defaults(fn=guarded(functools.partial(get_one, listed)))

    delete = choices.add_parser(
        "delete", parents=[common], help=f"delete a {listed.object_kind}, or those in a file"
    )
    delete.add_argument("name", nargs="?", default=None)
    delete.add_argument(
        "-f", "--filename", default=None, help=f"delete the {listed.object_kind}s in a YAML file"
    )
    delete.set_defaults(fn=guarded(functools.partial(delete_some, listed)))


def _namespace(args: argparse.Namespace, conn: Connections) -> str:
    return str(args.namespace or conn.default_namespace())


def list_all(listed: Listed, args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = "" if args.all_namespaces else _namespace(args, conn)  # "": every namespace
    found = Resources(conn).list(listed.kind, namespace)
    found.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"].get("name", "")))
    now = datetime.now(UTC)
    rows = [listed.row(o, now) for o in found]
    where = f"namespace {namespace}" if namespace else "any namespace"
    return verbs.show_list(listed.headers, rows, args.output, f"no {listed.kind.plural} in {where}")


def get_one(listed: Listed, args: argparse.Namespace) -> int:
    """vcctl's one-row table; with a workflow, its UI link below (and as `history` in records)."""
    conn = Connections(args)
    namespace = _namespace(args, conn)
    found = Resources(conn).get(listed.kind, args.name, namespace)
    row = listed.row(found, datetime.now(UTC))
    url = conn.url(listed.workflow_id(namespace, args.name)) if listed.workflow_id else None
    print(render(listed.headers, row, url, args.output))
    return 0


def render(headers: tuple[str, ...], row: list[object], url: str | None, fmt: output.Format) -> str:
    """`get`'s answer: the table and `History: <url>`, or one record with `history`."""
    if fmt is output.Format.TABLE:
        table = output.table(headers, [row])
        return f"{table}\nHistory: {url}" if url else table
    (record,) = output.records(headers, [row])
    return output.dump({**record, "history": url} if url else record, fmt)


def delete_some(listed: Listed, args: argparse.Namespace) -> int:
    """By name, or each object a file names (`-f`, like vcctl's); a failure does not stop the
    rest, and makes the exit status 1."""
    if (args.name is None) == (args.filename is None):
        raise CliError(f"delete takes a {listed.kind.noun} name or -f FILE, not both or neither")
    conn = Connections(args)
    resources = Resources(conn)
    if args.filename is None:
        namespace = _namespace(args, conn)
        resources.delete(listed.kind, args.name, namespace)
        print(f"{listed.kind.ref(args.name, namespace)} deleted")
        return 0
    api_version = jobflow.API_VERSION
    failed = 0
    for doc in jobs.documents(args.filename, api_version, listed.object_kind):
        meta: dict[str, Any] = doc.setdefault("metadata", {})
        try:
            namespace = jobs.document_namespace(args, conn, meta, listed.kind.noun)
            name = str(meta.get("name") or "")
            if not name:
                raise CliError(f"{args.filename}: a {listed.object_kind} without a name")
            resources.delete(listed.kind, name, namespace)
        except CliError as e:
            print(f"caldera: {e}", file=sys.stderr)
            failed += 1
        else:
            print(f"{listed.kind.ref(name, namespace)} deleted")
    return 1 if failed else 0

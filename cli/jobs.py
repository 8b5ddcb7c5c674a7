"""`caldera job ...`: Volcano Jobs from the terminal, modelled on `vcctl job`.

What exists and its status come from the apiserver (the workflows write `status`); commands go
to the job's workflow as Temporal updates, so a command that cannot apply is refused at once
with the workflow's own reason (or, with `--via-command`, as a Command CR like vcctl's, which
the forwarder delivers later). Every command that names a job prints its Temporal UI link.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from cli import bus, jobview, output, remote
from cli.clients import CliError, Connections, add_arguments, guarded
from cli.resources import COMMANDS, JOBS, Resources
from models import keys, signals, vcjob
from models.bus import Action

LIST_HEADERS: Final = (
    "NAME",
    "QUEUE",
    "PHASE",
    "MINAVAILABLE",
    "PENDING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "RETRIES",
    "AGE",
)
# verb → the Volcano action it asks for (the same strings Command CRs and policies use).
ACTIONS: Final = {
    "abort": Action.ABORT_JOB,
    "resume": Action.RESUME_JOB,
    "restart": Action.RESTART_JOB,
    "terminate": Action.TERMINATE_JOB,
    "complete": Action.COMPLETE_JOB,
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
    add_arguments(common)
    # Kubernetes' -n/--namespace, as in kubectl and vcctl; Temporal's is --temporal-namespace.
    common.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="the job's Kubernetes namespace (default: the kubeconfig context's)",
    )
    jobs = sub.add_parser("job", help="Volcano Jobs: run, list, view, commands, history")
    verbs = jobs.add_subparsers(dest="job_command", required=True)

    run = verbs.add_parser("run", parents=[common], help="create Jobs from a YAML file")
    run.add_argument("-f", "--filename", required=True, help="YAML file, `-` for stdin")
    run.set_defaults(fn=guarded(_run))

    ls = verbs.add_parser("list", parents=[common], help="Jobs with their phase and pod counts")
    ls.add_argument("-A", "--all-namespaces", action="store_true")
    ls.add_argument("--queue", default=None, help="only jobs in this queue")
    output.add_argument(ls)
    ls.set_defaults(fn=guarded(_list))

    view = verbs.add_parser("view", parents=[common], help="spec, status and delayed actions")
    view.add_argument("name")
    output.add_argument(view)
    view.set_defaults(fn=guarded(_view))

    for verb, action in ACTIONS.items():
        cmd = verbs.add_parser(verb, parents=[common], help=f"{action} (a validated update)")
        cmd.add_argument("name")
        cmd.add_argument("--reason", default="", help="recorded in the job's history")
        cmd.add_argument("--message", default="")
        cmd.add_argument(
            "--via-command",
            action="store_true",
            help="create a bus.volcano.sh Command CR instead (not validated, not waited for)",
        )
        cmd.set_defaults(fn=guarded(_command), action=action)

    delete = verbs.add_parser("delete", parents=[common], help="delete a Job")
    delete.add_argument("name")
    delete.set_defaults(fn=guarded(_delete))

    hist = verbs.add_parser("history", parents=[common], help="the job's workflow history")
    hist.add_argument("name")
    hist.add_argument("--runs", type=int, default=0, help="newest runs to show (0: all)")
    output.add_argument(hist)
    hist.set_defaults(fn=guarded(_history))


def _namespace(args: argparse.Namespace, conn: Connections) -> str:
    return str(args.namespace or conn.default_namespace())


def _run(args: argparse.Namespace) -> int:
    conn = Connections(args)
    resources = Resources(conn)
    for doc in _documents(args.filename):
        meta = doc.setdefault("metadata", {})
        namespace = _document_namespace(args, conn, meta)
        created = resources.create(JOBS, doc, namespace)
        name = created["metadata"]["name"]
        print(f"job {namespace}/{name} created")
        print(f"  history: {conn.url(keys.job_workflow_id(namespace, name))}")
    return 0


def _documents(filename: str) -> list[dict[str, Any]]:
    try:
        text = sys.stdin.read() if filename == "-" else Path(filename).read_text()
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except OSError as e:
        raise CliError(f"cannot read {filename}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise CliError(f"{filename} is not YAML: {e}") from None
    if not docs:
        raise CliError(f"{filename} holds no document")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or doc.get("apiVersion") != vcjob.API_VERSION:
            raise CliError(f"{filename}: document {i + 1} is not a {vcjob.API_VERSION} Job")
        if doc.get("kind") != "Job":
            raise CliError(f"{filename}: document {i + 1} is a {doc.get('kind')}, not a Job")
    return docs


def _document_namespace(args: argparse.Namespace, conn: Connections, meta: dict[str, Any]) -> str:
    """The file's namespace, else -n, else the context's; -n and the file must agree (kubectl)."""
    written = meta.get("namespace")
    if written and args.namespace and written != args.namespace:
        raise CliError(
            f"job {meta.get('name')}: the file says namespace {written}, -n says {args.namespace}"
        )
    namespace = str(written or _namespace(args, conn))
    meta["namespace"] = namespace
    return namespace


def _list(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = "" if args.all_namespaces else _namespace(args, conn)  # "": every namespace
    jobs = Resources(conn).list(JOBS, namespace)
    if args.queue:
        jobs = [j for j in jobs if jobview.queue(j) == args.queue]
    jobs.sort(key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"].get("name", "")))
    now = datetime.now(UTC)
    headers = LIST_HEADERS if namespace else ("NAMESPACE", *LIST_HEADERS)
    rows = [jobview.list_row(j, now, with_namespace=not namespace) for j in jobs]
    if args.output is output.Format.TABLE:
        if not rows:
            where = f"namespace {namespace}" if namespace else "any namespace"
            print(f"no jobs in {where}", file=sys.stderr)
            return 0
        print(output.table(headers, rows))
    else:
        print(output.dump(output.records(headers, rows), args.output))
    return 0


def _view(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = _namespace(args, conn)
    job = Resources(conn).get(JOBS, args.name, namespace)
    wid = keys.job_workflow_id(namespace, args.name)
    workflow: signals.JobView | str
    try:
        workflow = asyncio.run(remote.job_view(conn, wid, f"query workflow {wid}"))
    except CliError as e:
        workflow = str(e)  # the apiserver's half is still worth showing
    summary = jobview.summary(job, wid, workflow, conn.url(wid), datetime.now(UTC))
    if args.output is output.Format.TABLE:
        print(jobview.render(summary))
    else:
        print(output.dump(summary, args.output))
    return 0


def _command(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = _namespace(args, conn)
    resources = Resources(conn)
    action: Action = args.action
    ref = f"job {namespace}/{args.name}"
    job = resources.get(JOBS, args.name, namespace)
    wid = keys.job_workflow_id(namespace, args.name)
    if args.via_command:
        body = bus.command(job, action, namespace, args.reason, args.message)
        created = resources.create(COMMANDS, body, namespace)
        print(f"command {namespace}/{created['metadata']['name']} created: {action} for {ref}")
    else:
        cmd = signals.JobCommand(reason=args.reason, message=args.message)
        what = f"{args.job_command} {ref}"
        result = asyncio.run(remote.job_command(conn, wid, action, cmd, what))
        print(f"{ref}: {result.action}: {result.phase_before} → {result.phase_after}")
    print(f"  history: {conn.url(wid)}")
    return 0


def _delete(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = _namespace(args, conn)
    Resources(conn).delete(JOBS, args.name, namespace)
    print(f"job {namespace}/{args.name} deleted")
    return 0


def _history(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = _namespace(args, conn)
    wid = keys.job_workflow_id(namespace, args.name)
    what = f"read the history of job {namespace}/{args.name}"
    entries = asyncio.run(remote.timeline(conn, wid, what, args.runs))
    print(output.history(entries, wid, conn.url(wid), args.output))
    return 0

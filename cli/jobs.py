"""`caldera job ...`: Volcano Jobs from the terminal, modelled on `vcctl job`.

What exists and its status come from the apiserver (the workflows write `status`); commands go
to the job's workflow (its DispatchWorkflow when it is dispatched to a worker cluster, see
`cli.jobroute`) as Temporal updates, so a command that cannot apply is refused at once
with the workflow's own reason (or, with `--via-command`, as a Command CR like vcctl's, which
the forwarder delivers later). Every command that names a job prints its Temporal UI link.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from cli import clients, jobroute, jobview, output, remote, verbs, waiting
from cli.apiserver import JOBS, Obj, Resources
from cli.clients import CliError, Connections, guarded
from models import keys, vcjob
from models.bus import Action
from models.signals import job as job_signals
from workflows.dispatch import DispatchView

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
# verb → the Volcano action it asks for (the same strings Command CRs and policies use);
# `suspend` is vcctl's name for abort.
ACTIONS: Final = {
    "abort": Action.ABORT_JOB,
    "suspend": Action.ABORT_JOB,
    "resume": Action.RESUME_JOB,
    "restart": Action.RESTART_JOB,
    "terminate": Action.TERMINATE_JOB,
    "complete": Action.COMPLETE_JOB,
}


async def _update(
    conn: Connections, wid: str, action: Action, args: argparse.Namespace, what: str
) -> str:
    cmd = job_signals.JobCommand(reason=args.reason, message=args.message)
    result = await remote.job_command(conn, wid, action, cmd, what)
    return f"{result.action}: {result.phase_before} → {result.phase_after}"


def _namespace(args: argparse.Namespace, conn: Connections) -> str:
    return str(args.namespace or conn.default_namespace())


def _owner(
    conn: Connections, job: Obj
) -> tuple[str, verbs.Query[job_signals.JobView | DispatchView]]:
    found = jobroute.of(conn, job)
    return found.workflow_id, remote.dispatch_view if found.dispatched else remote.job_view


JOB: Final = verbs.Subject[job_signals.JobView | DispatchView](
    kind=JOBS,
    workflow_id=keys.job_workflow_id,
    namespace=_namespace,
    update=_update,
    query=remote.job_view,
    summary=jobview.summary,
    render=jobview.render,
    takes_message=True,
    command_namespace=None,  # a Job's Commands go to its own namespace
    owner=_owner,
)


def add_parser(sub: verbs.Verbs) -> None:
    common = clients.namespaced("the job's")
    jobs = sub.add_parser("job", help="Volcano Jobs: run, list, view, why, commands, history")
    choices = jobs.add_subparsers(dest="job_command", required=True)

    run = choices.add_parser("run", parents=[common], help="create Jobs from a YAML file")
    run.add_argument("-f", "--filename", required=True, help="YAML file, `-` for stdin")
    run.set_defaults(fn=guarded(_run))

    ls = choices.add_parser("list", parents=[common], help="Jobs with their phase and pod counts")
    ls.add_argument("-A", "--all-namespaces", action="store_true")
    ls.add_argument("--queue", default=None, help="only jobs in this queue")
    output.add_argument(ls)
    ls.set_defaults(fn=guarded(_list))

    verbs.add_verbs(choices, common, JOB, ("view", "spec, status and delayed actions"), ACTIONS)
    waiting.add_job_why(choices, common)


def _run(args: argparse.Namespace) -> int:
    conn = Connections(args)
    resources = Resources(conn)
    for doc in documents(args.filename, vcjob.API_VERSION, "Job"):
        meta = doc.setdefault("metadata", {})
        namespace = document_namespace(args, conn, meta, JOBS.noun)
        created = resources.create(JOBS, doc, namespace)
        wid, _ = JOB.driver(conn, created, namespace)
        verbs.created(conn, JOBS.ref(created["metadata"]["name"], namespace), wid)
    return 0


def documents(filename: str, api_version: str, kind: str) -> list[dict[str, Any]]:
    """The YAML documents in `filename` (`-`: stdin), each of which must be a `kind`."""
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
        if not isinstance(doc, dict) or doc.get("apiVersion") != api_version:
            raise CliError(f"{filename}: document {i + 1} is not a {api_version} {kind}")
        if doc.get("kind") != kind:
            raise CliError(f"{filename}: document {i + 1} is a {doc.get('kind')}, not a {kind}")
    return docs


def document_namespace(
    args: argparse.Namespace, conn: Connections, meta: dict[str, Any], noun: str
) -> str:
    """The file's namespace, else -n, else the context's; -n and the file must agree (kubectl)."""
    written = meta.get("namespace")
    if written and args.namespace and written != args.namespace:
        raise CliError(
            f"{noun} {meta.get('name')}: the file says namespace {written}, "
            f"-n says {args.namespace}"
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
    where = f"namespace {namespace}" if namespace else "any namespace"
    return verbs.show_list(headers, rows, args.output, f"no jobs in {where}")

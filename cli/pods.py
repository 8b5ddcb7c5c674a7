"""`caldera pod list`: the pods of Volcano Jobs, modelled on `vcctl pod list`.

Which pods: by default every pod a Volcano Job made (label `volcano.sh/job-name`); `--job` those
of one Job; `--queue` those of a queue's Jobs and, as vcctl adds them, the other workloads'
pods annotated with that queue. `--job` with `--queue` is refused when the Job is in another
queue. The columns are vcctl's, which are kubectl's: READY containers, STATUS as `kubectl get
pods` words it (`Running`, `Completed`, `Init:0/1`, `CrashLoopBackOff`, `Terminating`),
RESTARTS with the age of the last one.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from cli import clients, output, verbs
from cli.apiserver import Obj, Resources
from cli.clients import CliError, Connections, guarded
from models import labels

HEADERS: Final = ("NAME", "READY", "STATUS", "RESTARTS", "AGE")
_TERMINAL: Final = ("Succeeded", "Failed")
_NODE_UNREACHABLE: Final = "NodeLost"  # kube's NodeUnreachablePodReason


def add_parser(sub: verbs.Verbs) -> None:
    common = clients.namespaced("the pods'")
    pods = sub.add_parser("pod", help="the pods of Volcano Jobs: list")
    choices = pods.add_subparsers(dest="pod_command", required=True)
    ls = choices.add_parser(
        "list", parents=[common], help="pods made by Volcano Jobs, with their status"
    )
    ls.add_argument("-A", "--all-namespaces", action="store_true")
    ls.add_argument("-j", "--job", default=None, help="only the pods of this Job")
    ls.add_argument("-q", "--queue", default=None, help="only the pods in this queue")
    output.add_argument(ls)
    ls.set_defaults(fn=guarded(_list))


def selector(job: str | None) -> str:
    """The label selector the apiserver filters by; a queue is filtered here (`select`)."""
    return f"{labels.JOB_NAME}={job}" if job else labels.JOB_NAME


def select(pods: Sequence[Obj], job: str | None, queue: str | None) -> list[Obj]:
    """The pods vcctl shows, sorted by namespace and name.

    `pods`: as listed with `selector(job)`, or every pod when only a queue is asked for.
    """
    if job and queue:
        others = {str(q) for p in pods if (q := _labels(p).get(labels.QUEUE_NAME))} - {queue}
        if others:
            raise CliError(f"job {job} is in queue {', '.join(sorted(others))}, not {queue}")
    chosen = list(pods)
    if queue and not job:
        chosen = [
            p
            for p in pods
            if _labels(p).get(labels.QUEUE_NAME) == queue
            or _annotations(p).get(labels.POD_QUEUE_NAME) == queue
        ]
    return sorted(chosen, key=lambda p: (_meta(p).get("namespace", ""), _meta(p).get("name", "")))


def row(pod: Obj, now: datetime, with_namespace: bool) -> list[object]:
    meta = _meta(pod)
    count, last = restarts(pod)
    shown = str(count)
    if count and last:
        shown = f"{count} ({output.age(last, now)} ago)"
    cells: list[object] = [
        meta.get("name", ""),
        ready(pod),
        status(pod),
        shown,
        output.age(meta.get("creationTimestamp"), now),
    ]
    return [meta.get("namespace", ""), *cells] if with_namespace else cells


def ready(pod: Obj) -> str:
    """Ready containers over containers, sidecars (restartable init containers) counted."""
    spec, st = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = {c.get("name") for c in spec.get("initContainers") or [] if _sidecar(c)}
    total = len(spec.get("containers") or []) + len(sidecars)
    count = sum(
        1
        for c in st.get("containerStatuses") or []
        if c.get("ready") and (c.get("state") or {}).get("running") is not None
    )
    count += sum(
        1
        for c in st.get("initContainerStatuses") or []
        if c.get("name") in sidecars and c.get("started") and c.get("ready")
    )
    return f"{count}/{total}"


def restarts(pod: Obj) -> tuple[int, str | None]:
    """Restarts and when the last one ended (None: unknown), as kubectl counts them: the init
    containers' while initialising, else the sidecars' and the containers'."""
    spec, st = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = {c.get("name") for c in spec.get("initContainers") or [] if _sidecar(c)}
    inits = st.get("initContainerStatuses") or []
    if _initialising(pod) is not None and not _condition(st, "Initialized"):
        counted = list(inits)
    else:
        counted = [c for c in inits if c.get("name") in sidecars]
        counted += st.get("containerStatuses") or []
    total = sum(int(c.get("restartCount") or 0) for c in counted)
    ends = [_last_end(c) for c in counted]
    return total, max((e for e in ends if e), default=None)


def status(pod: Obj) -> str:
    """kubectl's STATUS column (its printPod): the phase, refined by the containers' states."""
    meta, st = _meta(pod), pod.get("status") or {}
    phase = st.get("phase") or ""
    reason = st.get("reason") or phase
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated"
        for c in st.get("conditions") or []
    ):
        reason = "SchedulingGated"
    initialising = _initialising(pod)
    if initialising is not None:
        reason = initialising
    if initialising is None or _condition(st, "Initialized"):
        running = False
        for c in reversed(st.get("containerStatuses") or []):
            state = c.get("state") or {}
            waiting, ended = state.get("waiting") or {}, state.get("terminated")
            if waiting.get("reason"):
                reason = waiting["reason"]
            elif ended is not None and ended.get("reason"):
                reason = ended["reason"]
            elif ended is not None:
                reason = _exit(ended, "")
            elif c.get("ready") and state.get("running") is not None:
                running = True
        if reason == "Completed" and running:
            reason = "Running" if _condition(st, "Ready") else "NotReady"
    if meta.get("deletionTimestamp"):
        if st.get("reason") == _NODE_UNREACHABLE:
            reason = "Unknown"
        elif phase not in _TERMINAL:
            reason = "Terminating"
    return reason


def _initialising(pod: Obj) -> str | None:
    """The init container step the pod is at (`Init:0/2`, `Init:CrashLoopBackOff`); None: done."""
    spec, st = pod.get("spec") or {}, pod.get("status") or {}
    inits = spec.get("initContainers") or []
    sidecars = {c.get("name") for c in inits if _sidecar(c)}
    for i, c in enumerate(st.get("initContainerStatuses") or []):
        state = c.get("state") or {}
        ended, waiting = state.get("terminated"), state.get("waiting") or {}
        if ended is not None and ended.get("exitCode") == 0:
            continue
        if c.get("name") in sidecars and c.get("started"):
            continue
        if ended is not None:
            return f"Init:{ended['reason']}" if ended.get("reason") else _exit(ended, "Init:")
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}"
        return f"Init:{i}/{len(inits)}"
    return None


def _exit(ended: Mapping[str, Any], prefix: str) -> str:
    if ended.get("signal"):
        return f"{prefix}Signal:{ended['signal']}"
    return f"{prefix}ExitCode:{ended.get('exitCode', 0)}"


def _last_end(container: Mapping[str, Any]) -> str | None:
    ended = (container.get("lastState") or {}).get("terminated") or {}
    finished = ended.get("finishedAt")
    return str(finished) if finished else None


def _sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _condition(st: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in st.get("conditions") or []
    )


def _meta(pod: Obj) -> dict[str, Any]:
    return pod.get("metadata") or {}


def _labels(pod: Obj) -> dict[str, Any]:
    return _meta(pod).get("labels") or {}


def _annotations(pod: Obj) -> dict[str, Any]:
    return _meta(pod).get("annotations") or {}


def _list(args: argparse.Namespace) -> int:
    conn = Connections(args)
    namespace = "" if args.all_namespaces else str(args.namespace or conn.default_namespace())
    every = bool(args.queue and not args.job)  # a queue holds other workloads' pods too
    found = Resources(conn).pods(namespace, None if every else selector(args.job))
    pods = select(found, args.job, args.queue)
    now = datetime.now(UTC)
    rows = [row(p, now, with_namespace=not namespace) for p in pods]
    headers: Iterable[str] = HEADERS if namespace else ("NAMESPACE", *HEADERS)
    where = f"namespace {namespace}" if namespace else "any namespace"
    return verbs.show_list(tuple(headers), rows, args.output, f"no Volcano Job pods in {where}")

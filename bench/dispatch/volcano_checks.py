"""The `volcano` phase (with `--volcano-worker`): what holds when the worker cluster that got a
dispatched Job runs real Volcano.

Two parts. First the dispatch phase's Jobs that went to the Volcano worker, as they are: their
copies Running there, in which queue, and the manager's Jobs mirroring their status (whole, and
phase + counts + conditions) and their Events (`on cluster <name>: ...`). Then a lifecycle in a
fresh namespace, from a manager queue whose extendClusters names the Volcano worker only (the
worker has no queue of that name: the copy lands in `default`): `--volcano-lifecycle` Jobs
that finish (`sim.caldera.dev/run-seconds`), as many aborted by a Command on the manager
(Volcano's own Command handling on the worker), as many deleted on the manager (the copy must
go). Times are this process's clock at the first poll that saw a state.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from kubernetes import client

from activities import kube
from bench.dispatch import stack, volcano_worker
from bench.dispatch.config import Options
from bench.sidebyside import workload
from cli.devstack import clusters, install
from models.dispatch import DISPATCHED_TO_ANNOTATION, ORIGIN_ANNOTATION

QUEUE: Final = "to-volcano"  # the manager's; the worker has none of that name
FINISHED: Final = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
COUNTS: Final = ("pending", "running", "succeeded", "failed", "terminating", "unknown")
RUN_SECONDS: Final = 5
OPEN_TIMEOUT: Final = 30.0


def check(the_run: stack.Run, opts: Options, dispatch_ns: str) -> dict[str, Any]:
    """The dispatch phase's Jobs on the Volcano worker, then the lifecycle."""
    index = len(the_run.workers) - 1
    name = the_run.workers[index].name
    worker = the_run.worker_api(index)
    # Made first: the forwarder must know the queue's extendClusters before a Job names it
    # (an Open status says the manager's Caldera has seen it).
    install.apply(the_run.manager, clusters.queue_manifest(QUEUE, [name]))
    try:
        dispatched = _dispatched(the_run.manager, worker, name, opts, dispatch_ns)
        # `volcano_worker.start` returned only once Volcano's webhook refused a bad Job.
        result: dict[str, Any] = {
            "worker": name,
            "admission": "enforcing",
            "dispatched": dispatched,
        }
        volcano_worker.wait_open(the_run.manager, QUEUE, OPEN_TIMEOUT)
        result["lifecycle"] = _lifecycle(the_run, worker, name, opts)
        failed = _failed(result)
        if failed:
            result["error"] = "did not hold: " + ", ".join(failed)
    finally:
        worker.close()  # type: ignore[no-untyped-call]
    return result


def _failed(result: dict[str, Any]) -> list[str]:
    """The checks that did not hold, by name."""
    d, life = result["dispatched"], result["lifecycle"]
    if "error" in d:
        return [d["error"]]
    failed = [
        k
        for k in ("copies", "copies_running", "manager_running", "status_mirrored_whole")
        if d[k] != d["placed"]
    ]
    failed += [
        k for k, v in life.items() if isinstance(v, dict) and v.get("reached") != v.get("of")
    ]
    failed += [k for k in ("worker_pods_of_deleted_left", "worker_commands_left") if life.get(k)]
    return failed


def _by_name(jobs: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in jobs or []}


def _key(status: dict[str, Any]) -> str:
    """Phase, counts and conditions: what a mirror must carry whatever else it holds."""
    state = status.get("state") or {}
    picked = {
        "phase": state.get("phase"),
        **{k: status.get(k, 0) for k in COUNTS},
        "conditions": status.get("conditions") or [],
    }
    return json.dumps(picked, sort_keys=True)


def _mirrors(manager: dict[str, Any], copy: dict[str, Any]) -> tuple[bool, bool]:
    a, b = manager.get("status") or {}, copy.get("status") or {}
    return a == b, _key(a) == _key(b)


def _dispatched(
    manager: client.ApiClient, worker: client.ApiClient, name: str, opts: Options, ns: str
) -> dict[str, Any]:
    placed = {
        n
        for n, j in _by_name(stack.volcano_jobs(manager, ns)).items()
        if stack.annotations_of(j).get(DISPATCHED_TO_ANNOTATION) == name
    }
    if not placed:
        return {"error": f"no job of {ns} was dispatched to {name}"}
    # The manager follows a copy by a long poll (a read every 5 s): give the mirror time.
    deadline = time.monotonic() + min(opts.budget, 60)
    while True:
        copies = _by_name(stack.volcano_jobs(worker, ns))
        mine = _by_name(stack.volcano_jobs(manager, ns))
        pairs = [(mine[n], copies[n]) for n in sorted(placed) if n in copies and n in mine]
        matched = [_mirrors(a, b) for a, b in pairs]
        if all(m[0] for m in matched) and len(pairs) == len(placed):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(opts.poll)
    events = _events(manager, ns, placed)
    return {
        "placed": len(placed),
        "copies": sum(1 for n in placed if n in copies and _origin(copies[n])),
        "copies_running": sum(1 for n in placed if n in copies and stack.in_phase(copies[n])),
        "copy_queues": dict(
            Counter(copies[n]["spec"].get("queue", "") for n in placed if n in copies)
        ),
        "status_mirrored_whole": sum(1 for m in matched if m[0]),
        "status_mirrored_phase_counts_conditions": sum(1 for m in matched if m[1]),
        "manager_running": sum(1 for a, _ in pairs if stack.in_phase(a)),
        **events,
    }


def _origin(job: dict[str, Any]) -> bool:
    return ORIGIN_ANNOTATION in stack.annotations_of(job)


def _events(manager: client.ApiClient, ns: str, jobs: set[str]) -> dict[str, Any]:
    """The manager's Events on these Jobs: by reason, and how many Jobs got one from the copy."""
    listed = client.CoreV1Api(manager).list_namespaced_event(ns).items
    mine = [e for e in listed if e.involved_object.name in jobs and e.involved_object.kind == "Job"]
    relayed = {e.involved_object.name for e in mine if (e.message or "").startswith("on cluster")}
    return {
        "event_reasons": dict(Counter(e.reason or "" for e in mine)),
        "jobs_with_relayed_events": len(relayed),
        "relayed_example": next(
            (e.message for e in mine if (e.message or "").startswith("on cluster")), None
        ),
    }


def _job(name: str, ns: str, run_seconds: int | None) -> dict[str, Any]:
    doc = workload.volcano_job(workload.JobPlan(name, 1), ns)
    doc["spec"]["queue"] = QUEUE
    if run_seconds is not None:
        template = doc["spec"]["tasks"][0]["template"]
        template["metadata"] = {"annotations": {workload.RUN_SECONDS: str(run_seconds)}}
    return doc


def _abort(manager: client.ApiClient, job: dict[str, Any]) -> None:
    """AbortJob as vcctl writes it: a Command owned by and aimed at the manager's Job."""
    meta = job["metadata"]
    owner = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    body = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {
            "generateName": f"{meta['name']}-abortjob-",
            "namespace": meta["namespace"],
            "ownerReferences": [owner],
        },
        "action": "AbortJob",
        "target": owner,
    }
    client.CustomObjectsApi(manager).create_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", meta["namespace"], "commands", body
    )


def _until(
    read: Callable[[], set[str]], wanted: set[str], opts: Options, t0: float
) -> dict[str, Any]:
    """Poll until every wanted name is read (or the budget passes): how many, and the slowest."""
    seen = stack.poll_until(read, wanted, time.monotonic() + opts.budget, opts.poll)
    return {"reached": len(seen), "of": len(wanted), "max_s": _max(seen, t0)}


def _max(seen: dict[str, float], t0: float) -> float | None:
    return round(max(seen.values()) - t0, 2) if seen else None


def _phased(api: client.ApiClient, ns: str, phase: str, copy: bool) -> Callable[[], set[str]]:
    def read() -> set[str]:
        return {
            n
            for n, j in _by_name(stack.volcano_jobs(api, ns)).items()
            if stack.in_phase(j, phase) and (_origin(j) or not copy)
        }

    return read


def _lifecycle(
    the_run: stack.Run, worker: client.ApiClient, name: str, opts: Options
) -> dict[str, Any]:
    manager, k = the_run.manager, opts.volcano_lifecycle
    ns = f"dsp-volcano-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(manager).create_namespace(kube.body({"metadata": {"name": ns}}))
    finish = {f"c-{i}" for i in range(k)}
    abort = {f"a-{i}" for i in range(k)}
    delete = {f"d-{i}" for i in range(k)}
    custom = client.CustomObjectsApi(manager)
    t0 = time.time()
    for n in sorted(finish | abort | delete):
        doc = _job(n, ns, RUN_SECONDS if n in finish else None)
        custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", ns, "jobs", doc)
    out: dict[str, Any] = {"namespace": ns, "per_kind": k, "run_seconds": RUN_SECONDS}
    out["running_on_worker"] = _until(
        _phased(worker, ns, "Running", True), abort | delete, opts, t0
    )
    out["running_on_manager"] = _until(
        _phased(manager, ns, "Running", False), abort | delete, opts, t0
    )
    out["completed_on_worker"] = _until(_phased(worker, ns, "Completed", True), finish, opts, t0)
    out["completed_on_manager"] = _until(_phased(manager, ns, "Completed", False), finish, opts, t0)
    copies = _by_name(stack.volcano_jobs(worker, ns))
    out["copy_queues"] = dict(Counter(j["spec"].get("queue", "") for j in copies.values()))
    out["copy_annotations"] = sorted(
        {
            k
            for j in copies.values()
            for k in stack.annotations_of(j)
            if k.startswith("caldera.dev/")
        }
    )
    mine = _by_name(stack.volcano_jobs(manager, ns))
    t1 = time.time()
    for n in sorted(abort):
        _abort(manager, mine[n])
    out["aborted_on_worker"] = _until(_phased(worker, ns, "Aborted", True), abort, opts, t1)
    out["aborted_on_manager"] = _until(_phased(manager, ns, "Aborted", False), abort, opts, t1)
    # Volcano's controller deletes a Command once it has carried it out.
    left: Any = client.CustomObjectsApi(worker).list_namespaced_custom_object(
        "bus.volcano.sh", "v1alpha1", ns, "commands"
    )
    out["worker_commands_left"] = len(left.get("items") or [])
    t2 = time.time()
    for n in sorted(delete):
        custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", ns, "jobs", n)

    def gone() -> set[str]:
        there = _by_name(stack.volcano_jobs(worker, ns))
        return {n for n in delete if n not in there}

    out["copy_deleted"] = _until(gone, delete, opts, t2)
    pods = client.CoreV1Api(worker).list_namespaced_pod(ns).items
    names = [str(p.metadata.name) if p.metadata else "" for p in pods]
    out["worker_pods_of_deleted_left"] = sum(
        1 for p in names if any(p.startswith(f"{n}-") for n in delete)
    )
    out["manager_events"] = _events(manager, ns, finish | abort | delete)
    return out

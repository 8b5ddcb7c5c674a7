"""The `soak` phase: short Jobs submitted to the dispatching queue without pause while worker
clusters are lost and come back, and Caldera's workers are killed; then the invariants.

On the stack `run.py` started. For `--soak-minutes`: a Job every `--soak-every` seconds
(one in three a gang of 2 to 4 pods; each pod succeeds after `--soak-run-seconds`), and a
fault every `--soak-fault-every` seconds, in turn: a worker cluster's kube-apiserver SIGKILLed
for less than the lease, then the manager's Caldera worker SIGKILLed, then an apiserver down
past lost-after, then a worker cluster's Caldera worker SIGKILLed (down times: `fault_plan`).
Every fault restores what it broke before the next one. A sampler polls the manager's Jobs
and every worker cluster's pods and copies each `--poll` seconds throughout. At the end the
submitting stops, everything is checked up, every Job must end, then the manager's Jobs are
deleted and their copies, pods and workflows must go; the checks are `invariants.py`'s.

CPU counts every process from the soak's start until every job ended, a killed process's
seconds included (read just before the kill), so restarts do not hide cost.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from kubernetes import client

from activities import kube
from bench.chaos import invariants as chaos_invariants
from bench.chaos.faults import Fault
from bench.dispatch import invariants, leftovers, report, stack
from bench.dispatch.config import Options
from bench.sidebyside import stack as stacks
from bench.sidebyside import workload
from bench.sidebyside.observe import percentile
from cli.devstack import clusters, controlplane, processes
from models import labels
from models.dispatch import GENERATION_ANNOTATION, LEASE_SECONDS, ORIGIN_ANNOTATION

STALE_GRACE: Final = 30.0  # seconds after a cluster's return its stale pods may still run
READY_LINE: Final = "worker started"
APISERVER: Final = "kube-apiserver SIGKILL"
MANAGER_WORKER: Final = "manager worker SIGKILL"
CLUSTER_WORKER: Final = "cluster worker SIGKILL"


@dataclass(frozen=True)
class PlannedFault:
    at: float  # seconds from the soak's start
    kind: str
    cluster: int  # the worker cluster's index (unused for the manager's worker)
    down: float  # seconds an apiserver stays down (0: a process restarted at once)


def fault_plan(minutes: float, every: float, workers: int, lost_after: int) -> list[PlannedFault]:
    """The faults in turn, `every` seconds apart from `every / 2`: apiservers alternate over the
    clusters and their down time over well within the lease (0.15 x lost-after: with the
    restart, under the lease left after the last renewal, so nothing happens), past the lease
    but short of lost-after (0.8 x: the copy fences itself, the job runs again) and past
    lost-after (+15 s: the job moves). The lease is half of lost-after here, renewed every
    third of it (`docs/user-guide/dispatch.md`)."""
    shorts = (0.15 * lost_after, 0.8 * lost_after)
    out: list[PlannedFault] = []
    at, turn, apiservers, shorts_done, kills = every / 2, 0, 0, 0, 0
    while at < minutes * 60:
        step = turn % 4
        if step in (0, 2):
            if step == 0:
                down = shorts[shorts_done % 2]
                shorts_done += 1
            else:
                down = lost_after + 15.0
            out.append(PlannedFault(at, APISERVER, apiservers % workers, round(down, 1)))
            apiservers += 1
        elif step == 1:
            out.append(PlannedFault(at, MANAGER_WORKER, 0, 0.0))
        else:
            out.append(PlannedFault(at, CLUSTER_WORKER, kills % workers, 0.0))
            kills += 1
        turn += 1
        at += every
    return out


def manifest(name: str, namespace: str, replicas: int, run_seconds: int) -> dict[str, Any]:
    """A Volcano Job of `replicas` pods (all needed: minAvailable) in the dispatching queue,
    whose kwok pods succeed after `run_seconds`."""
    doc = workload.volcano_job(workload.JobPlan(name, replicas), namespace)
    doc["spec"]["queue"] = stack.DISPATCH_QUEUE
    template = doc["spec"]["tasks"][0]["template"]
    template["metadata"] = {"annotations": {workload.RUN_SECONDS: str(run_seconds)}}
    return doc


@dataclass
class Soak:
    run: stack.Run
    opts: Options
    namespace: str
    started: float = field(default_factory=time.time)
    submitted: dict[str, float] = field(default_factory=dict)  # name -> created at
    pods: int = 0  # the submitted jobs' pods
    refused: list[str] = field(default_factory=list)
    phases: dict[str, list[tuple[float, str]]] = field(default_factory=dict)
    samples: list[invariants.Sample] = field(default_factory=list)
    generations: dict[str, int] = field(default_factory=dict)  # the highest seen on a worker
    faults: list[Fault] = field(default_factory=list)
    returns: dict[str, list[float]] = field(default_factory=dict)  # cluster -> apiserver back
    retired: dict[str, float] = field(default_factory=dict)  # CPU of killed processes
    errors: list[str] = field(default_factory=list)
    submitting: threading.Event = field(default_factory=threading.Event)
    sampling: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ended(self) -> bool:
        with self.lock:
            last = {n: s[-1][1] for n, s in self.phases.items() if s}
            return all(last.get(n) in invariants.ENDS for n in self.submitted)


# -- submitting and sampling -----------------------------------------------------------------


def _submit(soak: Soak) -> None:
    rng = random.Random(0)
    custom = client.CustomObjectsApi(soak.run.stack.api())
    low, high = soak.opts.soak_run_seconds
    index = 0
    while not soak.submitting.is_set():
        name = f"sk-{index:04d}"
        replicas = rng.randint(2, 4) if index % 3 == 2 else 1
        doc = manifest(name, soak.namespace, replicas, rng.randint(low, high))
        try:
            custom.create_namespaced_custom_object(
                "batch.volcano.sh", "v1alpha1", soak.namespace, "jobs", doc
            )
            with soak.lock:
                soak.submitted[name] = time.time()
                soak.pods += replicas
        except Exception as e:
            with soak.lock:
                soak.refused.append(f"{name}: {str(e)[:200]}")
        index += 1
        soak.submitting.wait(soak.opts.soak_every)


def _running_pods(api: client.ApiClient, namespace: str) -> dict[str, int]:
    """Running pods not being deleted, by their Volcano job's name (raises when no answer)."""
    response: Any = client.CoreV1Api(api).list_namespaced_pod(
        namespace, _preload_content=False, _request_timeout=stack.REQUEST_TIMEOUT
    )
    counts: Counter[str] = Counter()
    for pod in json.loads(response.data)["items"] or []:
        meta = pod["metadata"]
        job = (meta.get("labels") or {}).get(labels.JOB_NAME)
        running = (pod.get("status") or {}).get("phase") == "Running"
        if job and running and not meta.get("deletionTimestamp"):
            counts[job] += 1
    return dict(counts)


def _sample(soak: Soak) -> None:
    """Every `--poll` seconds until told to stop: the manager's phases, and each answering
    worker cluster's Running pods and copies' generations."""
    apis: dict[int, client.ApiClient] = {}
    manager = soak.run.stack.api()
    while not soak.sampling.wait(soak.opts.poll):
        at = time.time()
        running: dict[str, dict[str, int]] = {}
        for i, w in enumerate(soak.run.workers):
            api = apis.get(i) or controlplane.api_client(w.kubeconfig)
            apis[i] = api
            copies = stack.volcano_jobs(api, soak.namespace)
            try:
                pods = _running_pods(api, soak.namespace) if copies is not None else None
            except Exception:
                pods = None
            if copies is None or pods is None:
                apis.pop(i).close()  # type: ignore[no-untyped-call]  # dead connections
                continue
            running[w.name] = pods
            with soak.lock:
                for c in copies:
                    notes = c["metadata"].get("annotations") or {}
                    if ORIGIN_ANNOTATION in notes:
                        name, gen = c["metadata"]["name"], int(notes[GENERATION_ANNOTATION])
                        soak.generations[name] = max(gen, soak.generations.get(name, 0))
        jobs = stack.volcano_jobs(manager, soak.namespace)
        with soak.lock:
            soak.samples.append(invariants.Sample(at, running))
            for j in jobs or []:
                phase = ((j.get("status") or {}).get("state") or {}).get("phase") or ""
                invariants.record_phase(soak.phases, j["metadata"]["name"], at, phase)
    for api in apis.values():
        api.close()  # type: ignore[no-untyped-call]


# -- faults --------------------------------------------------------------------------------------


def _retire(soak: Soak, key: str, pid: int) -> None:
    """Keep a process's CPU seconds before it is killed (its successor starts at zero)."""
    report.add(soak.retired, key, stacks.cpu_seconds(pid))


def _restart_worker(soak: Soak, group: list[processes.Process], key: str) -> str:
    """SIGKILL the Caldera worker of `group` and start it again, ready when this returns."""
    i, old = next((i, p) for i, p in enumerate(group) if p.name == "worker")
    _retire(soak, key, old.pid)
    t0 = time.monotonic()
    new = processes.restart(old, kill=True)
    group[i] = new  # recorded before the wait: stopped at the end whatever happens
    processes.wait_until(new, lambda: READY_LINE in processes.log_text(new), 90, "ready")
    return f"pid {old.pid} -> {new.pid}, ready in {time.monotonic() - t0:.1f} s"


def _apiserver(soak: Soak, index: int, down: float) -> str:
    cluster = soak.run.workers[index]
    _retire(soak, f"workers/{clusters.APISERVER}", cluster.apiserver().pid)
    clusters.kill_apiserver(cluster)
    time.sleep(down)
    back = time.time()
    with soak.lock:
        soak.returns.setdefault(cluster.name, []).append(back)
    soak.run.workers[index] = stack.restart_apiserver(cluster)
    lease, lost_after = min(LEASE_SECONDS, soak.opts.lost_after / 2), soak.opts.lost_after
    return (
        f"{cluster.name} down {down:.1f} s (lease {lease:.0f} s, lost-after {lost_after} s), "
        f"ready {time.time() - back:.1f} s later"
    )


def _inject(soak: Soak, planned: PlannedFault) -> None:
    actions: dict[str, Callable[[], str]] = {
        APISERVER: lambda: _apiserver(soak, planned.cluster, planned.down),
        MANAGER_WORKER: lambda: _restart_worker(soak, soak.run.stack.caldera, "manager/worker"),
        CLUSTER_WORKER: lambda: _cluster_worker(soak, planned.cluster),
    }
    at = time.time()
    try:
        detail = actions[planned.kind]()
    except Exception as e:
        with soak.lock:
            soak.errors.append(f"{planned.kind} at {at - soak.started:.0f} s: {e}")
        return
    if detail:
        print(f"[soak] {at - soak.started:5.0f} s {planned.kind}: {detail}", flush=True)
        with soak.lock:
            soak.faults.append(Fault(kind=planned.kind, at=at, over=time.time(), detail=detail))


def _cluster_worker(soak: Soak, index: int) -> str:
    cluster = soak.run.workers[index]
    if not any(p.name == "worker" for p in cluster.controllers):
        return ""  # a cluster that runs Volcano has no Caldera worker to kill
    return f"{cluster.name} " + _restart_worker(soak, cluster.controllers, "workers/worker")


def _restore(soak: Soak) -> list[str]:
    """Anything found dead at the end started again (each fault restores its own: normally
    nothing), so every job can end."""
    done: list[str] = []
    for i, w in enumerate(soak.run.workers):
        if not processes.alive(w.apiserver().pid):
            soak.run.workers[i] = stack.restart_apiserver(w)
            done.append(f"{w.name} kube-apiserver")
        dead = [p for p in soak.run.workers[i].processes if not processes.alive(p.pid)]
        done += [f"{w.name} {p.name} found dead" for p in dead]
    dead = [p for p in soak.run.stack.processes() if not processes.alive(p.pid)]
    return done + [f"manager {p.name} found dead" for p in dead]


# -- the phase -----------------------------------------------------------------------------------


def soak(run: stack.Run, opts: Options, namespace: str) -> dict[str, Any]:
    client.CoreV1Api(run.manager).create_namespace(kube.body({"metadata": {"name": namespace}}))
    s = Soak(run=run, opts=opts, namespace=namespace)
    plan = fault_plan(opts.soak_minutes, opts.soak_fault_every, len(run.workers), opts.lost_after)
    cpu0 = stack.cpu_snapshot(run)
    threads = [threading.Thread(target=f, args=(s,), daemon=True) for f in (_submit, _sample)]
    for t in threads:
        t.start()
    try:
        for planned in plan:
            time.sleep(max(0.0, s.started + planned.at - time.time()))
            _inject(s, planned)
        time.sleep(max(0.0, s.started + opts.soak_minutes * 60 - time.time()))
        s.submitting.set()
        threads[0].join()
        faults_over = time.time()
        restored = _restore(s)
        print(f"[soak] {len(s.submitted)} jobs submitted; waiting for every end", flush=True)
        deadline = time.monotonic() + opts.budget
        while not s.ended() and time.monotonic() < deadline:
            time.sleep(1.0)
        settled = time.time() - faults_over if s.ended() else None
        cpu1 = stack.cpu_snapshot(run)
        for key, spent in s.retired.items():
            report.add(cpu1, key, spent)
        reasons = leftovers.event_reasons(run.manager, namespace)
    finally:
        s.submitting.set()
        s.sampling.set()
        threads[1].join(30)
    cleanup, left = leftovers.cleanup(run, namespace, opts.poll)
    wf_runs, upserted = asyncio.run(leftovers.read(run.stack.temporal.address, namespace))
    found = invariants.overlaps(s.samples)
    two, tolerated = invariants.split_overlaps(found, s.returns, STALE_GRACE)
    checks = {
        "1 every job Completed, once": invariants.ends_once(s.submitted, s.phases, upserted),
        "2 never two clusters running a job": two,
        "3 nothing left after deletion": left,
        "4 no failed workflow task": chaos_invariants.tasks_clean(wf_runs)
        + invariants.histories_read(namespace, s.submitted, {r.workflow_id for r in wf_runs}),
    }
    causes = Counter(f.split(":")[0] for r in wf_runs for f in r.task_failures)
    cleanup["histories"] = {
        "runs": len(wf_runs),
        "events": sum(r.events for r in wf_runs),
        "task_failure_causes": dict(causes),  # UNHANDLED_COMMAND: the server's, benign
    }
    return _figures(s, checks, tolerated, cleanup, reasons, cpu0, cpu1, settled, restored)


def _figures(
    s: Soak,
    checks: dict[str, list[chaos_invariants.Violation]],
    tolerated: list[invariants.Overlap],
    cleanup: dict[str, Any],
    reasons: dict[str, int],
    cpu0: dict[str, float],
    cpu1: dict[str, float],
    settled: float | None,
    restored: list[str],
) -> dict[str, Any]:
    last = {n: st[-1][1] for n, st in s.phases.items() if st}
    done = {n: next(t for t, p in s.phases[n] if p in invariants.ENDS) for n in last}
    took = [done[n] - s.submitted[n] for n in s.submitted if n in done]
    jobs = len(s.submitted)
    return {
        "namespace": s.namespace,
        "minutes": s.opts.soak_minutes,
        "submitted": jobs,
        "pods": s.pods,
        "ends": dict(sorted(Counter(last.get(n, "none") for n in s.submitted).items())),
        "completed": sum(1 for n in s.submitted if last.get(n) == invariants.WANTED),
        "refused": s.refused[:20],
        "faults": [{**asdict(f), "at_s": round(f.at - s.started, 1)} for f in s.faults],
        "faults_by_kind": dict(sorted(Counter(f.kind for f in s.faults).items())),
        "moves": invariants.moves(s.generations),
        "event_reasons": reasons,
        "settled_s": None if settled is None else round(settled, 1),
        "create_to_end_p50_s": percentile(took, 0.5),
        "create_to_end_p99_s": percentile(took, 0.99),
        "create_to_end_max_s": round(max(took), 1) if took else None,
        "invariants": {k: len(v) for k, v in checks.items()},
        "violations": {
            k: [f"{v.invariant}: {v.detail}" for v in vs[:20]] for k, vs in checks.items()
        },
        "tolerated_overlaps": len(tolerated),
        "tolerated_jobs": sorted({o.job for o in tolerated}),
        "tolerated_worst_s": _worst_lag(tolerated, s.returns),
        "cleanup": cleanup,
        "samples": len(s.samples),
        "restored": restored,
        "errors": s.errors,
        "cpu": report.cpu(cpu0, cpu1, jobs),
    }


def _worst_lag(
    tolerated: list[invariants.Overlap], returns: dict[str, list[float]]
) -> float | None:
    """The latest a tolerated overlap was seen after its cluster came back."""
    lags = [
        o.at - t
        for o in tolerated
        for c in o.clusters
        for t in returns.get(c, ())
        if 0 <= o.at - t <= STALE_GRACE
    ]
    return round(max(lags), 1) if lags else None

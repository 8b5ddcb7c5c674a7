"""One soak: the stack, the waves of jobs, the commands, the fault schedule, the settling, the
invariants and the report.

Faults run for `minutes`; the waves stop a minute before so the last jobs still meet faults.
Timed actions run on a small pool so a slow one (the Temporal server down for ten seconds)
never holds back the others; every call to a server is retried while that server is down.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import json
import random
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any, TypeVar

from kubernetes import client
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities import kube
from bench.chaos import audit as audit_mod
from bench.chaos import faults, histories, invariants, report, schedule, workload
from bench.chaos import stack as chaos_stack
from bench.chaos.config import Options
from bench.chaos.faults import Fault
from bench.chaos.invariants import Violation
from bench.chaos.soak import Soak
from bench.chaos.workload import GONE, QUEUE, Planned
from models import keys
from models.signals import job as job_signals
from models.signals import queue as queue_signals

T = TypeVar("T")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
EVICT_EVERY = 8.0
POLL_EVERY = 2.0
QUEUE_SETTLE = 45.0  # seconds the queues have to agree with the pods once all jobs ended


def retrying(fn: Callable[[], T], what: str, timeout: float = 180.0) -> T:
    """`fn` until it answers: connection errors, 5xx and 429 are the server being down."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except client.ApiException as e:
            if e.status and e.status < 500 and e.status != 429:
                raise
            error: Exception = e
        except Exception as e:  # urllib3's connection errors while the apiserver restarts
            error = e
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: still failing after {timeout:.0f}s: {error}")
        time.sleep(1.0)


def _submit(soak: Soak, job: Planned) -> None:
    body = workload.manifest(job, soak.namespace)
    api = soak.api()

    def create() -> None:
        try:
            if job.kind.api == "batch":
                client.BatchV1Api(api).create_namespaced_job(soak.namespace, kube.body(body))
            else:
                client.CustomObjectsApi(api).create_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", soak.namespace, "jobs", body
                )
        except client.ApiException as e:
            if e.status != 409:  # 409: an earlier attempt got through
                raise

    try:
        retrying(create, f"create {job.name}")
    except client.ApiException as e:
        with soak.lock:
            soak.refused.append(f"{job.name}: {e.status} {str(e.body)[:200]}")
        return
    with soak.lock:
        soak.planned.append(job)


def _command(soak: Soak, namespace: str, target: dict[str, Any], action: str) -> None:
    """A Command CR, as `vcctl` writes one."""
    body = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": f"{target['name']}-", "namespace": namespace},
        "action": action,
        "target": target,
    }
    custom = client.CustomObjectsApi(soak.api())
    retrying(
        lambda: custom.create_namespaced_custom_object(
            "bus.volcano.sh", "v1alpha1", namespace, "commands", body
        ),
        f"command {action} {target['name']}",
    )


def _abort(soak: Soak, job: str) -> None:
    uid = soak.audit.jobs[job].uid if job in soak.audit.jobs else ""
    target = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": job,
        "uid": uid,
        "controller": True,
    }
    _command(soak, soak.namespace, target, "AbortJob")


def _update(soak: Soak, workflow_id: str, name: str, arg: Any) -> None:
    """A Temporal update, retried while the server is down (a refusal is final)."""

    async def call() -> None:
        deadline = time.monotonic() + 180
        while True:
            try:
                await soak.temporal.get_workflow_handle(workflow_id).execute_update(name, arg)
                return
            except Exception as e:
                if "Refused" in str(getattr(e, "cause", "")) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(1.0)

    soak.on_loop(call())


def _canary(soak: Soak) -> str:
    with soak.lock:
        soak.canaries += 1
        name = f"k-{soak.canaries}-0"
    _submit(soak, Planned(name, workload.CANARY))
    return name


def _fault(soak: Soak, kind: str, inject: Callable[[], str]) -> None:
    at = time.time()
    try:
        detail = inject()
    except Exception as e:
        with soak.lock:
            soak.errors.append(f"{kind}: {e}")
        return
    fault = Fault(kind=kind, at=at, over=time.time(), detail=detail)
    fault.canary = _canary(soak)
    with soak.lock:
        soak.faults.append(fault)


def _schedule(soak: Soak) -> list[tuple[float, Callable[[], None]]]:
    """(seconds from the start, action) for everything but the periodic faults."""
    d = soak.opts.minutes * 60
    s = soak.stack
    waves = int(max(0.0, d - 60) // soak.opts.wave_every) + 1
    out: list[tuple[float, Callable[[], None]]] = [
        (n * soak.opts.wave_every, functools.partial(_wave, soak, n)) for n in range(waves)
    ]
    injectors: dict[str, Callable[[], str]] = {
        schedule.FORWARDER_KILL: lambda: faults.kill_forwarder(s),
        schedule.DEV_SERVER_RESTART: lambda: faults.restart_temporal(s),
        schedule.SERVER_SIGTERM: lambda: faults.stop_temporal_server(s, kill=False),
        schedule.SERVER_SIGKILL: lambda: faults.stop_temporal_server(s, kill=True),
        schedule.POSTGRES_KILL: lambda: faults.kill_postgres(s),
        schedule.APISERVER_KILL: lambda: faults.restart_apiserver(s),
        schedule.NODE_REMOVED: lambda: faults.remove_node(s, s.nodes.names()[0]),
        schedule.NODE_READDED: lambda: faults.restore_nodes(s),
    }
    out += [
        (at, functools.partial(_fault, soak, kind, injectors[kind]))
        for at, kind in schedule.timed_faults(soak.opts.minutes, soak.opts.temporal)
    ]
    if soak.opts.burst:
        out += [(1.0, functools.partial(_burst, soak))]
    out += [(d * 0.45, functools.partial(_close_queue, soak))]
    out += [(d * 0.55, functools.partial(_open_queue, soak))]
    return out


def _wave(soak: Soak, number: int) -> None:
    start = time.time() - soak.started
    for job in workload.wave(number, soak.queue_open):
        _submit(soak, job)
        prefix = job.kind.prefix
        wid = keys.job_workflow_id(soak.namespace, job.name)
        cmd = job_signals.JobCommand(reason="chaos soak")
        if prefix == "a":
            _later(soak, start + 20, functools.partial(_abort, soak, job.name))
        elif prefix == "r":
            _later(soak, start + 15, functools.partial(_abort_then_resume, soak, wid, cmd))


def _burst(soak: Soak) -> None:
    """The `--burst` one-pod jobs, created eight at a time as a busy client would."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(functools.partial(_submit, soak), workload.burst(soak.opts.burst)))


def _abort_then_resume(soak: Soak, workflow_id: str, cmd: job_signals.JobCommand) -> None:
    """Resume 15 s after the abort was carried out (an update answers once it was)."""
    _update(soak, workflow_id, "abort", cmd)
    time.sleep(15)
    _update(soak, workflow_id, "resume", cmd)


def _close_queue(soak: Soak) -> None:
    soak.queue_open = False
    custom = client.CustomObjectsApi(soak.api())
    queue = kube.as_dict(
        retrying(lambda: custom.get_cluster_custom_object(*QUEUES, QUEUE), "queue")
    )
    target = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "name": QUEUE,
        "uid": queue["metadata"]["uid"],
    }
    _command(soak, "default", target, "CloseQueue")


def _open_queue(soak: Soak) -> None:
    _update(
        soak, keys.queue_workflow_id(QUEUE), "open", queue_signals.QueueCommand(reason="chaos soak")
    )
    soak.queue_open = True


def _later(soak: Soak, at: float, action: Callable[[], None]) -> None:
    with soak.lock:
        soak.sequence += 1
        heapq.heappush(soak.pending, (at, soak.sequence, action))


def _periodic(
    soak: Soak, every: float, first: float, stop: threading.Event, act: Callable[[int], None]
) -> None:
    turn = 0
    next_at = soak.started + first
    end = soak.started + soak.opts.minutes * 60
    while not stop.is_set() and next_at < end:
        if stop.wait(max(0.0, next_at - time.time())):
            return
        try:
            act(turn)
        except Exception as e:
            with soak.lock:
                soak.errors.append(f"periodic: {e}")
        turn += 1
        next_at += every


def _evict(soak: Soak, _turn: int, rng: random.Random) -> None:
    name = faults.evict_one(soak.stack, soak.audit, rng)
    if name:
        with soak.lock:
            soak.evicted.append(name)


def _drive(soak: Soak, stop: threading.Event) -> None:
    """Run the timeline and the pending per-job actions until the faults' end."""
    for at, action in _schedule(soak):
        _later(soak, at, action)
    with ThreadPoolExecutor(max_workers=6) as pool:
        end = soak.opts.minutes * 60
        while not stop.is_set():
            with soak.lock:
                due = soak.pending[0][0] if soak.pending else None
            elapsed = time.time() - soak.started
            if due is None and elapsed > end:
                break
            if due is not None and due <= elapsed:
                with soak.lock:
                    _, _, action = heapq.heappop(soak.pending)
                pool.submit(_guarded, soak, action)
                continue
            stop.wait(0.2)


def _guarded(soak: Soak, action: Callable[[], None]) -> None:
    try:
        action()
    except Exception as e:
        cause = getattr(e, "cause", None)
        with soak.lock:
            soak.errors.append(f"{type(e).__name__}: {str(e)[:300]} {cause or ''}".strip())


def _ended(soak: Soak, job: Planned) -> bool:
    seen = soak.audit.jobs.get(job.name)
    if job.kind.end == GONE:
        return seen is not None and seen.deleted
    return seen is not None and seen.phase == job.kind.end


def _settle(soak: Soak) -> float:
    """Seconds after the last fault until every job reached its end (or the bound passed)."""
    last = max((f.over for f in soak.faults), default=time.time())
    deadline = time.time() + soak.opts.settle_bound
    while time.time() < deadline:
        audit_mod.poll_jobs(soak.audit, soak.api())
        if all(_ended(soak, j) for j in soak.planned):
            return time.time() - last
        time.sleep(POLL_EVERY)
    return float("inf")


def _check(soak: Soak, runs: list[histories.Run]) -> dict[str, list[Violation]]:
    a = soak.audit
    batch_parallel = {j.name: 1 for j in soak.planned if j.kind.prefix in ("bf", "bd")}
    batch_parallel |= {j.name: 2 for j in soak.planned if j.kind.prefix == "b"}
    gangs = {j.name: j.kind.replicas for j in soak.planned if j.kind.prefix == "g"}
    # Queue status follows the pods by a session or two (an idle scheduler looks every 8 s,
    # an assumption lasts 30 s): the queues have that long to agree.
    deadline = time.monotonic() + QUEUE_SETTLE
    queue_checks = _queue_checks(soak)
    while queue_checks and time.monotonic() < deadline:
        time.sleep(POLL_EVERY)
        queue_checks = _queue_checks(soak)
    return {
        "0 duplicate pods": invariants.duplicate_pods(a)
        + invariants.parallelism_kept(a, batch_parallel),
        "no pod for a finished job": invariants.no_pod_after_finish(a),
        "0 lost delayed actions": invariants.timers_kept(runs),
        "0 stuck jobs": invariants.ends(a, soak.planned),
        "no gang partly bound": invariants.gangs_whole(a, gangs),
        "queues agree with pods": queue_checks,
        "0 failed workflow tasks": invariants.tasks_clean(runs),
        "0 activities left retrying": invariants.activities_settled(runs),
    }


def _queue_checks(soak: Soak) -> list[Violation]:
    a = soak.audit
    custom = client.CustomObjectsApi(soak.api())
    groups = kube.as_dict(
        custom.list_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", soak.namespace, "podgroups"
        )
    )["items"]
    queue_checks: list[Violation] = []
    for name in ("default", QUEUE):
        queue = kube.as_dict(custom.get_cluster_custom_object(*QUEUES, name))
        live_cpu = 0.1 * len(
            [
                p
                for p in a.live()
                if p.node
                and p.job
                and (workload.kind_of(p.job).prefix == "q") == (name == QUEUE)
                and workload.kind_of(p.job).api == "volcano"
            ]
        )
        in_queue = [
            g
            for g in groups
            if (g.get("spec") or {}).get("queue") == name
            and not g["metadata"].get("deletionTimestamp")
        ]
        queue_checks += invariants.queue_agrees(queue, live_cpu, len(in_queue))
    return queue_checks


def run(opts: Options) -> report.Result:
    rng = random.Random(opts.seed)
    st = chaos_stack.start(opts.nodes, opts.workers, opts.temporal)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = threading.Event()
    try:
        namespace = f"chaos-{uuid.uuid4().hex[:6]}"
        api = st.api()
        client.CoreV1Api(api).create_namespace(kube.body({"metadata": {"name": namespace}}))
        client.CustomObjectsApi(api).create_cluster_custom_object(
            *QUEUES,
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": QUEUE},
                "spec": {"weight": 1},
            },
        )
        temporal = asyncio.run_coroutine_threadsafe(
            Client.connect(st.temporal.address, data_converter=pydantic_data_converter), loop
        ).result(30)
        soak = Soak(
            opts=opts,
            stack=st,
            namespace=namespace,
            audit=audit_mod.Audit(namespace),
            temporal=temporal,
            loop=loop,
        )
        pods = audit_mod.watch_pods(soak.audit, st.api())
        polling = threading.Thread(target=_poll_loop, args=(soak, stop), daemon=True)

        def kill(turn: int) -> None:
            _fault(soak, schedule.WORKER_KILL, functools.partial(faults.kill_worker, st, turn))

        def evict(turn: int) -> None:
            _evict(soak, turn, rng)

        periodic = [
            threading.Thread(
                target=_periodic,
                args=(soak, opts.worker_kill_every, 15.0, stop, kill),
                daemon=True,
            ),
            threading.Thread(
                target=_periodic, args=(soak, EVICT_EVERY, 10.0, stop, evict), daemon=True
            ),
        ]
        for w in [polling, *periodic]:
            w.start()
        _drive(soak, stop)
        for w in periodic:
            w.join()
        faults_over = time.time()
        settled = _settle(soak)
        time.sleep(POLL_EVERY)
        audit_mod.poll_jobs(soak.audit, soak.api())
        runs = soak.on_loop(
            histories.read(
                temporal, (f"vcjob/{namespace}/", f"job/{namespace}/", "queue/", "scheduler/")
            ),
            timeout=600,
        )
        checks = _check(soak, runs)
        stop.set()
        pods.stop()
        result = report.build(soak, runs, checks, settled, faults_over)
        return result
    finally:
        stop.set()
        chaos_stack.stop(st, keep_logs=opts.out / "logs")
        loop.call_soon_threadsafe(loop.stop)


def _poll_loop(soak: Soak, stop: threading.Event) -> None:
    while not stop.wait(POLL_EVERY):
        audit_mod.poll_jobs(soak.audit, soak.api())


def write(result: report.Result, opts: Options) -> None:
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "result.json").write_text(json.dumps(asdict(result), indent=2, default=str))
    (opts.out / "report.md").write_text(report.markdown(result))

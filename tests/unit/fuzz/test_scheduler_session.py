"""Scheduling sessions over random clusters (nodes of any size, cordoned or full, gangs
pending, admitted or partly running, best-effort pods, gangs that can never fit), run a few
times in a row with the assume cache between them (placements bound, left assumed, or
refused by the binder) never raise, never place more on a node than it has room for (cpu,
memory, pod slots), place a gang all or nothing (counting the pods it already holds), and
never place a pod twice: not in one session, and not again while it is assumed or bound.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controllers.scheduler import session
from controllers.scheduler.session import SchedulerState
from models.keys import JobKey
from models.signals import scheduler as scheduler_signals
from scheduling.actions.registry import run_session
from scheduling.api.job_facts import FactMemo
from scheduling.api.result import SessionResult
from scheduling.api.snapshot import ALLOCATED_CLASS, PodKey, Snapshot, TaskStatus
from scheduling.api.vectors import EMPTY, Resources
from scheduling.cache.objects import snapshot_from_objects
from scheduling.cache.tasks import ParseMemo
from scheduling.framework.session_config import Action, SessionConfig
from tests.unit.fuzz.common import START, fuzz_settings
from tests.unit.scheduling.builders import make_node, make_pod, make_podgroup, make_queue

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
HELD = ALLOCATED_CLASS | {TaskStatus.SUCCEEDED}
CONFIGS = (
    SessionConfig(),
    SessionConfig(actions=(Action.ENQUEUE, Action.ALLOCATE, Action.PREEMPT, Action.BACKFILL)),
    SessionConfig(actions=(Action.ALLOCATE, Action.BACKFILL)),
)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], list[Obj], list[Obj]]:
    """Nodes, pods, PodGroups and queues, as the snapshot activity lists them."""
    nodes = []
    for i in range(draw(st.integers(1, 3))):
        node = make_node(
            f"n{i}",
            cpu=draw(st.sampled_from(["1", "2", "4"])),
            memory=draw(st.sampled_from(["2Gi", "4Gi"])),
            pods=draw(st.sampled_from([1, 2, 3, 110])),
        )
        if draw(st.integers(0, 5)) == 0:
            node = node.cordon()
        nodes.append(node.obj())
    queues = [make_queue("default"), make_queue("q2", weight=draw(st.integers(1, 3)))]
    pods: list[Obj] = []
    groups: list[Obj] = []
    for g in range(draw(st.integers(1, 4))):
        name = f"g{g}"
        size = draw(st.integers(1, 4))
        group = make_podgroup(
            name,
            min_member=draw(st.integers(1, size + 1)),  # size + 1: a gang that can never be ready
            queue=draw(st.sampled_from(["default", "q2"])),
            phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])),
        )
        if draw(st.booleans()):
            group["spec"]["priorityClassName"] = "high"
        groups.append(group)
        cpu = draw(st.sampled_from(["500m", "1", "2", ""]))
        for i in range(size):
            pod = make_pod(f"{name}-w-{i}", group=name, cpu=cpu)
            if draw(st.integers(0, 3)) == 0:
                pod = pod.on(f"n{draw(st.integers(0, len(nodes) - 1))}")
            pods.append(pod.obj())
    classes = [{"metadata": {"name": "high"}, "value": 100}]
    return nodes, pods, groups, [*queues, {"priority_classes": classes}]


def _snapshot(cluster: tuple[list[Obj], list[Obj], list[Obj], list[Obj]], assumed: Any) -> Snapshot:
    nodes, pods, groups, rest = cluster
    queues, classes = rest[:-1], rest[-1]["priority_classes"]
    return snapshot_from_objects(nodes, pods, groups, queues, classes, assumed=assumed)


def check_session(snap: Snapshot, result: SessionResult) -> None:
    tasks = {t.key: t for t in snap.tasks}
    placed = [p.pod for p in result.placements]
    assert len(placed) == len(set(placed)), f"a pod placed twice: {placed}"
    for p in result.placements:
        task = tasks[p.pod]
        assert task.status is TaskStatus.PENDING and task.node_name is None, f"{p.pod} not pending"
        assert not task.gated and p.job == task.job
    # Room: what each node had used plus what was placed on it fits its allocatable.
    on_node: dict[str, Resources] = defaultdict(lambda: EMPTY)
    count: dict[str, int] = defaultdict(int)
    for p in result.placements:
        on_node[p.node] = on_node[p.node].add(tasks[p.pod].request)
        count[p.node] += 1
    for node in snap.nodes:
        if not count[node.name]:
            continue
        assert not node.unschedulable, f"placed on cordoned {node.name}"
        assert node.used.pods + count[node.name] <= node.allocatable.pods, f"pods on {node.name}"
        for dim in ("cpu", "memory"):
            adding = on_node[node.name].get(dim)
            if adding:
                have = node.used.get(dim) + adding
                assert have <= node.allocatable.get(dim), f"{dim} on {node.name}: {have}"
    # Gangs: all or nothing, counting pods already held and pending best-effort ones.
    evicted = {e.pod for e in result.evictions}
    assert len(evicted) == len(result.evictions) and not evicted & set(placed)
    for e in result.evictions:
        assert tasks[e.pod].status in (TaskStatus.RUNNING, TaskStatus.BOUND)
    by_job: dict[JobKey, int] = defaultdict(int)
    for p in result.placements:
        by_job[p.job] += 1
    for key, n in by_job.items():
        job = snap.job(key)
        own = snap.tasks_of(key)
        held = sum(1 for t in own if t.status in HELD and t.key not in evicted)
        best_effort = sum(
            1
            for t in own
            if t.status is TaskStatus.PENDING and t.best_effort and t.key not in placed
        )
        assert n + held + best_effort >= job.min_member, (
            f"{key}: {n} placed + {held} held < minMember {job.min_member}"
        )


@given(
    cluster=clusters(),
    config=st.sampled_from(CONFIGS),
    binds=st.lists(st.sampled_from(["bind", "assume", "refuse"]), min_size=6, max_size=6),
)
@fuzz_settings(max_examples=150)
def test_sessions_respect_room_gangs_and_the_assume_cache(
    cluster: tuple[list[Obj], list[Obj], list[Obj], list[Obj]],
    config: SessionConfig,
    binds: list[str],
) -> None:
    nodes, pods, groups, rest = cluster
    state = SchedulerState()
    now = START
    for round_ in range(3):
        assumed = session.live(state, now)
        snap = _snapshot((nodes, pods, groups, rest), assumed)
        result = run_session(snap, config)
        check_session(snap, result)
        placed = {p.pod for p in result.placements}
        assert not placed & set(assumed), f"placed again while assumed: {placed & set(assumed)}"
        by_job: dict[str, list[scheduler_signals.PlacedPod]] = defaultdict(list)
        for p in result.placements:
            by_job[p.job].append(scheduler_signals.PlacedPod(pod=p.pod.split("/")[1], node=p.node))
        handed = [(f"vcjob/{job}", job.split("/")[0], ps) for job, ps in sorted(by_job.items())]
        # The binder: some bound (the pod now runs there), some left assumed, some refused.
        bound: list[str] = []
        refused: dict[str, str] = {}
        for i, p in enumerate(result.placements):
            how = binds[(i + round_) % len(binds)]
            if how == "bind":
                bound.append(p.pod)
                pods = [_bind(pod, p.pod, p.node) for pod in pods]
            elif how == "refuse":
                refused[p.pod] = "node not found"
        state, _ = session.after_session(state, handed, [], 0, now)
        now += timedelta(seconds=1)
        state, _ = session.after_session(state, [], bound, 0, now)
        state = session.dropped(state, scheduler_signals.BindFailed(pods=refused))
        assert set(session.live(state, now)) == placed - set(bound) - set(refused) | (
            set(assumed) - set(bound)
        )


def _bind(pod: Obj, key: PodKey, node: str) -> Obj:
    meta = pod["metadata"]
    if f"{meta['namespace']}/{meta['name']}" != key:
        return pod
    return {**pod, "spec": {**pod["spec"], "nodeName": node}, "status": {"phase": "Running"}}


def _stamped(objects: list[Obj]) -> list[Obj]:
    """Each object with a uid and resourceVersion, as the apiserver returns it (the memos key
    on both)."""
    out = []
    for obj in objects:
        meta = obj["metadata"]
        uid = f"{meta.get('namespace', '')}/{meta['name']}"
        out.append({**obj, "metadata": {**meta, "uid": uid, "resourceVersion": "1"}})
    return out


def _changed(obj: Obj, **parts: Any) -> Obj:
    """`obj` with `parts` replaced and a new resourceVersion, as any write gives it."""
    meta = obj["metadata"]
    version = str(int(meta["resourceVersion"]) + 1)
    return {**obj, **parts, "metadata": {**meta, "resourceVersion": version}}


@given(
    cluster=clusters(),
    config=st.sampled_from(CONFIGS),
    binds=st.lists(st.booleans(), min_size=6, max_size=6),
)
@fuzz_settings(max_examples=100)
def test_sessions_decide_alike_with_the_memos_carried_over(
    cluster: tuple[list[Obj], list[Obj], list[Obj], list[Obj]],
    config: SessionConfig,
    binds: list[bool],
) -> None:
    """The parse memo and the jobs' facts kept from one session to the next change no decision:
    each round, a session over fresh parses and one over what the memos kept decide alike,
    while pods are bound and PodGroups move phase between rounds."""
    nodes, pods, groups, rest = cluster
    pods, groups = _stamped(pods), _stamped(groups)
    queues, classes = rest[:-1], rest[-1]["priority_classes"]
    parse, facts = ParseMemo(), FactMemo()
    for round_ in range(3):
        fresh = snapshot_from_objects(nodes, pods, groups, queues, classes)
        kept = snapshot_from_objects(nodes, pods, groups, queues, classes, memo=parse)
        assert kept.tasks == fresh.tasks and kept.jobs == fresh.jobs and kept.pods == fresh.pods
        decided = run_session(fresh, config)
        assert run_session(kept, config, facts=facts) == decided
        for i, p in enumerate(decided.placements):
            if binds[(i + round_) % len(binds)]:
                node = {"spec": {"nodeName": p.node}, "status": {"phase": "Running"}}
                pods = [
                    _changed(pod, spec={**pod["spec"], **node["spec"]}, status=node["status"])
                    if f"{pod['metadata']['namespace']}/{pod['metadata']['name']}" == p.pod
                    else pod
                    for pod in pods
                ]
        moved = {f"{u.job}": u.new.value for u in decided.phase_updates}
        groups = [
            _changed(g, status={"phase": moved[key]})
            if (key := f"{g['metadata']['namespace']}/{g['metadata']['name']}") in moved
            else g
            for g in groups
        ]

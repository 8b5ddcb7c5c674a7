"""Reclaim's and preempt's victims as Volcano's framework chooses them: tier by tier.

Volcano's `Session.Reclaimable` and `Session.Preemptable` (framework/session_plugins.go) ask
the plugins of each tier, in the configuration's order and skipping one whose
`enableReclaimable`/`enablePreemptable` switch is off, which of one node's candidates may go.
A plugin that abstains is skipped; one that names nobody ends its tier without an answer (the
plugins after it in that tier are not asked); the other answers are intersected. The first
tier left with victims decides and later tiers are not asked; no tier: nobody goes.
`victims_by_tiers` is that walk, over the answers alone, so that it can be checked on its own.

Two consequences of the Go code are kept, since they are what Volcano does:
- an intersection that comes out empty is a nil slice, and the next plugin of the same tier
  takes nil for "nobody answered yet": its answer replaces the empty intersection;
- gang naming nobody (no job with a task beyond minAvailable) ends tier 1 before conformance
  is asked, so with the default tiers tier 2 (proportion; drf) decides without conformance.

`victims_for` asks the victim functions of the plugins Caldera runs, written from their
`AddPreemptableFn`/`AddReclaimableFn` at Volcano's HEAD: conformance, gang, priority (preempt),
drf (preempt; reclaim only with its hierarchy on, `hdrf`: otherwise it registers none),
proportion and capacity (reclaim), pdb and cdp (both). Those that count down as they go
(gang's spare tasks, drf's job books, proportion's and capacity's queue books, pdb's budgets)
are handed the candidates in victim order, as capacity itself sorts them; Volcano hands the
others its node's task map, in no set order.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Final

from models.keys import JobKey, QueueName
from scheduling.api import jobs
from scheduling.api.snapshot import PodKey, TaskInfo
from scheduling.api.vectors import Missing, Resources, dominant_share
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point, Tiers
from scheduling.plugins import capacity as capacity_plugin
from scheduling.plugins import cdp as cdp_plugin

CRITICAL_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE: Final = "kube-system"
SHARE_DELTA: Final = Fraction(1, 10**6)  # drf's shareDelta: shares this close are equal

Answer = Sequence[PodKey] | None  # None: the plugin abstains
# A plugin's victims of the candidates; None: it abstains (the extender may).
VictimFn = Callable[[SessionState, TaskInfo, Sequence[TaskInfo]], list[TaskInfo] | None]


def victims_by_tiers(
    tiers: Tiers, point: Point, answers: Mapping[str, Callable[[], Answer]]
) -> tuple[PodKey, ...]:
    """Volcano's Reclaimable/Preemptable walk over the plugins' answers, asked lazily; a
    plugin without an answer here (`answers` lacks it) is not asked."""
    for tier in tiers:
        victims: list[PodKey] | None = None  # None: Go's nil, nobody has answered
        for plugin in tier:
            ask = answers.get(plugin.name)
            if ask is None or not plugin.speaks(point):
                continue
            answer = ask()
            if answer is None:
                continue
            if not answer:
                victims = None
                break
            if victims is None:
                victims = list(answer)
            else:
                named = set(answer)
                victims = [v for v in victims if v in named] or None
        if victims is not None:
            return tuple(victims)
    return ()


def conformant(task: TaskInfo) -> bool:
    """Neither system-critical nor in kube-system."""
    namespace = task.key.split("/", 1)[0]
    return task.priority_class not in CRITICAL_CLASSES and namespace != SYSTEM_NAMESPACE


def conformance(
    state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]
) -> list[TaskInfo]:
    """conformance's evictableFn."""
    return [t for t in found if conformant(t)]


def gang(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """gang's preemptableFn (its reclaim function too): each job gives up tasks while more
    than minAvailable of its tasks are ready, counting down as it goes."""
    occupied: dict[JobKey, int] = {}
    out = []
    for task in found:
        left = occupied.setdefault(task.job, jobs.ready_task_num(state.tasks_of(task.job)))
        if left > state.jobs[task.job].min_member:
            occupied[task.job] = left - 1
            out.append(task)
    return out


def priority(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """priority's preemptableFn: a lower-priority job, or within the evictor's own job a
    lower-priority task."""
    mine = state.jobs[evictor.job]

    def lower(task: TaskInfo) -> bool:
        if task.job == evictor.job:
            return task.priority < evictor.priority
        return state.jobs[task.job].priority < mine.priority

    return [t for t in found if lower(t)]


def drf(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """drf's preemptableFn: the evictor's job, with the evictor, would have a dominant share
    no larger than the victim's job without the victim (each job's book counted down as its
    tasks are looked at, victims or not)."""
    mine = state.job_allocated[evictor.job].add(evictor.request)
    ls = dominant_share(mine, state.cluster)
    left: dict[JobKey, Resources] = {}
    out = []
    for task in found:
        rest = left.get(task.job, state.job_allocated[task.job]).sub(task.request)
        left[task.job] = rest
        rs = dominant_share(rest, state.cluster)
        if ls < rs or abs(ls - rs) <= SHARE_DELTA:
            out.append(task)
    return out


def hdrf(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """drf's reclaimableFn, registered with enableHierarchy only (`plugins.hdrf`): a candidate
    goes when the reclaimer's queue would then come first by hierarchical share."""
    return [] if state.hdrf is None else state.hdrf.victims(evictor, found)


def proportion(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """proportion's reclaimableFn: a task goes while its queue holds more than its deserved
    share, the queue's book counted down by each victim."""
    held: dict[QueueName, Resources] = {}
    out = []
    for task in found:
        queue = state.jobs[task.job].queue
        now = held.get(queue, state.allocated_of(queue))
        if not now.less_equal(state.deserved_of(queue), Missing.ZERO):
            held[queue] = now.sub(task.request)
            out.append(task)
    return out


def capacity(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """capacity's reclaimableFn: per task, shares a dimension with the reclaimer, leaves the
    guarantee whole and its queue is above deserved on its dimensions (`capacity.gives_up`);
    an unusable queue tree rejects, which names nobody."""
    books = state.capacity
    if books is None or books.broken is not None:
        return []
    held: dict[QueueName, Resources] = {}
    out = []
    for task in found:
        queue = state.jobs[task.job].queue
        now = held.get(queue, state.allocated_of(queue))
        if capacity_plugin.gives_up(books, now, queue, [task], evictor):
            held[queue] = now.sub(task.request)
            out.append(task)
    return out


def pdb(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """pdb's preemptableFn and reclaimableFn (one filter): candidates are taken while every
    disruption budget they count against still allows them, each counting its budgets down
    from what the session's evictions left (`plugins.pdb`)."""
    return list(found) if state.budgets is None else state.budgets.vote(found)


def cdp(state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]) -> list[TaskInfo]:
    """cdp's preemptableFn and reclaimableFn (one filter): candidates not within their
    cooldown at the session's clock (`plugins.cdp`)."""
    return cdp_plugin.victims(found, state.snapshot.now)


def _extender(verb: str) -> VictimFn:
    """The extender's preemptable or reclaimable verb (`plugins.extender`); it abstains
    where it is off or is not interested in the evictor."""

    def ask(
        state: SessionState, evictor: TaskInfo, found: Sequence[TaskInfo]
    ) -> list[TaskInfo] | None:
        asked = state.extender
        return None if asked is None else asked.victims(verb, evictor, found)

    return ask


# Each plugin Caldera runs that registers a victim function, by point.
FNS: Final[Mapping[Point, Mapping[str, VictimFn]]] = {
    Point.PREEMPTABLE: {
        "conformance": conformance,
        "gang": gang,
        "priority": priority,
        "drf": drf,
        "pdb": pdb,
        "cdp": cdp,
        "extender": _extender("preemptable"),
    },
    Point.RECLAIMABLE: {
        "conformance": conformance,
        "gang": gang,
        "drf": hdrf,
        "proportion": proportion,
        "capacity": capacity,
        "pdb": pdb,
        "cdp": cdp,
        "extender": _extender("reclaimable"),
    },
}


def victims_for(
    state: SessionState,
    tiers: Tiers,
    point: Point,
    evictor: TaskInfo,
    found: Sequence[TaskInfo],
) -> list[TaskInfo]:
    """The candidates (in victim order) the tiers let go at `point`, in that order."""

    def ask(fn: VictimFn) -> Callable[[], Answer]:
        def answer() -> Answer:
            named = fn(state, evictor, found)
            return None if named is None else [t.key for t in named]

        return answer

    # drf registers its reclaim function only with its hierarchy on.
    off = {"drf"} if point is Point.RECLAIMABLE and state.hdrf is None else set()
    answers = {name: ask(fn) for name, fn in FNS[point].items() if name not in off}
    chosen = set(victims_by_tiers(tiers, point, answers))
    return [t for t in found if t.key in chosen]

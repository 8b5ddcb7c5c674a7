"""Volcano's pdb plugin: a victim that would break a disruption budget is not taken.

As `pkg/scheduler/plugins/pdb/pdb.go` at HEAD decides it, its Reclaimable and Preemptable
functions being one filter: walking the candidates in victim order, each counts down every
budget it falls under, and is dropped once one of them goes below zero. A pod falls under a
PodDisruptionBudget of its namespace whose selector (not missing, not empty) matches its
labels, unless the budget's `status.disruptedPods` already names it (the apiserver counted it).
A budget allows `status.disruptionsAllowed` pods to go. Under Volcano's victim rule
(`caldera.wholeGangVictims: false`) that filter votes in its tier like any other plugin's
(`framework.victim_tiers`).

Where Caldera goes further, and why:
- a job's own budget counts too: its PodGroup's `volcano.sh/jdb-min-available` (the running
  tasks beyond it may go) or `volcano.sh/jdb-max-unavailable` (that many tasks may be down,
  the ones not running already counted), as Volcano's tdm plugin computes its victims' limit
  (`getMaxPodEvictNum`); tdm serves only revocable zones, which Caldera does not run;
- every victim unit is also checked against the budgets as it is evicted
  (`SessionState.within_budgets`), under either victim rule: a gang that goes whole goes only
  if its budgets allow all its pods, and a budget holds even where Volcano's tier walk would
  not hear pdb (gang naming nobody ends tier 1 before the plugins after it are asked, and a
  tier that decides keeps the later tiers from being asked);
- one book per session (`Budgets`): each victim evicted counts against its budgets until the
  session ends, and a discarded statement gives it back. Volcano starts every filter call
  from the listed status again, and its evictor deletes pods rather than going through the
  Eviction API, so the status only drops once the disruption controller sees the pods gone;
- the pods seen healthy now (on a node, not being deleted, not in `disruptedPods`) less
  `status.desiredHealthy` cap a budget: a status not yet recomputed after the last session's
  evictions allows no more;
- a pod without labels matches no PodDisruptionBudget but stays a candidate (Volcano's filter
  skips it, and so never lets it go at all).

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from models.keys import JobKey
from scheduling.api.disruption import JobBudget, PodDisruptionBudget
from scheduling.api.snapshot import COMPLETED, PodKey, Snapshot, TaskInfo, TaskStatus


def pdb_allowed(budget: PodDisruptionBudget, snapshot: Snapshot) -> int:
    """How many of its pods may go this session: `disruptionsAllowed`, capped by the pods
    healthy now beyond `desiredHealthy` once the controller has computed that."""
    allowed = budget.disruptions_allowed
    if budget.desired_healthy is None:
        return max(allowed, 0)
    healthy = sum(
        1
        for pod in snapshot.pods
        if not pod.deleting
        and pod.key.partition("/")[2] not in budget.disrupted_pods
        and budget.selects(pod.namespace, pod.labels)
    )
    return max(min(allowed, healthy - budget.desired_healthy), 0)


def jdb_allowed(budget: JobBudget, tasks: Sequence[TaskInfo]) -> int:
    """tdm's getMaxPodEvictNum over the job's tasks: min-available leaves that many running;
    max-unavailable counts the tasks neither running nor finished as already down."""
    running = sum(1 for t in tasks if t.status is TaskStatus.RUNNING)
    amount = budget.of(len(tasks))
    if budget.minimum:
        return max(running - amount, 0)
    finished = sum(1 for t in tasks if t.status in COMPLETED)
    down = len(tasks) - finished - running
    return max(amount - down, 0)


class Budgets:
    """The session's disruption budgets, each with what it still allows; counted down as
    victims are evicted and up again as a discarded statement keeps them."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.left: list[int] = []  # per budget, how many of its pods may still go
        self._pdbs: dict[str, list[tuple[int, PodDisruptionBudget]]] = {}
        for budget in snapshot.budgets:
            index = self._add(pdb_allowed(budget, snapshot))
            self._pdbs.setdefault(budget.namespace, []).append((index, budget))
        self._jobs: dict[JobKey, int] = {}
        for job in snapshot.jobs:
            if job.budget is not None:
                self._jobs[job.key] = self._add(jdb_allowed(job.budget, snapshot.tasks_of(job.key)))
        self._memo: dict[PodKey, tuple[int, ...]] = {}

    def _add(self, allowed: int) -> int:
        self.left.append(allowed)
        return len(self.left) - 1

    def of(self, task: TaskInfo) -> tuple[int, ...]:
        """The budgets the task counts against (their indices), worked out once per task."""
        found = self._memo.get(task.key)
        if found is None:
            name = task.key.partition("/")[2]
            found = tuple(
                index
                for index, budget in self._pdbs.get(task.namespace, ())
                if name not in budget.disrupted_pods and budget.selects(task.namespace, task.labels)
            )
            if (job := self._jobs.get(task.job)) is not None:
                found += (job,)
            self._memo[task.key] = found
        return found

    def permits(self, tasks: Sequence[TaskInfo]) -> bool:
        """Every budget still allows all of `tasks` to go together (a whole gang or one)."""
        wanted = Counter(index for task in tasks for index in self.of(task))
        return all(self.left[index] >= count for index, count in wanted.items())

    def vote(self, found: Sequence[TaskInfo]) -> list[TaskInfo]:
        """pdb's filter over candidates in victim order (pdbFilterFn): each counts down its
        budgets, taken or not, and is taken while none of them is below zero."""
        left = list(self.left)
        out = []
        for task in found:
            indices = self.of(task)
            for index in indices:
                left[index] -= 1
            if all(left[index] >= 0 for index in indices):
                out.append(task)
        return out

    def spend(self, task: TaskInfo, count: int) -> None:
        """`count` more of the task's budgets used (1: evicted; -1: the eviction undone)."""
        for index in self.of(task):
            self.left[index] -= count

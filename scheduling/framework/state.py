"""The session's working copy of a snapshot: what the actions change as they decide.

Volcano mutates deep-cloned cache objects in place; here the snapshot stays frozen and this
object holds the per-session maps (nodes, task statuses, queue usage, PodGroup phases, fit
errors) that the actions update through a handful of methods, so the node, queue and job
books always move together and a `Statement` can undo exactly what it did. It lives for one
`run_session` call and is never returned: the result is built from it at the end.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from fractions import Fraction

from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api import jobs
from scheduling.api.job_facts import FactMemo, JobFacts
from scheduling.api.result import Eviction
from scheduling.api.snapshot import (
    PREEMPTABLE,
    JobInfo,
    NodeInfo,
    NodeName,
    PodKey,
    QueueInfo,
    Snapshot,
    TaskInfo,
    TaskStatus,
)
from scheduling.api.vectors import EMPTY, Missing, Resources, total
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.tiers import Point
from scheduling.plugins import (
    capacity,
    dynamicresources,
    extender,
    hdrf,
    namespace_subtrees,
    nodegroup,
    pdb,
    podview,
    proportion,
    queuerank,
    resourcequota,
)


class SessionState:
    """Mutable books for one session; every collection is keyed and read in sorted order."""

    def __init__(
        self,
        snapshot: Snapshot,
        config: SessionConfig | None = None,
        memo: FactMemo | None = None,  # None: every job's facts made afresh
    ) -> None:
        settings = config or SessionConfig()
        self.config = settings
        self.snapshot = snapshot
        self.nodes: dict[NodeName, NodeInfo] = {n.name: n for n in snapshot.nodes}
        # The pods on each node for the rules about other pods; moves with `_book`.
        self.pods = podview.PodView(snapshot, self.nodes)
        # Which devices the pods' ResourceClaims hold; moves with `_book` too.
        self.devices = dynamicresources.DeviceView(snapshot.devices, self.nodes)
        # Each with its queue's nodegroup rule when the plugin runs.
        self.tasks: dict[PodKey, TaskInfo] = nodegroup.session_tasks(snapshot, settings.nodegroup)
        self.jobs: dict[JobKey, JobInfo] = {j.key: j for j in snapshot.jobs}
        self.queues: dict[QueueName, QueueInfo] = {q.name: q for q in snapshot.queues}
        self.job_tasks: dict[JobKey, list[PodKey]] = {
            key: [t.key for t in snapshot.tasks_of(key)] for key in self.jobs
        }
        memo = memo or FactMemo()
        memo.begin()
        # Each job's books as the session opens (made again only for jobs that changed).
        self.facts: dict[JobKey, JobFacts] = {
            key: memo.get(job, self.tasks_of(key)) for key, job in self.jobs.items()
        }
        queue_demands = proportion.demands(snapshot, self.facts)
        self.demands = {d.name: d for d in queue_demands}
        guaranteed = proportion.total_guarantee(snapshot.queues)
        cluster = self.cluster = snapshot.total_resource
        # The capacity plugin instead of proportion: each queue's quota from its own numbers.
        self.capacity: capacity.Capacity | None = None
        grafting: dict[QueueName, str] = {}  # NamespaceQueues whose chain finds no cluster queue
        if settings.capacity:
            built = capacity.build(snapshot, queue_demands, settings.hierarchy)
            self.capacity, grafting = namespace_subtrees.graft(built, snapshot, queue_demands)
            attrs = self.capacity.attrs.values()
            self.deserved = {a.name: a.deserved for a in attrs}
            self.real_capability = {a.name: a.real_capability for a in attrs}
        else:
            self.deserved = dict(proportion.water_fill(cluster, queue_demands, guaranteed))
            self.real_capability = {
                d.name: proportion.real_capability(cluster, guaranteed, d) for d in queue_demands
            }
        self.queue_inqueue = {d.name: d.inqueue for d in queue_demands}
        self.job_allocated = {key: f.allocated for key, f in self.facts.items()}
        self.queue_allocated: dict[QueueName, Resources] = {d.name: EMPTY for d in queue_demands}
        for key, held in self.job_allocated.items():
            queue = self.jobs[key].queue
            self.queue_allocated[queue] = self.allocated_of(queue).add(held)
        # drf with enableHierarchy: the queues' tree over the job books; None: it is off.
        self.hdrf = hdrf.Hdrf(snapshot, self.job_allocated) if settings.drf_hierarchy else None
        # Per job, the node-fit failures of its tasks, in the order they were found.
        self.fit_errors: dict[JobKey, dict[PodKey, str]] = {}
        # Tasks skipped without a node-fit failure of their own (queue share), and why.
        self.notes: dict[PodKey, str] = {}
        # Queues that place nothing this session whatever their quota, and why: NamespaceQueues
        # not Open and Ready, missing, unparsable, outside any tree, or without capacity.
        self.refused = namespace_subtrees.refusals(snapshot, self.capacity, grafting)
        # Per job, why it was not even tried (enqueue refused, queue used up, queue refused).
        self.job_errors: dict[JobKey, str] = {
            key: why for key, job in self.jobs.items() if (why := self.refused.get(job.queue))
        }
        # Tasks whose allocation a discarded statement undid: the node they would have had.
        self.discarded: dict[PodKey, NodeName] = {}
        self.dispatched: list[PodKey] = []
        # Running pods to delete for starving gangs, in the order they were committed.
        self.evictions: list[Eviction] = []
        # The extender plugin over its port, set by `run_session`; None: off or not reachable.
        self.extender: extender.Extender | None = None
        # Gangs that can never be ready with the tasks they have (JobValid at session open).
        self.invalid: dict[JobKey, tuple[str, str]] = {
            key: f.invalid for key, f in self.facts.items() if f.invalid is not None
        }
        # The pdb plugin's disruption budgets, counted down as victims go; None: it is off.
        self.budgets: pdb.Budgets | None = pdb.Budgets(snapshot) if settings.runs("pdb") else None
        # The resourcequota plugin's namespace quotas, charged as enqueue admits; None: it is off.
        self.quotas: resourcequota.QuotaBook | None = (
            resourcequota.QuotaBook(snapshot) if settings.runs("resourcequota") else None
        )

    def tasks_of(self, key: JobKey) -> list[TaskInfo]:
        return [self.tasks[k] for k in self.job_tasks.get(key, [])]

    def is_ready(self, job: JobInfo) -> bool:
        """The gang's JobReady over its current tasks: the open's answer while none moved."""
        tasks = self.tasks_of(job.key)
        facts = self.facts.get(job.key)
        if facts is not None and facts.holds(job, tasks):
            return facts.ready
        return jobs.is_ready(job, tasks)

    def allocated_of(self, queue: QueueName) -> Resources:
        return self.queue_allocated.get(queue, EMPTY)

    def deserved_of(self, queue: QueueName) -> Resources:
        return self.deserved.get(queue, EMPTY)

    def queue_share(self, queue: QueueName) -> Fraction:
        if self.capacity is not None:
            held = self._subtree_allocated(queue)
            return queuerank.queue_share(held, self.deserved_of(queue))
        return proportion.queue_share(self.allocated_of(queue), self.deserved_of(queue))

    # The queue plugin's votes: the actions ask here and the session's plugin answers.

    def _subtree_allocated(self, queue: QueueName) -> Resources:
        attr = self.capacity.attrs.get(queue) if self.capacity is not None else None
        if attr is None or len(attr.subtree) == 1:
            return self.allocated_of(queue)
        return total(self.allocated_of(q) for q in attr.subtree)

    def queue_rank(self, queue: QueueName) -> Fraction | queuerank.QueueRank:
        """The queue's place in queue order after its priority: lowest share first."""
        if self.capacity is not None:
            return queuerank.rank(self.capacity, self.queue_allocated, queue)
        return self.queue_share(queue)

    def queue_blocked(self, queue: QueueName) -> str | None:
        """Why the queue takes nothing this session whatever its quota; None: quota decides."""
        if (refused := self.refused.get(queue)) is not None:
            return refused
        return None if self.capacity is None else capacity.blocked(self.capacity, queue)

    def queue_full(self, queue: QueueName, request: Resources) -> str:
        """Why an Open queue may not take a task asking `request`, for the task's message."""
        if (refused := self.refused.get(queue)) is not None:
            return refused
        if self.capacity is None:
            return f"queue {queue} would exceed its deserved share"
        if (blocked := capacity.blocked(self.capacity, queue)) is not None:
            return blocked
        full = capacity.limited_by(self.capacity, self.queue_allocated, queue, request)
        if full is None or full == queue:
            return f"queue {queue} would exceed its real capability"
        return f"queue {queue} would exceed the real capability of its ancestor queue {full}"

    def queue_allocatable(self, queue: QueueName, request: Resources) -> bool:
        """The queue may take a task asking `request` now (allocate, preempt)."""
        state = self.queues[queue].state
        if queue in self.refused:
            return False
        if self.capacity is not None:
            return capacity.allocatable(self.capacity, state, self.queue_allocated, queue, request)
        return proportion.allocatable(
            state, self.allocated_of(queue), self.deserved_of(queue), request
        )

    def queue_overused(self, queue: QueueName) -> bool:
        """The queue is skipped altogether (proportion: deserved used up; capacity: never,
        its real capability stops each task instead)."""
        if self.capacity is not None:
            return False
        return proportion.overused(self.allocated_of(queue), self.deserved_of(queue))

    def queue_preemptive(self, queue: QueueName, request: Resources) -> bool:
        """The queue may evict others' tasks to take one asking `request` (reclaim); under
        proportion the same vote as allocation's."""
        if self.capacity is None or queue in self.refused:
            return self.queue_allocatable(queue, request)
        state = self.queues[queue].state
        return capacity.preemptive(self.capacity, state, self.queue_allocated, queue, request)

    def queue_gives_up(
        self, queue: QueueName, victims: list[TaskInfo], reclaimer: TaskInfo | None
    ) -> bool:
        """The victim queue may lose all of `victims` to reclaim, one after the other."""
        held = self.allocated_of(queue)
        if self.capacity is not None:
            return capacity.gives_up(self.capacity, held, queue, victims, reclaimer)
        deserved = self.deserved_of(queue)
        for task in victims:
            if held.less_equal(deserved, Missing.ZERO):
                return False
            held = held.sub(task.request)
        return True

    def queue_enqueueable(self, queue: QueueName, min_request: Resources) -> bool:
        """The queue has room to admit a job with this minResources (enqueue)."""
        state = self.queues[queue].state
        if queue in self.refused:
            return False
        if self.capacity is not None:
            return capacity.enqueueable(
                self.capacity,
                state,
                self.queue_allocated,
                self.queue_inqueue,
                queue,
                min_request,
            )
        return proportion.enqueueable(
            state,
            self.demands[queue],
            self.queue_inqueue[queue],
            self.real_capability[queue],
            min_request,
        )

    def within_budgets(self, keys: tuple[PodKey, ...], point: Point) -> bool:
        """pdb, asked of each victim unit as it is evicted: every disruption budget its tasks
        (those not gone already) count against still allows them all. True where pdb is off
        or its switch for `point` is."""
        if self.budgets is None or "pdb" not in self.config.speakers(point):
            return True
        going = [self.tasks[k] for k in keys if self.tasks[k].status in PREEMPTABLE]
        return self.budgets.permits(going)

    def set_phase(self, key: JobKey, phase: PodGroupPhase) -> None:
        self.jobs[key] = self.jobs[key].model_copy(update={"phase": phase})

    def _book(self, task: TaskInfo, node: NodeName, bucket: str, sign: int) -> None:
        """Move a task's request on or off its node's `bucket` and its queue and job books.

        `used` is an allocation (it takes idle room), `pipelined` a task waiting for room
        being released, `releasing` an evicted task whose room frees up once it is gone. A
        task pipelined onto a node counts for its queue and job as if allocated; an evicted
        one stops counting: these are the proportion and drf plugins' event handlers. The
        task joins or leaves its node's pods alike (an evicted one leaves, as Volcano's
        predicates plugin removes it from the node).
        """
        if (sign > 0) != (bucket == "releasing"):
            self.pods.add(task, node)
        else:
            self.pods.remove(task, node)
        if bucket == "releasing":  # its devices are free for pods pipelined behind it only
            self.devices.evicted(task, sign > 0)
        elif sign > 0:
            self.devices.add(task, node, future=bucket == "pipelined")
        else:
            self.devices.remove(task, node)
        move = Resources.add if sign > 0 else Resources.sub
        current = self.nodes[node]
        update: dict[str, Resources] = {bucket: move(getattr(current, bucket), task.request)}
        if bucket == "used":
            update["nonzero_used"] = move(current.nonzero_used, task.nonzero_request)
        self.nodes[node] = current.model_copy(update=update)
        held = -sign if bucket == "releasing" else sign
        holds = Resources.add if held > 0 else Resources.sub
        queue = self.jobs[task.job].queue
        self.queue_allocated[queue] = holds(self.allocated_of(queue), task.request)
        self.job_allocated[task.job] = holds(self.job_allocated[task.job], task.request)
        if self.hdrf is not None:
            self.hdrf.moved()

    def _set(self, key: PodKey, status: TaskStatus, node: NodeName | None) -> None:
        self.tasks[key] = self.tasks[key].model_copy(update={"status": status, "node_name": node})

    def allocate(self, key: PodKey, node: NodeName) -> None:
        """Pending -> Allocated on `node`, in the session only (Statement.Allocate)."""
        task = self.tasks[key]
        if task.status is not TaskStatus.PENDING or node not in self.nodes:
            raise ValueError(f"task {key}: cannot allocate from status {task.status} to {node}")
        self._set(key, TaskStatus.ALLOCATED, node)
        self._book(task, node, "used", +1)

    def deallocate(self, key: PodKey) -> None:
        """Allocated -> Pending, remembering the node for the pod's "could go to" message."""
        task = self.tasks[key]
        if task.status is not TaskStatus.ALLOCATED or task.node_name is None:
            raise ValueError(f"task {key}: cannot deallocate from status {task.status}")
        self._book(task, task.node_name, "used", -1)
        self.discarded[key] = task.node_name
        self._set(key, TaskStatus.PENDING, None)

    def pipeline(self, key: PodKey, node: NodeName) -> None:
        """Pending -> Pipelined on `node`: it waits there for room being released."""
        task = self.tasks[key]
        if task.status is not TaskStatus.PENDING or node not in self.nodes:
            raise ValueError(f"task {key}: cannot pipeline from status {task.status} to {node}")
        self._set(key, TaskStatus.PIPELINED, node)
        self._book(task, node, "pipelined", +1)

    def unpipeline(self, key: PodKey) -> None:
        """Pipelined -> Pending (a discarded statement)."""
        task = self.tasks[key]
        if task.status is not TaskStatus.PIPELINED or task.node_name is None:
            raise ValueError(f"task {key}: cannot unpipeline from status {task.status}")
        self._book(task, task.node_name, "pipelined", -1)
        self._set(key, TaskStatus.PENDING, None)

    def evict(self, key: PodKey) -> TaskStatus:
        """Running/Bound -> Releasing; returns the status to restore should it be undone."""
        task = self.tasks[key]
        if task.status not in PREEMPTABLE or task.node_name is None:
            raise ValueError(f"task {key}: cannot evict from status {task.status}")
        self._set(key, TaskStatus.RELEASING, task.node_name)
        self._book(task, task.node_name, "releasing", +1)
        if self.budgets is not None:
            self.budgets.spend(task, 1)
        return task.status

    def unevict(self, key: PodKey, status: TaskStatus) -> None:
        """Releasing -> `status` (a discarded statement: the victim keeps running)."""
        task = self.tasks[key]
        if task.status is not TaskStatus.RELEASING or task.node_name is None:
            raise ValueError(f"task {key}: cannot unevict from status {task.status}")
        self._book(task, task.node_name, "releasing", -1)
        self._set(key, status, task.node_name)
        if self.budgets is not None:
            self.budgets.spend(task, -1)

    def dispatch(self, key: PodKey) -> None:
        """Allocated -> Binding: the placement leaves the session as a result."""
        self.tasks[key] = self.tasks[key].model_copy(update={"status": TaskStatus.BINDING})
        self.discarded.pop(key, None)
        self.dispatched.append(key)

    def record_fit_error(self, job: JobKey, task: PodKey, message: str) -> None:
        self.fit_errors.setdefault(job, {})[task] = message

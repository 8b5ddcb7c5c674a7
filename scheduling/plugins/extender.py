"""The extender plugin: an HTTP scheduler extender asked at Volcano's extension points.

Volcano's `pkg/scheduler/plugins/extender` posts JSON to `<extender.urlPrefix>/<verb>` for
each verb configured: onSessionOpen/onSessionClose around the session, predicate per task and
node, prioritize per task over its candidate nodes (scores added to the other plugins' as
they are, no weight), preemptable/reclaimable over one node's victim candidates, and
jobEnqueueable per job at enqueue. `extender.ignorable` decides what a failed call means
(no answer, status not 200, undecodable body, timeout): ignorable, the predicate passes, the
scores are left out and enqueue is permitted; not, the node fails, the task gets no node from
that candidate list and enqueue is rejected. A failed preemptable/reclaimable names nobody
either way, as Volcano's nil victims end the tier. An answer that says "error" is an error
whatever `ignorable` says, as in Volcano. `extender.managedResources` limits the calls about
a task to tasks asking one of those resources (Volcano's IsInterested); jobEnqueueable is
asked of every job, as in Volcano.

Verbs Caldera does not build are refused at load by their argument (`UNBUILT`, with why).
The calls go through `api.extender.ExtenderPort`, which the shell implements over HTTP.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from fractions import Fraction
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from models.duration import positive_duration
from scheduling.api import extender as wire
from scheduling.api.snapshot import JobInfo, NodeInfo, NodeName, Snapshot, TaskInfo
from scheduling.api.vectors import Number
from scheduling.api.votes import Vote

PLUGIN: Final = "extender"
URL_PREFIX: Final = "extender.urlPrefix"
HTTP_TIMEOUT: Final = "extender.httpTimeout"
IGNORABLE: Final = "extender.ignorable"
MANAGED_RESOURCES: Final = "extender.managedResources"
# The verbs Caldera asks: argument key -> ExtenderConfig field.
VERBS: Final[Mapping[str, str]] = {
    "extender.onSessionOpenVerb": "session_open",
    "extender.onSessionCloseVerb": "session_close",
    "extender.predicateVerb": "predicate",
    "extender.prioritizeVerb": "prioritize",
    "extender.preemptableVerb": "preemptable",
    "extender.reclaimableVerb": "reclaimable",
    "extender.jobEnqueueableVerb": "job_enqueueable",
}
# Volcano's verbs Caldera refuses when set, with why (the reference page lists them).
UNBUILT: Final[Mapping[str, str]] = {
    "extender.queueOverusedVerb": "Caldera's allocate asks the queue plugin alone whether a "
    "queue is overused",
    "extender.jobReadyVerb": "Caldera's gang readiness is its own rule, asked of no plugin",
    "extender.jobEnqueuedVerb": "Caldera's enqueue tells no plugin of an admitted job",
    "extender.allocateFuncVerb": "Caldera's session books call no plugin event handler",
    "extender.deallocateFuncVerb": "Caldera's session books call no plugin event handler",
}
KEYS: Final = frozenset({URL_PREFIX, HTTP_TIMEOUT, IGNORABLE, MANAGED_RESOURCES} | VERBS.keys())
DEFAULT_TIMEOUT: Final = timedelta(seconds=1)  # Volcano's
_GO_BOOLS: Final = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_GO_BOOLS.update(dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False))


class ExtenderConfig(BaseModel):
    """The plugin's arguments; a verb "" is not asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url_prefix: str
    http_timeout: timedelta = DEFAULT_TIMEOUT
    session_open: str = ""
    session_close: str = ""
    predicate: str = ""
    prioritize: str = ""
    preemptable: str = ""
    reclaimable: str = ""
    job_enqueueable: str = ""
    ignorable: bool = False
    managed_resources: frozenset[str] = Field(default_factory=frozenset)  # empty: every task


def parse(arguments: Mapping[str, object]) -> ExtenderConfig:
    """The arguments, each checked: ValueError names the key and what is wrong."""

    def fail(key: str, why: str) -> ValueError:
        return ValueError(f"plugin {PLUGIN}: argument {key} {why}")

    for key, why in UNBUILT.items():
        if arguments.get(key):
            raise fail(key, f"is not built in Caldera: {why}")
    url = arguments.get(URL_PREFIX)
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise fail(URL_PREFIX, f"must be an http:// or https:// URL, not {url!r}")
    read: dict[str, object] = {"url_prefix": url}
    for key, field in VERBS.items():
        verb = arguments.get(key, "")
        if not isinstance(verb, str) or "/" in verb.strip("/"):
            raise fail(key, f"must be a verb (one path segment), not {verb!r}")
        read[field] = verb.strip("/")
    if HTTP_TIMEOUT in arguments:
        given = arguments[HTTP_TIMEOUT]
        timeout = positive_duration(given) if isinstance(given, str) else None
        if timeout is None:
            raise fail(
                HTTP_TIMEOUT, f"must be a duration above zero such as '100ms', not {given!r}"
            )
        read["http_timeout"] = timeout
    if IGNORABLE in arguments:
        given = arguments[IGNORABLE]
        on = given if isinstance(given, bool) else _GO_BOOLS.get(str(given))
        if on is None:
            raise fail(IGNORABLE, f"must be true or false, not {given!r}")
        read["ignorable"] = on
    if MANAGED_RESOURCES in arguments:
        given = arguments[MANAGED_RESOURCES]
        if not isinstance(given, list) or not all(isinstance(r, str) for r in given):
            raise fail(MANAGED_RESOURCES, f"must be a list of resource names, not {given!r}")
        read["managed_resources"] = frozenset(given)
    return ExtenderConfig.model_validate(read)


def _wanted(task: TaskInfo) -> set[str]:
    """The resources the task asks (IsInterested reads the containers' request and limit
    names; an extended resource's limit is its request, so the request alone tells)."""
    return {name for name, value in task.request.dimensions() if value}


class Extender:
    """One session's extender: the port, the arguments, and the verbs the tiers' switches
    leave on (`on`: ExtenderConfig field names, e.g. `predicate`)."""

    def __init__(self, port: wire.ExtenderPort, config: ExtenderConfig, on: frozenset[str]) -> None:
        self._port, self.config, self._on = port, config, on

    def asks(self, verb: str) -> bool:
        """The verb is configured and its point's switch is on."""
        return verb in self._on and bool(getattr(self.config, verb))

    def interested(self, task: TaskInfo) -> bool:
        managed = self.config.managed_resources
        return not managed or bool(_wanted(task) & managed)

    def open(self, snapshot: Snapshot) -> bool:
        """onSessionOpen; False: it failed and is not ignorable, so the plugin registers
        nothing this session (Volcano returns from OnSessionOpen before any Add*Fn)."""
        if not self.config.session_open:
            return True
        request = wire.SessionOpenRequest(
            jobs={j.key: wire.job_body(j, snapshot.tasks_of(j.key)) for j in snapshot.jobs},
            nodes={n.name: wire.node_body(n) for n in snapshot.nodes},
            queues={
                q.name: wire.QueueBody(uid=q.name, name=q.name, weight=q.weight)
                for q in snapshot.queues
            },
            node_list=[n.name for n in snapshot.nodes],
        )
        failed = self._port.session_open(request)
        return failed is None or self.config.ignorable

    def close(self) -> None:
        """onSessionClose; its failure changes nothing (Volcano logs it)."""
        if self.config.session_close:
            self._port.session_close()

    def refusals(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], preempting: bool = False
    ) -> dict[NodeName, str]:
        """The nodes the predicate verb refuses, with its reason, in one batch per task.
        For preempt and reclaim (`preempting`), an Unschedulable answer keeps the node, as
        Volcano's PredicateForPreemptAction does: evicting may make room."""
        if not nodes or not self.asks("predicate") or not self.interested(task):
            return {}
        body = wire.task_body(task)
        requests = [wire.PredicateRequest(task=body, node=wire.node_body(n)) for n in nodes]
        refused: dict[NodeName, str] = {}
        for node, answer in zip(nodes, self._port.predicate(requests), strict=True):
            if isinstance(answer, wire.Failure):
                if not self.config.ignorable:
                    refused[node.name] = f"extender: {answer.message}"
                continue
            if not answer.error_message:
                continue
            code = answer.code if answer.code != wire.SUCCESS else wire.ERROR
            if not (preempting and code == wire.UNSCHEDULABLE):
                refused[node.name] = answer.error_message
        return refused

    def scores(
        self, task: TaskInfo, nodes: Sequence[NodeInfo]
    ) -> dict[NodeName, Fraction] | wire.Failure:
        """The prioritize verb's scores, added as they are; a Failure: no node of this
        candidate list is chosen (Volcano's PrioritizeNodes returns no scores)."""
        if len(nodes) < 2 or not self.asks("prioritize") or not self.interested(task):
            return {}  # Volcano takes a lone candidate without scoring it
        request = wire.PrioritizeRequest(
            task=wire.task_body(task), nodes=[wire.node_body(n) for n in nodes]
        )
        answer = self._port.prioritize(request)
        if isinstance(answer, wire.Failure):
            return {} if self.config.ignorable else answer
        if answer.error_message or answer.node_score is None:
            return wire.Failure(message=f"extender prioritize: {answer.error_message}")
        names = {n.name for n in nodes}
        return {
            NodeName(name): Fraction(score)
            for name, score in answer.node_score.items()
            if name in names
        }

    def victims(
        self, verb: str, evictor: TaskInfo, found: Sequence[TaskInfo]
    ) -> list[TaskInfo] | None:
        """preemptable/reclaimable: the candidates it names, in victim order; None: it
        abstains. A failure names nobody, ignorable or not (Volcano's nil victims)."""
        if not self.asks(verb) or not self.interested(evictor):
            return None
        request = wire.EvictableRequest(
            evictor=wire.task_body(evictor), evictees=[wire.task_body(t) for t in found]
        )
        call = self._port.preemptable if verb == "preemptable" else self._port.reclaimable
        answer = call(request)
        if isinstance(answer, wire.Failure):
            return []
        if answer.status == 0:
            return None
        named = {v.uid for v in answer.victims or ()}
        return [t for t in found if (t.uid or t.key) in named]

    def enqueueable(self, job: JobInfo, tasks: Sequence[TaskInfo]) -> Vote:
        """jobEnqueueable's vote (every job, interested or not, as in Volcano)."""
        if not self.asks("job_enqueueable"):
            return Vote.ABSTAIN
        answer = self._port.job_enqueueable(
            wire.JobEnqueueableRequest(job=wire.job_body(job, tasks))
        )
        if isinstance(answer, wire.Failure):
            return Vote.PERMIT if self.config.ignorable else Vote.REJECT
        return Vote.REJECT if answer.status < 0 else Vote.PERMIT if answer.status else Vote.ABSTAIN


Failure = wire.Failure


def refuse(
    asked: Extender | None,
    task: TaskInfo,
    nodes: Mapping[NodeName, NodeInfo],
    reasons: dict[NodeName, tuple[str, ...]],
    preempting: bool = False,
) -> None:
    """Add the extender's refusals to `reasons` (node -> why not, empty: fits), asking about
    the nodes every other predicate passed only, in one batch (None: the plugin is off)."""
    if asked is None:
        return
    passing = [nodes[name] for name, why in reasons.items() if not why]
    for name, why in asked.refusals(task, passing, preempting).items():
        reasons[name] = (why,)


def with_scores(
    asked: Extender | None,
    task: TaskInfo,
    nodes: Sequence[NodeInfo],
    extra: Mapping[NodeName, Number] | None,
) -> Mapping[NodeName, Number] | wire.Failure | None:
    """`extra` (other batch scores, None: none) with the prioritize verb's added; a Failure:
    no node of `nodes` is to be chosen."""
    scores = asked.scores(task, nodes) if asked is not None else {}
    if isinstance(scores, wire.Failure) or not scores:
        return scores if isinstance(scores, wire.Failure) else extra
    base = extra or {}
    return {n.name: base.get(n.name, 0) + scores.get(n.name, 0) for n in nodes}


def passing(asked: Extender | None, task: TaskInfo, nodes: Sequence[NodeInfo]) -> list[NodeInfo]:
    """The nodes preempt and reclaim may evict on: an Unschedulable answer keeps a node
    (Volcano's PredicateForPreemptAction), any other refusal drops it."""
    if asked is None:
        return list(nodes)
    refused = asked.refusals(task, nodes, preempting=True)
    return [n for n in nodes if n.name not in refused]

"""The extender plugin over a fake `ExtenderPort`: what each verb's answers and failures do.

After Volcano's `pkg/scheduler/plugins/extender/extender.go`: predicate refusals fail nodes
(an Unschedulable one keeps the node for preempt and reclaim), prioritize's scores are added
as they are, preemptable/reclaimable narrow the victims or abstain, jobEnqueueable votes, and
`extender.ignorable` turns a failed call into a pass (predicate, enqueue) or no scores
(prioritize), while an answer that reports an error fails whatever `ignorable` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import pytest

from models.keys import JobKey
from scheduling.actions.registry import run_session
from scheduling.api import extender as wire
from scheduling.api.snapshot import NodeInfo, NodeName, PodKey, TaskInfo
from scheduling.framework import conf, victim_tiers
from scheduling.framework.tiers import PluginOn, Point
from scheduling.plugins import extender
from tests.unit.scheduling.builders import gang, make_nodes, running, session_state, snapshot

ALL_VERBS: Final = (
    "      extender.onSessionOpenVerb: onSessionOpen\n"
    "      extender.onSessionCloseVerb: onSessionClose\n"
    "      extender.predicateVerb: predicate\n"
    "      extender.prioritizeVerb: prioritize\n"
    "      extender.preemptableVerb: preemptable\n"
    "      extender.reclaimableVerb: reclaimable\n"
    "      extender.jobEnqueueableVerb: jobEnqueueable\n"
)


def _text(extra: str = "", ignorable: bool = False) -> str:
    entry = (
        "  - name: extender\n    arguments:\n      extender.urlPrefix: http://127.0.0.1:1/ext\n"
        f"{ALL_VERBS}      extender.ignorable: {str(ignorable).lower()}\n{extra}"
    )
    return conf.VOLCANO_DEFAULT.replace("  - name: nodeorder\n", "  - name: nodeorder\n" + entry)


class FakeExtender:
    """Answers as told; `fail` names the calls that fail; records every call."""

    def __init__(
        self,
        refuse: dict[str, tuple[str, int]] | None = None,  # None: refuses no node
        scores: dict[str, float] | None = None,  # None: scores nothing
        fail: frozenset[str] = frozenset(),
        victims: tuple[int, list[str] | None] = (0, None),
        enqueue: int = 0,
        score_error: str = "",
    ) -> None:
        self.refuse, self.node_scores, self.fail = refuse or {}, scores or {}, fail
        self.victim_answer, self.enqueue, self.score_error = victims, enqueue, score_error
        self.calls: list[tuple[str, int]] = []

    def _failed(self, verb: str) -> wire.Failure | None:
        return wire.Failure(message=f"{verb} is down") if verb in self.fail else None

    def session_open(self, request: wire.SessionOpenRequest) -> wire.Failure | None:
        self.calls.append(("onSessionOpen", len(request.nodes)))
        return self._failed("onSessionOpen")

    def session_close(self) -> wire.Failure | None:
        self.calls.append(("onSessionClose", 0))
        return None

    def predicate(
        self, requests: Sequence[wire.PredicateRequest]
    ) -> list[wire.PredicateResponse | wire.Failure]:
        self.calls.append(("predicate", len(requests)))
        failed = self._failed("predicate")
        out: list[wire.PredicateResponse | wire.Failure] = []
        for request in requests:
            message, code = self.refuse.get(request.node.name, ("", 0))
            out.append(failed or wire.PredicateResponse(status=message, code=code))
        return out

    def prioritize(self, request: wire.PrioritizeRequest) -> wire.PrioritizeResponse | wire.Failure:
        self.calls.append(("prioritize", len(request.nodes)))
        return self._failed("prioritize") or wire.PrioritizeResponse(
            nodeScore=self.node_scores, errorMessage=self.score_error
        )

    def _victims(self, verb: str, request: wire.EvictableRequest) -> wire.EvictableResponse:
        self.calls.append((verb, len(request.evictees)))
        status, uids = self.victim_answer
        named = None if uids is None else [wire.Victim(UID=u) for u in uids]
        return wire.EvictableResponse(status=status, victims=named)

    def preemptable(self, request: wire.EvictableRequest) -> wire.EvictableResponse | wire.Failure:
        return self._failed("preemptable") or self._victims("preemptable", request)

    def reclaimable(self, request: wire.EvictableRequest) -> wire.EvictableResponse | wire.Failure:
        return self._failed("reclaimable") or self._victims("reclaimable", request)

    def job_enqueueable(
        self, request: wire.JobEnqueueableRequest
    ) -> wire.JobEnqueueableResponse | wire.Failure:
        self.calls.append(("jobEnqueueable", len(request.job.tasks)))
        return self._failed("jobEnqueueable") or wire.JobEnqueueableResponse(status=self.enqueue)

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]


def _placed(fake: FakeExtender, ignorable: bool = False, size: int = 3) -> dict[str, str]:
    shot = snapshot(make_nodes(3, cpu="4"), [gang("g", size)])
    result = run_session(shot, conf.load(_text(ignorable=ignorable)).session, fake)
    return {p.pod.rsplit("-", 1)[1]: p.node for p in result.placements}


def test_without_answers_the_gang_spreads_by_nodeorder() -> None:
    fake = FakeExtender()
    assert _placed(fake) == {"0": "n0", "1": "n1", "2": "n2"}
    # One predicate call per task with all its candidate nodes, not one per node.
    assert [n for verb, n in fake.calls if verb == "predicate"] == [3, 3, 3]
    assert fake.verbs()[0] == "onSessionOpen" and fake.verbs()[-1] == "onSessionClose"


def test_predicate_refusal_keeps_the_node_free() -> None:
    fake = FakeExtender(refuse={"n1": ("no gpu driver", wire.UNSCHEDULABLE)})
    assert "n1" not in _placed(fake).values()


def test_predicate_refusal_of_every_node_leaves_the_reason_in_the_condition() -> None:
    fake = FakeExtender(refuse={f"n{i}": ("rack down", 0) for i in range(3)})
    shot = snapshot(make_nodes(3, cpu="4"), [gang("g", 1)])
    result = run_session(shot, conf.load(_text()).session, fake)
    assert not result.placements
    assert "3 rack down" in result.why_not[JobKey("default/g")]


def test_prioritize_scores_are_added_unweighted_and_win() -> None:
    fake = FakeExtender(scores={"n2": 1000.0})
    assert set(_placed(fake).values()) == {"n2"}


def test_with_scores_adds_the_extender_scores_to_the_others() -> None:
    fake = FakeExtender(scores={"n0": 2.5, "n1": 1.0, "elsewhere": 9.0})
    asked = extender.Extender(fake, _config(), frozenset({"prioritize"}))
    nodes = _nodes(2)
    scored = extender.with_scores(asked, _task(), nodes, {NodeName("n0"): 1})
    assert scored == {"n0": 3.5, "n1": 1.0}


@pytest.mark.parametrize(
    ("fail", "ignorable", "placed"),
    [
        pytest.param("predicate", False, 0, id="predicate-fails-nodes"),
        pytest.param("predicate", True, 3, id="predicate-ignorable-passes"),
        pytest.param("prioritize", False, 0, id="prioritize-fails-the-task"),
        pytest.param("prioritize", True, 3, id="prioritize-ignorable-no-scores"),
        pytest.param("onSessionOpen", False, 3, id="open-fails-plugin-silent"),
    ],
)
def test_failed_calls_pass_or_fail_as_volcano_does(fail: str, ignorable: bool, placed: int) -> None:
    refused = {} if fail == "prioritize" else {"n0": ("x", 1), "n1": ("x", 1)}
    fake = FakeExtender(fail=frozenset({fail}), refuse=refused)
    assert len(_placed(fake, ignorable=ignorable)) == placed
    if fail == "onSessionOpen":  # nothing asked this session but the close
        assert fake.verbs() == ["onSessionOpen", "onSessionClose"]


def test_prioritize_error_message_fails_even_when_ignorable() -> None:
    fake = FakeExtender(score_error="scorer broken")
    assert _placed(fake, ignorable=True) == {}


def test_unschedulable_keeps_a_node_for_preemption_other_codes_do_not() -> None:
    fake = FakeExtender(refuse={"n0": ("full", wire.UNSCHEDULABLE), "n1": ("gone", 3)})
    asked = extender.Extender(fake, _config(), frozenset({"predicate"}))
    kept = extender.passing(asked, _task(), _nodes(3))
    assert [n.name for n in kept] == ["n0", "n2"]


def test_managed_resources_skip_tasks_asking_none_of_them() -> None:
    fake = FakeExtender(refuse={"n0": ("x", 1)})
    config = _config().model_copy(update={"managed_resources": frozenset({"nvidia.com/gpu"})})
    asked = extender.Extender(fake, config, frozenset({"predicate"}))
    assert asked.refusals(_task(), _nodes(2)) == {}
    assert fake.calls == []


# conformance names both candidates; the extender beside it in the tier narrows them.
VICTIM_CASES = [
    pytest.param((1, ["uid-v-worker-1"]), ["v-worker-1"], id="names-one"),
    pytest.param((0, None), ["v-worker-0", "v-worker-1"], id="abstains"),
    pytest.param((-1, None), [], id="rejects-ends-the-tier"),
]


@pytest.mark.parametrize("point", [Point.PREEMPTABLE, Point.RECLAIMABLE])
@pytest.mark.parametrize(("answer", "expected"), VICTIM_CASES)
def test_victims_are_narrowed_by_the_extender(
    point: Point, answer: tuple[int, list[str] | None], expected: list[str]
) -> None:
    fake = FakeExtender(victims=answer)
    group, pods = running("v", ["n0", "n0"], min_member=1)
    for pod in pods:
        pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    state = session_state(make_nodes(1, cpu="4"), [(group, pods), gang("e", 1)])
    verb = "preemptable" if point is Point.PREEMPTABLE else "reclaimable"
    state.extender = extender.Extender(fake, _config(), frozenset({verb}))
    found = [state.tasks[PodKey(f"default/v-worker-{i}")] for i in range(2)]
    evictor = state.tasks[PodKey("default/e-worker-0")]
    tiers = ((PluginOn(name="conformance"), PluginOn(name="extender")),)
    chosen = victim_tiers.victims_for(state, tiers, point, evictor, found)
    assert [t.key.split("/")[1] for t in chosen] == expected
    assert fake.verbs() == [verb]


@pytest.mark.parametrize(
    ("status", "fail", "ignorable", "admitted"),
    [
        pytest.param(-1, False, False, False, id="rejects"),
        pytest.param(1, False, False, True, id="permits"),
        pytest.param(0, True, True, True, id="failed-ignorable-permits"),
        pytest.param(0, True, False, False, id="failed-rejects"),
    ],
)
def test_job_enqueueable_votes(status: int, fail: bool, ignorable: bool, admitted: bool) -> None:
    fake = FakeExtender(enqueue=status, fail=frozenset({"jobEnqueueable"} if fail else set()))
    group, pods = gang("g", 1)
    group["status"]["phase"] = "Pending"
    shot = snapshot(make_nodes(1, cpu="4"), [(group, pods)])
    result = run_session(shot, conf.load(_text(ignorable=ignorable)).session, fake)
    assert bool(result.placements) is admitted


# --- configuration ---------------------------------------------------------------------------


def test_arguments_are_read() -> None:
    loaded = conf.load(_text(extra="      extender.httpTimeout: 250ms\n")).session.extender
    assert loaded is not None
    assert loaded.url_prefix == "http://127.0.0.1:1/ext" and loaded.predicate == "predicate"
    assert loaded.http_timeout.total_seconds() == 0.25 and not loaded.ignorable


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        pytest.param(
            "      extender.jobReadyVerb: jobReady\n", "extender.jobReadyVerb", id="unbuilt"
        ),
        pytest.param("      extender.queueOverusedVerb: q\n", "queueOverusedVerb", id="unbuilt-2"),
        pytest.param("      extender.httpTimeout: soon\n", "extender.httpTimeout", id="timeout"),
        pytest.param("      extender.urlprefix: x\n", "extender.urlprefix", id="unknown-key"),
        pytest.param("      extender.managedResources: gpu\n", "managedResources", id="not-list"),
    ],
)
def test_bad_arguments_are_refused_by_name(extra: str, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        conf.load(_text(extra=extra))


def test_victim_verbs_are_refused_with_whole_gang_victims() -> None:
    text = _text().replace(
        "  - name: gang\n", "  - name: gang\n    arguments:\n      caldera.wholeGangVictims: true\n"
    )
    with pytest.raises(ValueError, match="preemptableVerb"):
        conf.load(text)


# --- helpers ---------------------------------------------------------------------------------


def _config() -> extender.ExtenderConfig:
    return extender.parse(
        {"extender.urlPrefix": "http://127.0.0.1:1", **dict.fromkeys(extender.VERBS, "v")}
    )


def _nodes(count: int) -> list[NodeInfo]:
    return list(snapshot(make_nodes(count, cpu="4")).nodes)


def _task() -> TaskInfo:
    return snapshot(make_nodes(1, cpu="4"), [gang("t", 1)]).tasks[0]

"""The sla plugin and the tier walk of the votes it joins (Volcano's sla.go, session_plugins.go).

Rows written from `pkg/scheduler/plugins/sla/sla.go` (jobOrderFn, permitableFn),
`pkg/scheduler/api/job_info.go` (extractWaitingTime) and `pkg/scheduler/framework/
session_plugins.go` (JobEnqueueable, JobPipelined: the first Reject ends the walk, a tier with a
Permit decides, no Permit anywhere is a yes).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.keys import JobKey
from models.scheduling import PodGroupPhase
from scheduling.actions.enqueue import CLUSTER_OVERUSED, enqueue
from scheduling.actions.registry import run_session
from scheduling.api.snapshot import JobInfo, Snapshot
from scheduling.api.votes import Vote
from scheduling.framework import ordering
from scheduling.framework.conf import load
from scheduling.framework.session_config import Action, SessionConfig
from scheduling.framework.state import SessionState
from scheduling.framework.tiers import Point, Tiers, decide, tiers_of
from scheduling.plugins import sla
from tests.unit.scheduling.builders import gang, make_node, running, snapshot

pytestmark = pytest.mark.unit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
R, A, P = Vote.REJECT, Vote.ABSTAIN, Vote.PERMIT


@pytest.mark.parametrize(
    ("tiers", "votes", "expected"),
    [
        # A Permit in the first tier decides: later tiers are not asked.
        ((("sla",), ("overcommit",)), {"sla": P, "overcommit": R}, (True, "sla")),
        # An Abstain passes the question on.
        ((("sla",), ("overcommit",)), {"sla": A, "overcommit": R}, (False, "overcommit")),
        # Within a tier the first Reject ends the walk, even after a Permit.
        ((("sla", "overcommit"),), {"sla": P, "overcommit": R}, (False, "overcommit")),
        ((("overcommit", "sla"),), {"sla": P, "overcommit": R}, (False, "overcommit")),
        # Nobody permits and nobody rejects: yes.
        ((("sla",), ("overcommit",)), {"sla": A, "overcommit": A}, (True, "")),
        # A plugin without a vote here (gang registers no JobEnqueueable) is not asked.
        ((("gang",), ("overcommit",)), {"gang": R, "overcommit": P}, (True, "overcommit")),
    ],
)
def test_enqueueable_votes_walk_the_tiers(
    tiers: tuple[tuple[str, ...], ...], votes: dict[str, Vote], expected: tuple[bool, str]
) -> None:
    calls = {name: (lambda v=v: v) for name, v in votes.items()}
    assert decide(tiers_of(*tiers), Point.JOB_ENQUEUEABLE, calls) == expected


def test_a_switched_off_point_is_not_asked() -> None:
    on = load(_conf("  - name: sla\n")).session.tiers
    off = load(_conf("  - name: sla\n    enableJobEnqueued: false\n")).session.tiers
    votes: dict[str, Callable[[], Vote]] = {"sla": lambda: P, "proportion": lambda: R}
    assert decide(on, Point.JOB_ENQUEUEABLE, votes) == (True, "sla")
    assert decide(off, Point.JOB_ENQUEUEABLE, votes) == (False, "proportion")


def _conf(first_tier_extra: str) -> str:
    return (
        'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
        f"  - name: conformance\n{first_tier_extra}- plugins:\n  - name: overcommit\n"
        "  - name: predicates\n  - name: proportion\n"
    )


def _job(name: str, minute: int, waiting: timedelta | None) -> JobInfo:
    return JobInfo(
        key=JobKey(f"ns/{name}"),
        queue="default",
        creation=T0 + timedelta(minutes=minute),
        sla_waiting=waiting,
    )


def test_jobs_with_a_limit_go_first_by_deadline() -> None:
    jobs = [
        _job("none", 0, None),
        _job("late", 1, timedelta(minutes=30)),  # deadline 00:31
        _job("soon", 5, timedelta(minutes=10)),  # deadline 00:15
    ]
    ordered = sorted(jobs, key=lambda j: sla.order(j, None))
    assert [j.key for j in ordered] == ["ns/soon", "ns/late", "ns/none"]
    # The plugin's argument gives every job without its own a limit.
    ordered = sorted(jobs, key=lambda j: sla.order(j, timedelta(minutes=5)))
    assert [j.key for j in ordered] == ["ns/none", "ns/soon", "ns/late"]


@pytest.mark.parametrize(
    ("waited", "own", "default", "now_known", "expected"),
    [
        (timedelta(minutes=9), timedelta(minutes=10), None, True, A),
        (timedelta(minutes=10), timedelta(minutes=10), None, True, P),
        (timedelta(hours=2), None, None, True, A),  # no limit: abstain forever
        (timedelta(minutes=6), None, timedelta(minutes=5), True, P),
        (timedelta(minutes=6), timedelta(minutes=10), timedelta(minutes=5), True, A),  # own wins
        (timedelta(hours=2), timedelta(minutes=10), None, False, A),  # no clock: nobody waited
    ],
)
def test_the_vote(
    waited: timedelta,
    own: timedelta | None,
    default: timedelta | None,
    now_known: bool,
    expected: Vote,
) -> None:
    job = _job("j", 0, own)
    now = T0 + waited if now_known else None
    assert sla.vote(job, default, now) is expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"volcano.sh/sla-waiting-time": "10m", "sla-waiting-time": "1h"}, timedelta(minutes=10)),
        ({"sla-waiting-time": "1h"}, timedelta(hours=1)),
        ({"volcano.sh/sla-waiting-time": "soon", "sla-waiting-time": "1h"}, timedelta(hours=1)),
        ({"sla-waiting-time": "0s"}, None),
        ({"sla-waiting-time": "-5m"}, None),
        ({}, None),
    ],
)
def test_a_podgroup_names_its_own_waiting_time(
    annotations: dict[str, str], expected: timedelta | None
) -> None:
    group, pods = gang("g", 1)
    group["metadata"]["annotations"] = annotations
    (job,) = snapshot([make_node("n0").obj()], gangs=[(group, pods)]).jobs
    assert job.sla_waiting == expected


def _full_cluster(waiting: str, now: datetime, **options: Any) -> Snapshot:
    """Two 4-CPU nodes, all but one CPU held by a running job; a 4-pod gang created at T0 and
    a one-pod job created a minute later both wait."""
    big, big_pods = gang("big", 4, minResources={"cpu": "4"})
    big["metadata"]["creationTimestamp"] = T0.isoformat()
    big["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": waiting}
    small, small_pods = gang("small", 1, minResources={"cpu": "1"})
    for group in (big, small):
        group["status"]["phase"] = "Pending"
    small["metadata"]["creationTimestamp"] = (T0 + timedelta(minutes=1)).isoformat()
    nodes = [make_node(f"n{i}").obj() for i in range(2)]
    busy = running("busy", ["n0", "n0", "n0", "n0", "n1", "n1", "n1"])
    return snapshot(nodes, gangs=[busy, (big, big_pods), (small, small_pods)], now=now, **options)


ENQUEUE_ONLY = SessionConfig(actions=(Action.ENQUEUE,))
SLA_FIRST = load(_conf("  - name: sla\n").replace("enqueue, allocate", "enqueue")).session


def _phases(world: Snapshot, config: SessionConfig) -> dict[str, PodGroupPhase]:
    result = run_session(world, config)
    new = {u.job: u.new for u in result.phase_updates}
    return {
        name: new.get(JobKey(f"default/{name}"), PodGroupPhase.PENDING) for name in ("big", "small")
    }


def test_without_sla_the_gang_waits_while_a_small_job_is_enqueued() -> None:
    """The starvation sla is for: the cluster's room fits the small job, never the gang."""
    world = _full_cluster("10m", now=T0 + timedelta(hours=1))
    assert _phases(world, ENQUEUE_ONLY) == {
        "big": PodGroupPhase.PENDING,
        "small": PodGroupPhase.INQUEUE,
    }


def test_past_its_waiting_time_the_gang_is_enqueued_and_holds_the_room() -> None:
    world = _full_cluster("10m", now=T0 + timedelta(minutes=11))
    assert _phases(world, SLA_FIRST) == {
        "big": PodGroupPhase.INQUEUE,
        "small": PodGroupPhase.PENDING,  # the gang's reservation leaves no room
    }
    state = SessionState(world, SLA_FIRST)
    keys = sorted(state.jobs, key=lambda k: ordering.job_order(state, k))
    assert keys.index(JobKey("default/big")) < keys.index(JobKey("default/small"))


def test_within_its_waiting_time_the_gang_waits_as_without_sla() -> None:
    world = _full_cluster("10m", now=T0 + timedelta(minutes=9))
    assert _phases(world, SLA_FIRST)["big"] is PodGroupPhase.PENDING


def test_sla_after_overcommit_is_never_asked_when_overcommit_rejects() -> None:
    late = _conf("").replace("  - name: proportion\n", "  - name: proportion\n  - name: sla\n")
    config = load(late.replace("enqueue, allocate", "enqueue")).session
    world = _full_cluster("10m", now=T0 + timedelta(hours=1))
    state = SessionState(world, config)
    enqueue(state, config)
    assert state.job_errors[JobKey("default/big")] == CLUSTER_OVERUSED


def test_the_order_of_tiers_in_the_config_gives_jobs_order() -> None:
    tiers: Tiers = tiers_of(("sla", "priority", "gang"), ("predicates", "proportion"))
    world = _full_cluster("10m", now=T0)
    state = SessionState(world, SessionConfig(tiers=tiers))
    pending = [k for k in sorted(state.jobs) if state.jobs[k].is_pending]
    assert sorted(pending, key=lambda k: ordering.job_order(state, k))[0] == "default/big"

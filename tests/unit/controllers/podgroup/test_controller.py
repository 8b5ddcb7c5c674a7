"""The PodGroup controller's decisions, input by input, asserted whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controllers import effects as fx
from controllers.outcomes import ActionFailed, TimerFired
from controllers.podgroup import build, controller
from controllers.podgroup import effects as pg_fx
from controllers.podgroup.state import PodGroupRecord
from models import labels
from models.meta import OwnerReference
from models.signals import podgroup as podgroup_signals

pytestmark = pytest.mark.unit

NOW = datetime(2025, 1, 1, tzinfo=UTC)
RS = OwnerReference(
    api_version="apps/v1", kind="ReplicaSet", name="rs1", uid="rs-uid", controller=True
)
UPPER = {labels.GROUP_MIN_MEMBER: "3"}


def pod(name: str, owned: bool = True) -> podgroup_signals.WorkloadPod:
    return podgroup_signals.WorkloadPod(
        namespace="ns",
        name=name,
        uid=f"uid-{name}",
        owner_references=[RS] if owned else [],
        requests={"cpu": "1", "pods": "1"},
    )


def seen(name: str, owned: bool = True) -> podgroup_signals.WorkloadPodSeen:
    return podgroup_signals.WorkloadPodSeen(pod=pod(name, owned))


def idle(number: int, at: datetime = NOW) -> fx.StartTimer:
    return fx.StartTimer(
        key=controller.IDLE_TIMER,
        fires_at=at + controller.IDLE,
        summary=f"end: no new pod for {controller.IDLE}",
        timer=number,
    )


def read_state(*names: str, upper: dict[str, str] | None = None) -> PodGroupRecord:
    """Pods seen, the owner read (`upper`) or not yet."""
    state = PodGroupRecord()
    for name in names:
        state = controller.decide(state, seen(name), NOW).state
    if upper is not None:
        state = controller.decide(state, controller.OwnersRead(annotations=upper), NOW).state
    return state


def test_first_pod_reads_its_owner() -> None:
    decision = controller.decide(PodGroupRecord(), seen("a"), NOW)
    assert decision.effects == (pg_fx.ReadOwners(namespace="ns", owners=[RS]),)
    assert decision.state.name == "podgroup-rs-uid"
    assert list(decision.state.waiting) == ["uid-a"]


def test_owner_read_creates_group_and_annotates() -> None:
    state = read_state("a")
    decision = controller.decide(state, controller.OwnersRead(annotations=UPPER), NOW)
    group = build.pod_group(pod("a"), UPPER)
    assert decision.effects == (
        pg_fx.ApplyPodGroup(
            group=group, group_name="podgroup-rs-uid", namespace="ns", pods={"a": "uid-a"}
        ),
        idle(1),
    )
    assert decision.state.applied == group
    assert decision.state.idle_until == NOW + controller.IDLE


def test_bare_pod_needs_no_read() -> None:
    decision = controller.decide(PodGroupRecord(), seen("solo", owned=False), NOW)
    assert [type(e) for e in decision.effects] == [pg_fx.ApplyPodGroup, fx.StartTimer]
    apply = decision.effects[0]
    assert isinstance(apply, pg_fx.ApplyPodGroup)
    assert apply.group_name == "podgroup-uid-solo"


def test_next_pod_with_fresh_reading_only_annotates() -> None:
    state = read_state("a", upper=UPPER)
    decision = controller.decide(state, seen("b"), NOW + timedelta(seconds=5))
    assert decision.effects[0] == pg_fx.ApplyPodGroup(
        group=None, group_name="podgroup-rs-uid", namespace="ns", pods={"a": "uid-a", "b": "uid-b"}
    )


def test_next_pod_after_fresh_window_reads_again() -> None:
    state = read_state("a", upper=UPPER)
    later = NOW + controller.FRESH
    decision = controller.decide(state, seen("b"), later)
    assert decision.effects == (pg_fx.ReadOwners(namespace="ns", owners=[RS]),)


def test_changed_owner_annotation_updates_group() -> None:
    state = read_state("a", upper=UPPER)
    state = controller.decide(state, controller.PodsAnnotated(uids=["uid-a"]), NOW).state
    state = controller.decide(state, seen("b"), NOW + controller.FRESH).state
    changed = {labels.GROUP_MIN_MEMBER: "4"}
    decision = controller.decide(state, controller.OwnersRead(annotations=changed), NOW)
    apply = decision.effects[0]
    assert isinstance(apply, pg_fx.ApplyPodGroup)
    assert apply.group is not None and apply.group.spec.min_member == 4
    assert apply.pods == {"b": "uid-b"}


def test_pods_annotated_leave_the_waiting_list() -> None:
    state = read_state("a", "b", upper=UPPER)
    decision = controller.decide(state, controller.PodsAnnotated(uids=["uid-a"]), NOW)
    assert list(decision.state.waiting) == ["uid-b"]
    assert decision.state.annotated == 1
    assert decision.effects == ()


def _annotated() -> PodGroupRecord:
    state = read_state("a", upper=UPPER)
    return controller.decide(state, controller.PodsAnnotated(uids=["uid-a"]), NOW).state


TIMER_CASES = [
    pytest.param(TimerFired(key=controller.IDLE_TIMER, timer=1), (fx.Finish(),), id="idle-current"),
    pytest.param(TimerFired(key=controller.IDLE_TIMER, timer=0), (), id="idle-stale"),
    pytest.param(TimerFired(key="other"), (), id="unknown-key"),
]


@pytest.mark.parametrize(("fired", "effects"), TIMER_CASES)
def test_idle_timer_ends_only_when_current(fired: TimerFired, effects: tuple[object, ...]) -> None:
    assert controller.decide(_annotated(), fired, NOW).effects == effects


def test_idle_timer_with_pods_waiting_tries_them_again() -> None:
    state = read_state("a", upper=UPPER)
    fired = TimerFired(key=controller.IDLE_TIMER, timer=1)
    decision = controller.decide(state, fired, NOW)
    assert decision.effects == (pg_fx.ReadOwners(namespace="ns", owners=[RS]),)


def test_failed_owner_read_builds_without_annotations() -> None:
    state = read_state("a")
    decision = controller.decide(state, ActionFailed(effect="ReadOwners", error="boom"), NOW)
    apply = decision.effects[0]
    assert isinstance(apply, pg_fx.ApplyPodGroup)
    assert apply.group is not None and apply.group.spec.min_member == 1


def test_failed_apply_retries_later() -> None:
    state = read_state("a", upper=UPPER)
    decision = controller.decide(state, ActionFailed(effect="ApplyPodGroup", error="x"), NOW)
    until = NOW + controller.RETRY
    assert decision.effects == (
        fx.StartTimer(
            key=controller.RETRY_TIMER, fires_at=until, summary="apply the PodGroup again"
        ),
    )
    assert decision.state.applied is None
    waiting = controller.decide(decision.state, seen("b"), NOW)
    assert waiting.effects == ()
    retried = controller.decide(waiting.state, TimerFired(key=controller.RETRY_TIMER), until)
    assert retried.effects == (pg_fx.ReadOwners(namespace="ns", owners=[RS]),)


def test_namespace_gone_finishes() -> None:
    failed = ActionFailed(effect="ApplyPodGroup", error="gone", namespace_gone=True)
    assert controller.decide(read_state("a"), failed, NOW).effects == (fx.Finish(),)


def test_restored_timers_rearm_idle_and_retry() -> None:
    state = _annotated().model_copy(update={"retry_at": NOW})
    assert controller.restored_timers(state) == [
        idle(1),
        fx.StartTimer(key=controller.RETRY_TIMER, fires_at=NOW, summary="apply the PodGroup again"),
    ]

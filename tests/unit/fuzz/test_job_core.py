"""The Volcano Job core fed random orders of its inputs (duplicates, stale versions, foreign
UIDs, late events after a deletion, stale timers, failed effects, commands in any phase)
never raises, and keeps what a user would notice: no pod created for a finished or draining
job, none twice without a deletion between, none for a deleted object; timers started once
per key and cancelled only when armed; retry count and version never go back.

The machine plays the shell: a `Finish` ends the run (a later signal starts a fresh one, as
signal-with-start does), a `StartOver` continues as new with a fresh state for the new object,
and a timer leaves the armed set when it fires.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from controllers import effects as fx
from controllers.job import clock, controller
from controllers.job import effects as job_fx
from controllers.job.state import JobRecord
from controllers.job.transitions import FINISHED
from controllers.outcomes import ActionFailed, BindOutcome, TimerFired
from controllers.parsed import ParsedJob
from models.bus import Action
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import scheduler as scheduler_signals
from models.vcjob import JobPhase
from tests.builders import make_job, observed_job
from tests.unit.fuzz.common import START, check_finish, fuzz_settings

pytestmark = pytest.mark.unit

NAME, NAMESPACE = "j", "ns"
TASKS = ("w", "ps")
DRAINING = frozenset({JobPhase.ABORTING, JobPhase.COMPLETING, JobPhase.TERMINATING})
NO_CREATE = FINISHED | DRAINING | {JobPhase.ABORTED}
POLICIES: tuple[dict[str, Any], ...] = (
    {"event": "PodEvicted", "action": "RestartJob"},
    {"event": "PodFailed", "action": "RestartJob", "timeout": "1m"},
    {"event": "PodFailed", "action": "AbortJob"},
    {"event": "TaskCompleted", "action": "CompleteJob"},
    {"exitCode": 3, "action": "TerminateJob"},
    {"event": "PodPending", "action": "RestartJob", "timeout": "2m"},
    {"event": "PodEvicted", "action": "RestartTask", "timeout": "30s"},
    {"event": "PodFailed", "action": "RestartPod"},
    {"event": "Unknown", "action": "RestartJob", "timeout": "10s"},
    {"event": "TaskFailed", "action": "TerminateJob"},
    {"event": "*", "action": "CompleteJob", "timeout": "5m"},
)
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
COMMANDS = (*(a.value for a in Action), "Bogus", "")


@dataclass(frozen=True)
class JobConfig:
    replicas: dict[str, int]
    max_retry: int
    policies: list[dict[str, Any]]
    ttl: int | None
    min_available: int | None
    settings: job_signals.ControllerSettings


@st.composite
def job_configs(draw: st.DrawFn) -> JobConfig:
    tasks = draw(st.lists(st.sampled_from(TASKS), min_size=1, max_size=2, unique=True))
    replicas = {t: draw(st.integers(1, 3)) for t in tasks}
    picked = draw(st.lists(st.integers(0, len(POLICIES) - 1), max_size=4, unique=True))
    timed = draw(st.sampled_from([None, *(i for i, p in enumerate(POLICIES) if "timeout" in p)]))
    if timed is not None and timed not in picked:
        picked.insert(0, timed)  # most jobs arm delayed actions
    total = sum(replicas.values())
    override = draw(st.sampled_from([None, "default-scheduler"]))
    return JobConfig(
        replicas=replicas,
        max_retry=draw(st.integers(1, 3)),
        policies=[POLICIES[i] for i in picked],
        ttl=draw(st.sampled_from([None, 0, 60])),
        min_available=draw(st.one_of(st.none(), st.integers(1, total))),
        settings=job_signals.ControllerSettings(scheduler_override=override),
    )


class JobCoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now: datetime = START
        self.uids = 0
        self.uid: str | None = None  # the object this run knows; None: none observed yet
        self.dead: set[str] = set()  # uids deleted (their runs finished)
        self.generation = 1
        self.replicas: dict[str, int] = {}
        self.deleting = False
        self.steps = 0
        self.last: controller.Input | None = None

    # -- the shell's side ------------------------------------------------------------------------

    def _fresh_run(self) -> None:
        self.state = JobRecord(settings=self.cfg.settings)
        self.uid = None
        self.armed: dict[str, int] = {}  # timer key → timer id, as the shell holds them
        self.stale: list[tuple[str, int]] = []  # cancelled or fired
        self.live: set[str] = set()  # pods created in this run and not seen deleted since

    def _manifest(self, uid: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
        job = make_job(NAME, namespace=NAMESPACE)
        for task, replicas in sorted(self.replicas.items()):
            job = job.task(task, replicas)
        spec: dict[str, Any] = {"maxRetry": self.cfg.max_retry, "policies": self.cfg.policies}
        if self.cfg.ttl is not None:
            spec["ttlSecondsAfterFinished"] = self.cfg.ttl
        if self.cfg.min_available is not None:
            spec["minAvailable"] = min(self.cfg.min_available, sum(self.replicas.values()))
        doc = job.spec(**spec).manifest()
        doc["metadata"].update(
            uid=uid, generation=self.generation, creationTimestamp="2026-01-01T00:00:00Z"
        )
        if self.deleting:
            doc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
        if status is not None:
            doc["status"] = status
        return doc

    def _new_uid(self) -> str:
        self.uids += 1
        return f"u{self.uids}"

    def step(self, item: controller.Input) -> None:
        """One input through `decide` (it must not raise), then every invariant."""
        self.steps += 1
        self.last = item
        if isinstance(item, job_signals.PodsChanged):
            self.live -= {p.name for p in item.pods if p.deleted}
        before = self.state
        decision = controller.decide(before, item, self.now)
        after = decision.state
        self._check_effects(before, item, decision.effects)
        start_over = next((e for e in decision.effects if isinstance(e, fx.StartOver)), None)
        finished = any(isinstance(e, fx.Finish) for e in decision.effects)
        if finished:
            check_finish(before.job.metadata.uid if before.job else None, item)
            if self.uid is not None:
                self.dead.add(self.uid)
            self._fresh_run()
            return
        if start_over is not None:
            assert isinstance(item, ParsedJob)
            assert before.job is not None and item.signal.job["metadata"]["uid"] != self.uid
            assert not [e for e in decision.effects if isinstance(e, job_fx.CreatePods)]
            self._fresh_run()
            self.uid = item.signal.job["metadata"]["uid"]
            self.step(observed_job(start_over.observed.job))
            return
        self._check_progress(before, after)
        self._check_timers(after)
        self.state = after

    # -- invariants -----------------------------------------------------------------------------

    def _check_effects(
        self, before: JobRecord, item: controller.Input, effects: tuple[job_fx.AnyEffect, ...]
    ) -> None:
        gang = controller.gang(before)
        for effect in effects:
            match effect:
                case job_fx.CreatePods():
                    assert before.phase not in NO_CREATE, f"CreatePods in {before.phase}"
                    uid = effect.job.metadata.uid
                    assert uid == self.uid and uid not in self.dead, f"CreatePods for {uid}"
                    assert effect.job.metadata.deletion_timestamp is None
                    spec = {t.name: t.replicas or 0 for t in effect.job.spec.tasks}
                    for task, index in effect.pods:
                        name = f"{NAME}-{task}-{index}"
                        assert name not in self.live, f"{name} created twice, no deletion between"
                        assert 0 <= index < spec[task], f"{name} beyond replicas {spec}"
                        self.live.add(name)
                case fx.StartTimer():
                    assert effect.key not in self.armed, f"timer {effect.key} started while armed"
                    self.armed[effect.key] = effect.timer
                case fx.CancelTimer():
                    assert effect.key in self.armed, f"timer {effect.key} cancelled, not armed"
                    self.stale.append((effect.key, self.armed.pop(effect.key)))
                case fx.BindPlacements():
                    assert not gang.gone
                    assert {p.pod for p in effect.placements} <= gang.waiting
                case fx.DeleteJob():
                    assert effect.uid == self.uid
                case _:
                    pass
        foreign = before.job is not None and getattr(item, "uid", None) != before.job.metadata.uid
        if isinstance(item, common_signals.JobDeleted) and foreign:
            assert effects == (), "a JobDeleted for another uid changed something"
        if isinstance(item, TimerFired) and self._was_stale:
            assert effects == (), f"stale timer {item} did something: {effects}"

    def _check_progress(self, before: JobRecord, after: JobRecord) -> None:
        if before.phase in FINISHED:
            assert after.phase == before.phase, f"{before.phase} left for {after.phase}"
        if before.phase == JobPhase.ABORTED:
            assert after.phase in (JobPhase.ABORTED, JobPhase.RESTARTING)
        retry_before, retry_after = before.status.retry_count or 0, after.status.retry_count or 0
        assert retry_before <= retry_after <= self.cfg.max_retry, (retry_before, retry_after)
        assert (before.status.version or 0) <= (after.status.version or 0)
        assert after.timer_seq >= before.timer_seq

    def _check_timers(self, after: JobRecord) -> None:
        delayed = {k for k in self.armed if k != clock.TTL_KEY}
        assert set(after.delayed) == delayed, (sorted(after.delayed), sorted(delayed))
        for key, entry in after.delayed.items():
            assert self.armed[key] == entry.timer
        ttl_armed = after.ttl_fires_at is not None and not after.ttl_expired
        assert ttl_armed == (clock.TTL_KEY in self.armed)

    # -- inputs ---------------------------------------------------------------------------------

    @initialize(cfg=job_configs())
    def start(self, cfg: JobConfig) -> None:
        self.cfg = cfg
        self.replicas = dict(cfg.replicas)
        self._was_stale = False
        self._fresh_run()
        self.uid = self._new_uid()
        self.step(observed_job(self._manifest(self.uid)))

    @rule(data=st.data())
    def observe(self, data: st.DataObject) -> None:
        """The Job again: resynced, scaled, being deleted, or a new object under the name."""
        fresh = self.uid is None or data.draw(st.integers(0, 5)) == 0
        if data.draw(st.integers(0, 2)) == 0:
            self.replicas = {t: data.draw(st.integers(0, 3)) for t in sorted(self.replicas)}
            self.generation += 1
        if fresh:
            self.deleting = False
        elif data.draw(st.integers(0, 9)) == 0:
            self.deleting = True
        status = data.draw(
            st.sampled_from([None, {"state": {"phase": "Running"}, "version": 0, "retryCount": 0}])
        )
        uid = self._new_uid() if fresh else self.uid
        assert uid is not None
        if self.uid is None:
            self.uid = uid
        self.step(observed_job(self._manifest(uid, status)))

    def _pod_names(self) -> list[str]:
        spec = [f"{NAME}-{t}-{i}" for t, n in sorted(self.replicas.items()) for i in range(n + 1)]
        return sorted({*self.state.pods, *spec, f"{NAME}-other-0"})

    @rule(data=st.data())
    def pods_changed(self, data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(self._pod_names()), max_size=4, unique=True))
        version = self.state.status.version or 0
        owners = sorted({self.uid or "u0", "old-uid", *self.dead})
        snapshots = []
        for name in names:
            _, task, index = name.split("-")
            snapshots.append(
                job_signals.PodSnapshot(
                    name=name,
                    uid=data.draw(st.sampled_from([f"{name}-a", f"{name}-b"])),
                    job_uid=data.draw(st.sampled_from([*owners, None])),
                    task=task,
                    index=int(index) if task in TASKS else None,
                    job_version=data.draw(st.sampled_from([version, version - 1, version + 1])),
                    phase=data.draw(st.sampled_from(PHASES)),
                    exit_code=data.draw(st.sampled_from([None, 0, 1, 3])),
                    restart_count=data.draw(st.integers(0, 4)),
                    ready=data.draw(st.booleans()),
                    deleting=data.draw(st.integers(0, 4)) == 0,
                    deleted=data.draw(st.integers(0, 4)) == 0,
                    out_of_sync=data.draw(st.integers(0, 4)) == 0,
                    node_name=data.draw(st.sampled_from([None, "n1"])),
                )
            )
        self.step(job_signals.PodsChanged(pods=snapshots))

    @rule(
        own=st.booleans(),
        phase=st.sampled_from([None, "Pending", "Inqueue", "Running", "Unknown"]),
        deleted=st.integers(0, 5),
    )
    def pod_group(self, own: bool, phase: str | None, deleted: int) -> None:
        name = f"{NAME}-{self.uid}" if own else f"{NAME}-legacy"
        self.step(job_signals.PodGroupObserved(name=name, phase=phase, deleted=deleted == 0))

    @rule(action=st.sampled_from(COMMANDS))
    def command(self, action: str) -> None:
        self.step(common_signals.CommandIssued(action=action, command="cmd"))

    @rule(data=st.data())
    def job_deleted(self, data: st.DataObject) -> None:
        """Mostly a late or foreign deletion; one in four is this object's."""
        mine = self.uid if data.draw(st.integers(0, 3)) == 0 else None
        uid = mine or data.draw(st.sampled_from(sorted({"other", *self.dead})))
        self.step(common_signals.JobDeleted(uid=uid))

    @rule(data=st.data())
    def timer_fired(self, data: st.DataObject) -> None:
        choices = sorted({*self.armed.items(), *self.stale[-6:], ("nope", 7), (clock.TTL_KEY, 0)})
        key, timer = data.draw(st.sampled_from(choices))
        self._was_stale = self.armed.get(key) != timer
        if not self._was_stale:
            del self.armed[key]  # the shell's timer is gone once it fired
            self.stale.append((key, timer))
        self.step(TimerFired(key=key, timer=timer))
        self._was_stale = False

    @rule(
        effect=st.sampled_from(["CreatePods", "DeletePods", "WriteStatus", "EnsurePodGroup"]),
        gone=st.integers(0, 9),
    )
    def action_failed(self, effect: str, gone: int) -> None:
        """An effect's activity gave up (rarely: the namespace is going)."""
        if gone % 3 == 0:
            self.step(ActionFailed(effect=effect, error="500 boom", namespace_gone=gone == 0))

    @rule()
    def duplicate(self) -> None:
        """The last input again (a redelivered signal)."""
        if self.last is not None and not isinstance(self.last, TimerFired):
            self.step(self.last)

    @rule(data=st.data())
    def pods_placed(self, data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(self._pod_names()), max_size=3, unique=True))
        placements = [scheduler_signals.PlacedPod(pod=n, node="n1") for n in names]
        self.step(
            scheduler_signals.PodsPlaced(
                session=data.draw(st.integers(0, 3)), placements=placements
            )
        )

    @rule(data=st.data())
    def bind_failed(self, data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(self._pod_names()), max_size=2, unique=True))
        self.step(BindOutcome(failed=dict.fromkeys(names, "node not found")))

    @rule(seconds=st.integers(0, 400))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)


JobCoreMachine.TestCase.settings = fuzz_settings(max_examples=100, steps=40)
test_job_core_never_raises_and_keeps_its_invariants = JobCoreMachine.TestCase

"""The batch/v1 Job core fed random orders of its inputs (pod snapshots late, stale or
repeated, creations that fail in part or whole, activities that give up, stale timers, spec
changes, foreign and late deletions) never raises, never asks for more active pods than
`parallelism` nor any pod for a finished or suspended Job, and sets at most one terminal
condition (Complete or Failed), which then never changes.

The machine plays shell and apiserver: effects change its pods (a delete keeps a pod with
the tracking finalizer until the finalizer goes), activity outcomes come back at once, and
the forwarder's snapshots arrive whenever a rule sends them, the latest or an older one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from controllers import effects as fx
from controllers.batchjob import controller
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import BatchJobRecord
from controllers.outcomes import ActionFailed, TimerFired
from controllers.parsed import ParsedJob
from models.batchv1 import ConditionType, CreatedPod
from models.signals import batchjob as batchjob_signals
from models.signals import common as common_signals
from tests.builders import make_batch_job, observed_batch_job
from tests.unit.fuzz.common import START, check_finish, fuzz_settings

pytestmark = pytest.mark.unit

TERMINAL = (ConditionType.COMPLETE, ConditionType.FAILED)


@dataclass(frozen=True)
class BatchConfig:
    spec: dict[str, Any]


@st.composite
def batch_configs(draw: st.DrawFn) -> BatchConfig:
    completions = draw(st.one_of(st.none(), st.integers(1, 4)))
    spec: dict[str, Any] = {
        "parallelism": draw(st.integers(1, 3)),
        "backoffLimit": draw(st.integers(0, 3)),
    }
    if completions is not None:
        spec["completions"] = completions
        if draw(st.booleans()):
            spec["completionMode"] = "Indexed"
    if draw(st.booleans()):
        spec["activeDeadlineSeconds"] = 120
    if draw(st.booleans()):
        spec["ttlSecondsAfterFinished"] = 30
    return BatchConfig(spec=spec)


class BatchCoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now: datetime = START
        self.uids = 0
        self.dead: set[str] = set()
        self.flaky = "ok"  # how the next creations go: ok, partial, gave-up
        self.pod_uids = 0
        self.last: controller.AnyInput | None = None

    def _fresh_run(self, uid: str | None) -> None:
        self.state = BatchJobRecord(unique_names=True)
        self.uid = uid
        self.armed: set[str] = set()
        self.terminal: str | None = None  # the terminal condition once set
        self.cluster: dict[str, batchjob_signals.BatchPodSnapshot] = {}
        self.history: dict[str, list[batchjob_signals.BatchPodSnapshot]] = {}

    def _manifest(self, uid: str) -> dict[str, Any]:
        spec = {**self.cfg.spec, **self.changes}
        return make_batch_job("j", uid=uid).spec(**spec).manifest()

    # -- the shell and the apiserver ------------------------------------------------------------

    def step(self, item: controller.AnyInput) -> None:
        self.last = item
        before = self.state
        decision = controller.decide(before, item, self.now)
        after = decision.state
        self._check(before, item, decision.effects, after)
        if any(isinstance(e, fx.Finish) for e in decision.effects):
            self.dead.add(self.uid or "")
            self._fresh_run(None)
            return
        start_over = next((e for e in decision.effects if isinstance(e, fx.StartOver)), None)
        if start_over is not None:
            assert decision.effects == (start_over,)
            self._fresh_run(start_over.observed.job["metadata"]["uid"])
            self.step(observed_batch_job(start_over.observed.job))
            return
        self.state = after
        outcomes: list[controller.AnyInput] = []
        for effect in decision.effects:
            self._carry_out(effect, outcomes)
        for outcome in outcomes:  # handed back once the decision is carried out, first
            self.step(outcome)

    def _carry_out(self, effect: batch_fx.AnyEffect, outcomes: list[controller.AnyInput]) -> None:
        match effect:
            case batch_fx.CreatePods():
                if self.flaky == "gave-up":
                    outcomes.append(ActionFailed(effect="CreatePods", error="503"))
                    return
                created: dict[str, CreatedPod] = {}
                failed: dict[str, str] = {}
                for i, new in enumerate(effect.pods):
                    if self.flaky == "partial" and i % 2 == 1:
                        failed[new.name] = "403 Forbidden: exceeded quota"
                        continue
                    self.pod_uids += 1
                    pod = batchjob_signals.BatchPodSnapshot(
                        name=new.name,
                        uid=f"pod-{self.pod_uids}",
                        job_uid=self.uid or "",
                        finalizer=True,
                        index=new.index,
                        failure_count=new.failure_count or 0,
                        created_at=self.now,
                    )
                    self._put(pod)
                    created[new.name] = CreatedPod(uid=pod.uid, created_at=self.now)
                outcomes.append(controller.PodsCreated(created=created, failed=failed))
            case batch_fx.DeletePods():
                for name in effect.names:
                    pod = self.cluster.get(name)
                    if pod is not None:
                        finalizer = pod.finalizer and effect.keep_finalizers
                        self._put(pod.model_copy(update={"deleting": True, "finalizer": finalizer}))
            case batch_fx.RemoveFinalizers():
                for name in effect.pods:
                    if name in self.cluster:
                        self._put(self.cluster[name].model_copy(update={"finalizer": False}))
                outcomes.append(controller.FinalizersRemoved(pods=effect.pods))
            case fx.StartTimer():
                self.armed.add(effect.key)
            case fx.CancelTimer():
                self.armed.discard(effect.key)
            case _:
                pass

    def _put(self, pod: batchjob_signals.BatchPodSnapshot) -> None:
        """The apiserver's copy; a deleting pod without finalizer is gone."""
        if pod.deleting and not pod.finalizer:
            pod = pod.model_copy(update={"deleted": True})
            self.cluster.pop(pod.name, None)
        else:
            self.cluster[pod.name] = pod
        self.history.setdefault(pod.name, []).append(pod)

    # -- invariants -----------------------------------------------------------------------------

    def _check(
        self,
        before: BatchJobRecord,
        item: controller.AnyInput,
        effects: tuple[batch_fx.AnyEffect, ...],
        after: BatchJobRecord,
    ) -> None:
        for effect in effects:
            match effect:
                case batch_fx.CreatePods():
                    assert not before.status.finished, "CreatePods for a finished Job"
                    assert not effect.job.spec.suspended, "CreatePods for a suspended Job"
                    assert effect.job.metadata.uid == self.uid not in self.dead
                    active = [p for p in after.pods.values() if p.active]
                    parallelism = effect.job.spec.parallelism or 0
                    assert len(active) <= parallelism, f"{len(active)} active > {parallelism}"
                    assert not {p.name for p in effect.pods} & set(before.pods)
                case fx.CancelTimer():
                    assert effect.key in before.timers, f"cancel of {effect.key}, not armed"
                case fx.Finish():
                    check_finish(before.job.metadata.uid if before.job else None, item)
                case fx.DeleteJob():
                    assert before.status.finished and effect.uid == self.uid
                case _:
                    pass
        if any(isinstance(e, fx.Finish | fx.StartOver) for e in effects):
            return
        if isinstance(item, common_signals.JobDeleted):
            assert effects == (), "a JobDeleted for another uid changed something"
        true = [t for t in TERMINAL if after.status.is_true(t)]
        assert len(true) <= 1, f"both terminal conditions: {after.status.conditions}"
        if self.terminal is not None:
            assert true == [self.terminal], f"{self.terminal} became {true}"
        self.terminal = true[0] if true else None
        expected = {k for k in after.timers}
        shell = set(self.armed)
        for effect in effects:
            if isinstance(effect, fx.StartTimer):
                shell.add(effect.key)
            elif isinstance(effect, fx.CancelTimer):
                shell.discard(effect.key)
        assert expected == shell, (sorted(expected), sorted(shell))

    # -- inputs ---------------------------------------------------------------------------------

    @initialize(cfg=batch_configs())
    def start(self, cfg: BatchConfig) -> None:
        self.cfg = cfg
        self.changes: dict[str, Any] = {}
        self.uids = 1
        self._fresh_run("job-1")
        self.step(observed_batch_job(self._manifest("job-1")))

    @rule(
        change=st.sampled_from(["none", "suspend", "resume", "scale", "new-object"]),
        parallelism=st.integers(0, 4),
    )
    def observe(self, change: str, parallelism: int) -> None:
        if change == "suspend":
            self.changes["suspend"] = True
        elif change == "resume":
            self.changes["suspend"] = False
        elif change == "scale":
            self.changes["parallelism"] = parallelism
        if change == "new-object" or self.uid is None:
            self.uids += 1
            uid = f"job-{self.uids}"
            if self.uid is None:
                self.uid = uid
        else:
            uid = self.uid
        self.step(observed_batch_job(self._manifest(uid)))

    @rule(data=st.data())
    def kubelet(self, data: st.DataObject) -> None:
        """A pod runs, succeeds or fails (on the apiserver; the forwarder tells later)."""
        if not self.cluster:
            return
        name = data.draw(st.sampled_from(sorted(self.cluster)))
        phase = data.draw(st.sampled_from(["Running", "Succeeded", "Failed"]))
        code = {"Running": None, "Succeeded": 0, "Failed": data.draw(st.sampled_from([1, 42]))}
        exit_code = code[phase]
        update: dict[str, Any] = {"phase": phase, "node_name": "n1"}
        if phase == "Running":
            update.update(ready=True, ready_since=self.now)
        else:
            assert exit_code is not None
            update.update(
                ready=False,
                ready_since=None,
                finished_at=self.now,
                exits=[batchjob_signals.ContainerExitSnapshot(name="main", exit_code=exit_code)],
            )
        self._put(self.cluster[name].model_copy(update=update))

    @rule(data=st.data())
    def forward(self, data: st.DataObject) -> None:
        """The forwarder sends some pods: mostly their latest state, sometimes an older one."""
        if not self.history:
            return
        names = data.draw(st.lists(st.sampled_from(sorted(self.history)), max_size=3, unique=True))
        pods = []
        for name in names:
            seen = self.history[name]
            back = data.draw(st.integers(0, 3))
            pods.append(seen[-1] if back else seen[max(0, len(seen) - 2)])
        self.step(batchjob_signals.BatchPodsChanged(pods=pods))

    @rule(data=st.data())
    def stranger(self, data: st.DataObject) -> None:
        """A snapshot of a pod this Job never created (adopted, or a late one of an old Job)."""
        pod = batchjob_signals.BatchPodSnapshot(
            name=data.draw(st.sampled_from(["j-zzzzz", "j-0-zzzzz"])),
            uid=data.draw(st.sampled_from(["s-1", "s-2"])),
            job_uid=data.draw(st.sampled_from([self.uid or "", "old"])),
            phase=data.draw(st.sampled_from(["Pending", "Running", "Failed", "Succeeded"])),
            finalizer=data.draw(st.booleans()),
            deleted=data.draw(st.booleans()),
            index=data.draw(st.sampled_from([None, 0, 9])),
        )
        self.step(batchjob_signals.BatchPodsChanged(pods=[pod]))

    @rule(mode=st.sampled_from(["ok", "ok", "partial", "gave-up"]))
    def creations_go(self, mode: str) -> None:
        self.flaky = mode

    @rule(data=st.data())
    def timer_fired(self, data: st.DataObject) -> None:
        """An armed timer, or a sync timer firing late (after a cancel or a move). The TTL
        timer is only ever cancelled when the run ends, so it fires only while armed."""
        keys = sorted({*self.armed, "backoff", "deadline", "retry", "expectations"})
        key = data.draw(st.sampled_from(keys))
        self.armed.discard(key)
        self.step(TimerFired(key=key))

    @rule(
        effect=st.sampled_from(["WriteStatus", "DeletePods", "RemoveFinalizers"]),
        gone=st.integers(0, 14),
    )
    def action_failed(self, effect: str, gone: int) -> None:
        if gone % 3 == 0:
            self.step(ActionFailed(effect=effect, error="500", namespace_gone=gone == 0))

    @rule(which=st.integers(0, 5))
    def job_deleted(self, which: int) -> None:
        uid = self.uid if which == 0 and self.uid else "other"
        self.step(common_signals.JobDeleted(uid=uid))

    @rule()
    def duplicate(self) -> None:
        if isinstance(self.last, batchjob_signals.BatchPodsChanged | ParsedJob):
            self.step(self.last)

    @rule(seconds=st.sampled_from([1, 10, 30, 200, 400]))
    def time_passes(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)


BatchCoreMachine.TestCase.settings = fuzz_settings(max_examples=80, steps=40)
test_batch_job_core_never_raises_and_keeps_its_invariants = BatchCoreMachine.TestCase

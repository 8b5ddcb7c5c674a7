"""A pure stand-in for the apiserver around `controller.decide`, for the table tests.

It plays the shell and the cluster at once: effects change its pods the way the apiserver
would (a delete keeps a pod with the tracking finalizer until the finalizer goes, then it
vanishes), activity outcomes come back first, and every pod change reaches the core as a
`pods_changed` batch. Time only moves when a test says so.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from controllers import effects as fx
from controllers.batchjob import controller, workload
from controllers.batchjob import effects as batch_fx
from controllers.batchjob.state import BatchJobRecord
from models.batchv1 import CreatedPod
from models.signals import batchjob as batchjob_signals
from models.signals import job as job_signals
from tests.builders import observed_batch_job

START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class FakeCluster:
    now: datetime = START
    state: BatchJobRecord = field(default_factory=BatchJobRecord)
    pods: dict[str, batchjob_signals.BatchPodSnapshot] = field(default_factory=dict)
    effects: list[batch_fx.AnyEffect] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    timers: dict[str, datetime] = field(default_factory=dict)
    fail_creates: int = 0  # the next creations that fail
    unheard: bool = False  # pod changes happen but reach no one (no forwarder watching)
    _inputs: deque[controller.AnyInput] = field(default_factory=deque)
    _uid: int = 0

    # -- driving ------------------------------------------------------------------------------

    def feed(self, item: controller.AnyInput) -> None:
        """One input, then everything it causes, until the core is quiet."""
        self._inputs.append(item)
        while self._inputs:
            decision = controller.decide(self.state, self._inputs.popleft(), self.now)
            self.state = decision.state
            self.effects += decision.effects
            changed: dict[str, batchjob_signals.BatchPodSnapshot] = {}
            for effect in decision.effects:
                self._apply(effect, changed)
            if changed and not self.unheard:
                self._inputs.append(batchjob_signals.BatchPodsChanged(pods=list(changed.values())))

    def listed(self) -> None:
        """A forwarder's full list reaches the core: which pods exist now."""
        self.feed(
            job_signals.PodsListed(
                uids=[p.uid for p in self.pods.values()], names=sorted(self.pods)
            )
        )

    def observe(self, manifest: dict[str, Any]) -> None:
        self.feed(observed_batch_job(manifest))

    def advance(self, delta: timedelta) -> None:
        """Let time pass; due timers fire in order."""
        until = self.now + delta
        while True:
            due = sorted((at, key) for key, at in self.timers.items() if at <= until)
            if not due:
                break
            at, key = due[0]
            self.now = max(self.now, at)
            del self.timers[key]
            self.feed(controller.TimerFired(key=key))
        self.now = until

    def set_pod(self, name: str, **update: Any) -> None:
        """A pod changes (kubelet, a stage, a user); the core hears it."""
        pod = self.pods[name].model_copy(update=update)
        self.pods[name] = pod
        self.feed(batchjob_signals.BatchPodsChanged(pods=[pod]))

    def run(self, name: str) -> None:
        self.set_pod(name, phase="Running", ready=True, ready_since=self.now, node_name="node-1")

    def finish(self, name: str, exit_code: int = 0, **update: Any) -> None:
        """The pod's container exits; a non-zero code fails the pod."""
        exits = [batchjob_signals.ContainerExitSnapshot(name="main", exit_code=exit_code)]
        phase = "Failed" if exit_code else "Succeeded"
        self.set_pod(
            name,
            phase=phase,
            ready=False,
            ready_since=None,
            exits=exits,
            finished_at=self.now,
            **update,
        )

    # -- reading ------------------------------------------------------------------------------

    @property
    def status(self) -> dict[str, Any]:
        return self.statuses[-1] if self.statuses else {}

    def live(self) -> list[str]:
        """Pods that are neither finished nor being deleted, by name."""
        return sorted(
            n
            for n, p in self.pods.items()
            if p.phase not in ("Succeeded", "Failed") and not p.deleting
        )

    def named(self, kind: str) -> list[Any]:
        return [e for e in self.effects if e.kind == kind]

    def condition(self, type_: str) -> dict[str, Any] | None:
        return next((c for c in self.status.get("conditions") or [] if c["type"] == type_), None)

    # -- the apiserver's side -------------------------------------------------------------------

    def _apply(
        self, effect: batch_fx.AnyEffect, changed: dict[str, batchjob_signals.BatchPodSnapshot]
    ) -> None:
        match effect:
            case batch_fx.CreatePods():
                created: dict[str, CreatedPod] = {}
                failed: dict[str, str] = {}
                for new in effect.pods:
                    if self.fail_creates > 0:
                        self.fail_creates -= 1
                        failed[new.name] = "403 Forbidden: exceeded quota"
                        continue
                    self._uid += 1
                    pod = batchjob_signals.BatchPodSnapshot(
                        name=new.name,
                        uid=f"pod-{self._uid}",
                        job_uid="job-uid",
                        finalizer=True,
                        index=new.index,
                        failure_count=new.failure_count or 0,
                        ignored_failure_count=new.ignored_failure_count,
                        created_at=self.now,
                    )
                    self.pods[new.name] = pod
                    changed[new.name] = pod
                    created[new.name] = CreatedPod(uid=pod.uid, created_at=self.now)
                self._inputs.appendleft(controller.PodsCreated(created=created, failed=failed))
            case batch_fx.DeletePods():
                for name in effect.names:
                    pod = self.pods.get(name)
                    if pod is None:
                        continue
                    finalizer = pod.finalizer and effect.keep_finalizers
                    self._update(name, changed, deleting=True, finalizer=finalizer)
            case batch_fx.RemoveFinalizers():
                for name in effect.pods:
                    if name in self.pods:
                        self._update(name, changed, finalizer=False)
                self._inputs.appendleft(controller.FinalizersRemoved(pods=effect.pods))
            case batch_fx.WriteStatus():
                self.statuses.append(effect.status.dump())  # as the apiserver takes it
            case batch_fx.EnsureWorkload():
                self._inputs.appendleft(workload.WorkloadEnsured(uid="pg-uid"))
            case fx.StartTimer():
                self.timers[effect.key] = effect.fires_at
            case fx.CancelTimer():
                self.timers.pop(effect.key, None)
            case _:
                pass

    def _update(
        self, name: str, changed: dict[str, batchjob_signals.BatchPodSnapshot], **update: Any
    ) -> None:
        pod = self.pods[name].model_copy(update=update)
        if pod.deleting and not pod.finalizer:
            del self.pods[name]
            pod = pod.model_copy(update={"deleted": True})
        else:
            self.pods[name] = pod
        changed[name] = pod

"""Shared by the forwarder's e2e modules: recording stand-in workflows, their worker, the
forwarder subprocess, and taking over the default forwarder Lease.

The real JobWorkflow and QueueWorkflow are not needed: recording stand-ins registered under
their names keep every signal they receive and answer a query with them. They run in a Temporal
namespace made per test module, so their worker is the only one polling the controllers task
queue there. Both are registered in every module, so whatever the forwarder starts (a
PodGroup's queue, a Job's workflow) has a worker and no workflow task fails for want of one.
Each forwarder is a `caldera forwarder` subprocess, stopped with SIGTERM like a Deployment's
pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from kubernetes import client
from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from forwarder import leader
from models import keys, task_queues
from models.signals import common as common_signals
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from tests.e2e.conftest import E2EStack, eventually, register_namespace

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
COALESCE_MS = 300


class Received(BaseModel):
    name: str
    payload: dict[str, Any]


class _Recording:
    """What both stand-ins share: one handler records every signal the stand-in knows
    (`SIGNALS`, decoded into its model as the real workflow's handler would), and `ENDS_ON`
    ends the run. A signal it does not know is left unrecorded, as a workflow without a
    handler for it would leave it."""

    SIGNALS: ClassVar[Mapping[str, type[common_signals.Payload]]]
    ENDS_ON: ClassVar[str]

    def __init__(self) -> None:
        self._received: list[Received] = []
        self._deleted = False

    @workflow.signal(dynamic=True)
    def record(self, name: str, args: Sequence[RawValue]) -> None:
        model = self.SIGNALS.get(name)
        if model is None:
            return
        payload = workflow.payload_converter().from_payload(args[0].payload, model)
        self._received.append(Received(name=name, payload=payload.model_dump(mode="json")))
        self._deleted = self._deleted or name == self.ENDS_ON

    @workflow.query
    def received(self) -> list[Received]:
        return self._received


@workflow.defn(name=job_signals.JOB_WORKFLOW, sandboxed=False)
class RecordingJobWorkflow(_Recording):
    """Stands in for the real JobWorkflow: records signals, ends on job_deleted."""

    SIGNALS: ClassVar[Mapping[str, type[common_signals.Payload]]] = {
        job_signals.SIGNAL_JOB_OBSERVED: job_signals.JobObserved,
        job_signals.SIGNAL_JOB_DELETED: common_signals.JobDeleted,
        job_signals.SIGNAL_PODS_CHANGED: job_signals.PodsChanged,
        job_signals.SIGNAL_PODS_LISTED: job_signals.PodsListed,
        job_signals.SIGNAL_POD_GROUP_OBSERVED: job_signals.PodGroupObserved,
        common_signals.SIGNAL_COMMAND_ISSUED: common_signals.CommandIssued,
    }
    ENDS_ON = job_signals.SIGNAL_JOB_DELETED

    @workflow.init
    def __init__(self, start: job_signals.JobStart) -> None:
        super().__init__()
        self._start = start

    @workflow.run
    async def run(self, start: job_signals.JobStart) -> None:
        await workflow.wait_condition(lambda: self._deleted)

    @workflow.query
    def started_with(self) -> job_signals.JobStart:
        return self._start


@workflow.defn(name=queue_signals.QUEUE_WORKFLOW, sandboxed=False)
class RecordingQueueWorkflow(_Recording):
    """Stands in for the real QueueWorkflow: records signals, ends on queue_deleted."""

    SIGNALS: ClassVar[Mapping[str, type[common_signals.Payload]]] = {
        queue_signals.SIGNAL_QUEUE_OBSERVED: queue_signals.QueueObserved,
        queue_signals.SIGNAL_QUEUE_DELETED: queue_signals.QueueDeleted,
        queue_signals.SIGNAL_POD_GROUPS_CHANGED: queue_signals.PodGroupsChanged,
        queue_signals.SIGNAL_POD_GROUPS_LISTED: queue_signals.PodGroupsListed,
        queue_signals.SIGNAL_CHILD_QUEUE_OBSERVED: queue_signals.ChildQueueObserved,
        common_signals.SIGNAL_COMMAND_ISSUED: common_signals.CommandIssued,
    }
    ENDS_ON = queue_signals.SIGNAL_QUEUE_DELETED

    @workflow.init
    def __init__(self, start: queue_signals.QueueStart) -> None:
        super().__init__()

    @workflow.run
    async def run(self, start: queue_signals.QueueStart) -> None:
        await workflow.wait_condition(lambda: self._deleted)


class Recorder:
    """A Temporal worker hosting the recording workflows on its own thread and event loop, so
    the synchronous tests can block (Kubernetes calls, `eventually`) without starving it."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.namespace = f"forwarder-e2e-{uuid.uuid4().hex[:8]}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._stop: asyncio.Event | None = None
        self._worker: Any = None

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> None:
        self._thread.start()
        self.client = self._call(self._connect())
        self._worker = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)

    async def _connect(self) -> Client:
        await register_namespace(self.address, self.namespace)
        self._stop = asyncio.Event()
        return await Client.connect(
            self.address, namespace=self.namespace, data_converter=pydantic_data_converter
        )

    async def _serve(self) -> None:
        assert self._stop is not None
        jobs = Worker(
            self.client, task_queue=task_queues.CONTROLLERS, workflows=[RecordingJobWorkflow]
        )
        queues = Worker(
            self.client, task_queue=task_queues.QUEUES, workflows=[RecordingQueueWorkflow]
        )
        async with jobs, queues:
            await self._stop.wait()

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._worker.result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def received_by(self, workflow_id: str) -> list[Received]:
        """Signals the workflow got so far; [] while it does not exist."""
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            return self._call(handle.query("received", result_type=list[Received]))
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                return []
            raise

    def named(self, ns: str, name: str, signal: str) -> list[dict[str, Any]]:
        """Payloads of `signal` the Job's workflow got, in order."""
        received = self.received_by(keys.job_workflow_id(ns, name))
        return [r.payload for r in received if r.name == signal]

    def queue_named(self, queue: str, signal: str) -> list[dict[str, Any]]:
        """Payloads of `signal` the Queue's workflow got, in order."""
        received = self.received_by(keys.queue_workflow_id(queue))
        return [r.payload for r in received if r.name == signal]

    def started_with(self, ns: str, name: str) -> job_signals.JobStart:
        handle = self.client.get_workflow_handle(keys.job_workflow_id(ns, name))
        return self._call(handle.query(RecordingJobWorkflow.started_with))


@contextlib.contextmanager
def default_lease_taken(api: client.ApiClient) -> Iterator[None]:
    """Keep a running Caldera (the session's `controllers`, a reused dev stack's) out of the way.

    Its forwarder would start the real workflows for these tests' objects, and their pods,
    status writes and Command consumption would race the assertions. Taking its Lease makes it
    stand by, as a replaced leader does; releasing the Lease at the end hands it back.
    """
    leases = client.CoordinationV1Api(api)
    cfg = leader.LeaseConfig(identity=f"e2e-forwarder-tests-{uuid.uuid4().hex[:6]}")
    try:
        lease = leases.read_namespaced_lease(cfg.name, cfg.namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
        lease = None
    spec = lease.spec if lease is not None else None
    renewed = spec.renew_time if spec is not None else None
    if lease is None or spec is None or not spec.holder_identity or renewed is None:
        yield  # nobody leads
        return
    if (datetime.now(UTC) - renewed).total_seconds() > (spec.lease_duration_seconds or 15):
        yield  # the holder is gone
        return
    spec.holder_identity, spec.renew_time = cfg.identity, datetime.now(UTC)
    leases.replace_namespaced_lease(cfg.name, cfg.namespace, lease)
    pauser = leader.Elector(leases, cfg)
    done = threading.Event()
    renewing = threading.Thread(target=lambda: _renew_until(pauser, done), daemon=True)
    renewing.start()
    # The old leader notices at its next renewal and stops forwarding.
    time.sleep(cfg.renew_interval + 1)
    try:
        yield
    finally:
        done.set()
        renewing.join(10)
        pauser.release()


def _renew_until(elector: leader.Elector, done: threading.Event) -> None:
    while not done.wait(elector.config.retry_interval):
        with contextlib.suppress(Exception):
            elector.try_acquire()


class Forwarder:
    """One `caldera forwarder` subprocess with its log file."""

    def __init__(self, stack: E2EStack, recorder: Recorder, log: Path, *args: str) -> None:
        env = {
            **os.environ,
            "KUBECONFIG": stack.kubeconfig,
            "TEMPORAL_ADDRESS": stack.temporal_address,
        }
        cmd = [sys.executable, "-m", "cli.main", "forwarder", "--namespace", recorder.namespace]
        self.log = log
        with log.open("w") as out:
            self.proc = subprocess.Popen(
                [*cmd, *args], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        self.identity = f"{socket.gethostname()}-{self.proc.pid}"

    def text(self) -> str:
        return self.log.read_text()

    def listed(self, *kinds: str, timeout: float = 30) -> None:
        """Wait until this forwarder has listed each kind: an object created after that reaches
        it as a watch event, never inside the first list (where even an echo is sent)."""

        def done() -> bool:
            text = self.text()
            return all(f"listed kind={kind} " in text for kind in kinds)

        eventually(done, timeout, f"forwarder listed {', '.join(kinds)}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise


@contextlib.contextmanager
def forwarders(
    stack: E2EStack, recorder: Recorder, ns: str, tmp_path: Path, count: int = 1, *extra: str
) -> Iterator[list[Forwarder]]:
    """`count` forwarders sharing a Lease of their own in `ns`, so they never contend with the
    default Lease (held by `default_lease_taken`) or with another test's forwarders."""
    lease = f"caldera-forwarder-{uuid.uuid4().hex[:6]}"
    args = ["--lease-namespace", ns, "--lease-name", lease, "--coalesce-ms", str(COALESCE_MS)]
    args += ["--scheduler-override", "e2e-scheduler", "--retry-interval", "0.3", *extra]
    started: list[Forwarder] = []
    try:
        for i in range(count):
            started.append(Forwarder(stack, recorder, tmp_path / f"forwarder-{i}.log", *args))
        yield started
    finally:
        for f in started:
            f.stop()

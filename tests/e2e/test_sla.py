"""The sla plugin on the real stack: a 16-pod gang is starved by a stream of one-pod jobs until
the configuration lists sla; then, past its `sla-waiting-time`, it is enqueued, the stream stops
being admitted behind it, and the gang runs.

Volcano's e2e (`test/e2e/schedulingbase/sla.go`, It "sla permits job to be inqueue" and It "sla
adjusts job order") shows the two halves on an otherwise idle cluster; the design
(`docs/design/sla-plugin.md`) names the case this test builds: a large job that never finds its
room while small ones keep taking it. The stack's 3 kwok nodes of 8 CPUs take twelve 2-CPU
one-pod jobs at a time; the stream keeps fourteen of them unfinished, each running 3-7 s, so the
cluster's room (times the overcommit factor) never holds the gang's 16 CPUs. The stack's
volcano-scheduler.conf is Caldera's default, then gains sla in its first tier.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduling.framework.conf import CALDERA_DEFAULT
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera's gang scheduler places the pods
WITH_SLA = CALDERA_DEFAULT.replace(
    "  - name: conformance\n", "  - name: conformance\n  - name: sla\n", 1
)
STREAM = 14  # one-pod jobs kept unfinished
WAITING = "15s"


def _job(
    api: client.ApiClient, namespace: str, name: str, pods: int, cpu: str, run: int, **meta: Any
) -> None:
    template: dict[str, Any] = volcano.template({volcano.RUN: str(run)})
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    doc = (
        make_job(name, namespace=namespace)
        .task("w", replicas=pods, template=template)
        .spec(minAvailable=pods, schedulerName="volcano")
        .manifest()
    )
    doc["metadata"].update(meta)
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs", doc
    )


def _jobs(api: client.ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    listed: dict[str, Any] = client.CustomObjectsApi(api).list_namespaced_custom_object(
        *volcano.JOBS, namespace, "jobs"
    )
    return {j["metadata"]["name"]: j for j in listed["items"]}


def _phase(job: dict[str, Any]) -> str:
    return str((job.get("status") or {}).get("state", {}).get("phase", ""))


def _done(jobs: dict[str, dict[str, Any]], names: list[str] | None = None) -> int:
    return sum(_phase(jobs.get(n, {})) == "Completed" for n in (jobs if names is None else names))


class Stream:
    """One-pod jobs `s-0`, `s-1`, ... with STREAM of them always unfinished."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.names = (f"s-{i}" for i in itertools.count())
        self.created: list[str] = []

    def pump(self) -> dict[str, dict[str, Any]]:
        """Top the stream up; every job of the namespace as listed."""
        jobs = _jobs(self.api, self.namespace)
        unfinished = [n for n in self.created if _phase(jobs.get(n, {})) != "Completed"]
        for _ in range(STREAM - len(unfinished)):
            name = next(self.names)
            run = 3 + len(self.created) % 5  # 3-7 s, so completions do not come together
            _job(self.api, self.namespace, name, 1, "2", run)
            self.created.append(name)
        return jobs

    def until(
        self, probe: Callable[[dict[str, dict[str, Any]]], bool], timeout: float, what: str
    ) -> None:
        eventually(lambda: probe(self.pump()), timeout, what)


@pytest.fixture
def stream(api: client.ApiClient, namespace: str) -> Iterator[Stream]:
    """The stream; its jobs deleted and gone afterwards, so no later test meets its load in
    the default queue."""
    made = Stream(api, namespace)
    yield made
    jobs = client.CustomObjectsApi(api)
    for name in _jobs(api, namespace):
        jobs.delete_namespaced_custom_object(*volcano.JOBS, namespace, "jobs", name)
    eventually(lambda: not _jobs(api, namespace), 120, "the stream's jobs deleted")
    core = client.CoreV1Api(api)
    eventually(lambda: not core.list_namespaced_pod(namespace).items, 120, "their pods gone")


def test_a_gang_past_its_waiting_time_is_not_starved_by_one_pod_jobs(
    api: client.ApiClient, namespace: str, scheduler_conf: Path, stream: Stream
) -> None:
    stream.until(lambda jobs: _done(jobs) >= STREAM, 90, "the stream's first jobs completed")
    _job(api, namespace, "gang", 16, "1", 5, annotations={"sla-waiting-time": WAITING})
    gang_made = len(stream.created)

    # Without sla, one-pod jobs created after the gang keep starting before it.
    def bypassed(jobs: dict[str, dict[str, Any]]) -> bool:
        assert _phase(jobs["gang"]) in ("", "Pending"), "the gang ran without sla"
        later = [f"s-{i}" for i in range(gang_made, len(stream.created))]
        return _done(jobs, later) >= 2 * STREAM

    stream.until(bypassed, 120, f"{2 * STREAM} one-pod jobs created after the gang completed")

    # With sla, the gang (long past its waiting time) is enqueued, holds its room against the
    # stream and runs.
    scheduler_conf.write_text(WITH_SLA)
    ran = ("Running", "Completed")
    stream.until(lambda jobs: _phase(jobs["gang"]) in ran, 90, "the gang running")

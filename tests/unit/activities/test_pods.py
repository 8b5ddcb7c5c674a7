"""The pod activities' fan-out on the process's one pool: results in item order, at most
`_PARALLEL` calls at once, a single item in the caller's thread, and every call finished
before the first error is raised (as a pool of the call's own did)."""

from __future__ import annotations

import threading
import time

import pytest
from temporalio.exceptions import ApplicationError

from activities.controllers import pods
from activities.messages import CreatePodsInput
from tests.builders import make_job

pytestmark = pytest.mark.unit


def test_one_item_runs_in_the_callers_thread() -> None:
    assert pods.fan_out(lambda _: threading.current_thread(), [1]) == [threading.current_thread()]
    assert pods.fan_out(lambda n: n, []) == []


def test_many_items_keep_their_order_and_the_parallel_bound() -> None:
    lock = threading.Lock()
    running = [0, 0]  # now, most at once

    def call(n: int) -> int:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return n * 2

    items = list(range(100))
    assert pods.fan_out(call, items) == [n * 2 for n in items]
    assert 1 < running[1] <= pods._PARALLEL


def test_every_call_ends_before_the_first_error_in_item_order() -> None:
    done: list[int] = []

    def call(n: int) -> int:
        if n in (3, 7):
            raise ValueError(f"item {n}")
        time.sleep(0.01)
        done.append(n)
        return n

    with pytest.raises(ValueError, match="item 3"):
        pods.fan_out(call, list(range(40)))
    assert sorted(done) == [n for n in range(40) if n not in (3, 7)]


def test_pod_refused_by_a_plugin_is_invalid_not_retried() -> None:
    job = make_job("j").task("master").task("worker", replicas=2).spec(plugins={"ray": []})
    request = CreatePodsInput(job=job.build(), version=0, retry_count=0, pods=[("worker", 1)])
    with pytest.raises(ApplicationError) as err:
        pods._manifest(request, "worker", 1)
    assert err.value.type == "Invalid"
    assert err.value.non_retryable
    assert 'job default/j: spec.plugins.ray: the job has no head task "head"' in str(err.value)

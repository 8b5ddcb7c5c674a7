"""Pod side effects: create a job's pods in slow-start batches, and kill pods Volcano's way.

Slow start (1, 2, 4, ... pods per batch, as the Kubernetes Job controller): a broken template
or an exhausted quota fails after one pod instead of a thousand. A pod is marked
`controller-out-of-sync` before it is deleted so its deletion reads as the controller's own
doing, not an eviction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from temporalio import activity
from temporalio.common import MetricCounter
from temporalio.exceptions import ApplicationError

from activities import errors, kube
from activities.messages import (
    CheckPodsResult,
    CreatePodsInput,
    CreatePodsResult,
    DeletePodsResult,
    PodsInput,
)
from controllers.job import plugins, podspec
from controllers.job.plugins import support as plugin_base
from models import labels
from service import metrics

_PARALLEL = 16  # requests in flight per call
# One pool per process, as many threads as the client keeps connections: a pool made per call
# started a thread per pod and joined them all again, for every creation of a one-pod job.
_POOL = ThreadPoolExecutor(max_workers=kube.CONNECTIONS, thread_name_prefix="caldera-pods")
T = TypeVar("T")
R = TypeVar("R")


def fan_out(call: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`call` over `items`, at most `_PARALLEL` at once on the process's pool; one item runs
    in the caller's thread. Every call runs to its end before the first error (in item order)
    is raised, as a pool of the call's own did on leaving its `with`."""
    if len(items) < 2:
        return [call(item) for item in items]
    window = threading.BoundedSemaphore(_PARALLEL)
    futures: list[Future[R]] = []
    for item in items:
        window.acquire()
        future = _POOL.submit(call, item)
        future.add_done_callback(lambda _: window.release())
        futures.append(future)
    wait(futures)
    return [f.result() for f in futures]


def _create(namespace: str, manifest: dict[str, Any], counter: MetricCounter) -> bool:
    """True when created now, False when it already existed."""
    name = manifest["metadata"]["name"]
    created = False
    with errors.kube_call(f"create pod {namespace}/{name}", ok=errors.EXISTS_OK):
        made = kube.core().create_namespaced_pod(
            namespace, kube.body(manifest), _preload_content=False
        )
        kube.unread(made)
        created = True
        counter.add(1)
    return created


def batch_done(created: int) -> None:
    """After each slow-start batch: a heartbeat, which only a regular activity has (a local
    activity's would be refused by the worker, one warning per batch)."""
    if not activity.info().is_local:
        activity.heartbeat(created)


def slow_start_batches(count: int) -> list[int]:
    """Batch sizes 1, 2, 4, ... covering `count` items."""
    sizes, size = [], 1
    while count > 0:
        sizes.append(min(size, count))
        count -= size
        size *= 2
    return sizes


def _manifest(request: CreatePodsInput, task: str, index: int) -> dict[str, Any]:
    """The pod as the job controller builds it, its plugins applied. A plugin that refuses the
    pod (ray without its head task) is a non-retryable Invalid error: a retry would build the
    same pod, and the job ends as Volcano's does once its sync keeps failing (TerminateJob)."""
    job = request.job
    pod = podspec.build_pod(
        job,
        task,
        index,
        request.version,
        request.retry_count,
        request.scheduler_override,
        request.pod_group,
    )
    try:
        return plugins.on_pod_create(job, pod, task, index)
    except plugin_base.PodRefused as e:
        raise ApplicationError(str(e), type="Invalid", non_retryable=True) from e


@activity.defn(name="create_pods")
def create_pods(request: CreatePodsInput) -> CreatePodsResult:
    job = request.job
    namespace = job.metadata.namespace or "default"
    manifests = [_manifest(request, task, index) for task, index in request.pods]
    created: list[str] = []
    existing: list[str] = []
    start = 0
    # Counted as each is created: what a failed attempt created is "existing" on the retry.
    counter = metrics.PODS_CREATED.on(metrics.activity_meter())
    for size in slow_start_batches(len(manifests)):
        batch = manifests[start : start + size]
        results = fan_out(lambda m: _create(namespace, m, counter), batch)
        for manifest, fresh in zip(batch, results, strict=True):
            (created if fresh else existing).append(manifest["metadata"]["name"])
        start += size
        batch_done(start)
    activity.logger.info(
        "pods created job=%s/%s created=%d existing=%d",
        namespace,
        job.metadata.name,
        len(created),
        len(existing),
    )
    return CreatePodsResult(created=created, existing=existing)


def _kill(namespace: str, name: str) -> bool:
    """True when deleted now, False when it was already gone."""
    core = kube.core()
    patch = {"metadata": {"annotations": {labels.OUT_OF_SYNC: "true"}}}
    gone = True
    with errors.kube_call(f"mark pod {namespace}/{name} out of sync", ok=errors.GONE_OK):
        kube.unread(core.patch_namespaced_pod(name, namespace, patch, _preload_content=False))
        gone = False
    if gone:
        return False
    deleted = False
    with errors.kube_call(f"delete pod {namespace}/{name}", ok=errors.GONE_OK):
        kube.unread(core.delete_namespaced_pod(name, namespace, _preload_content=False))
        deleted = True
    return deleted


@activity.defn(name="delete_pods")
def delete_pods(request: PodsInput) -> DeletePodsResult:
    results = fan_out(lambda n: _kill(request.namespace, n), request.names)
    deleted = [n for n, d in zip(request.names, results, strict=True) if d]
    gone = [n for n, d in zip(request.names, results, strict=True) if not d]
    return DeletePodsResult(deleted=deleted, gone=gone)


def _absent(namespace: str, name: str) -> bool:
    absent = True
    with errors.kube_call(f"read pod {namespace}/{name}", ok=errors.GONE_OK):
        kube.unread(kube.core().read_namespaced_pod(name, namespace, _preload_content=False))
        absent = False
    return absent


@activity.defn(name="check_pods")
def check_pods(request: PodsInput) -> CheckPodsResult:
    """Which of these pods the apiserver no longer has (a pod created and gone again while no
    forwarder watched is in no list and no watch)."""
    absent = fan_out(lambda n: _absent(request.namespace, n), request.names)
    return CheckPodsResult(absent=[n for n, a in zip(request.names, absent, strict=True) if a])

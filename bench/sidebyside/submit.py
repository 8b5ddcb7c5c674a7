"""Submission: `threads` client threads, one ApiClient each, create the side's objects.

A create that meets 429, 5xx or a broken connection is retried (with back-off) and counted;
409 after a retry means the first attempt was stored.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import urllib3
from kubernetes import client

from activities import kube
from cli.devstack import controlplane

ATTEMPTS: Final = 6
RETRIED: Final = frozenset({429, 500, 502, 503, 504})


@dataclass
class Submitted:
    start_wall: float  # time.time() of the first create
    end_wall: float
    seconds: float
    created: int
    retries: int
    errors: list[str]
    created_at: dict[str, float]  # job name -> time.time() when its create returned


def _creator(api: client.ApiClient, doc: dict[str, Any]) -> Callable[[], object]:
    namespace = doc["metadata"]["namespace"]
    if doc["apiVersion"] == "batch/v1":
        batch = client.BatchV1Api(api)
        return lambda: batch.create_namespaced_job(namespace, kube.body(doc))
    custom = client.CustomObjectsApi(api)
    group, version = doc["apiVersion"].split("/")
    return lambda: custom.create_namespaced_custom_object(group, version, namespace, "jobs", doc)


def _create(api: client.ApiClient, doc: dict[str, Any]) -> tuple[bool, int, str]:
    """(stored, retries, last error)."""
    create = _creator(api, doc)
    error = ""
    for attempt in range(ATTEMPTS):
        try:
            create()
            return True, attempt, ""
        except client.ApiException as e:
            if e.status == 409 and attempt > 0:
                return True, attempt, ""
            if e.status not in RETRIED:
                return False, attempt, f"{doc['metadata']['name']}: {e.status} {e.reason}"
            error = f"{doc['metadata']['name']}: {e.status} {e.reason}"
        except (urllib3.exceptions.HTTPError, OSError) as e:
            error = f"{doc['metadata']['name']}: {type(e).__name__}: {e}"
        time.sleep(min(0.25 * 2**attempt, 4.0))
    return False, ATTEMPTS - 1, error


def submit(kubeconfig: str, docs: list[dict[str, Any]], threads: int) -> Submitted:
    """Create every document; docs are dealt round-robin to the threads."""
    chunks = [docs[i::threads] for i in range(threads)]
    apis = [controlplane.api_client(kubeconfig) for _ in chunks]  # built before the clock runs
    lock = threading.Lock()
    totals = {"created": 0, "retries": 0}
    errors: list[str] = []
    created_at: dict[str, float] = {}

    def work(api: client.ApiClient, chunk: list[dict[str, Any]]) -> None:
        for doc in chunk:
            stored, retries, error = _create(api, doc)
            now = time.time()
            with lock:
                if stored:
                    created_at[doc["metadata"]["name"]] = now
                totals["created"] += int(stored)
                totals["retries"] += retries
                if error and not stored:
                    errors.append(error)

    workers = [
        threading.Thread(target=work, args=(a, c), daemon=True)
        for a, c in zip(apis, chunks, strict=True)
    ]
    t0, wall0 = time.monotonic(), time.time()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.monotonic() - t0
    for api in apis:
        api.close()  # type: ignore[no-untyped-call]
    return Submitted(
        start_wall=wall0,
        end_wall=wall0 + seconds,
        seconds=round(seconds, 2),
        created=totals["created"],
        retries=totals["retries"],
        errors=errors[:20],
        created_at=created_at,
    )

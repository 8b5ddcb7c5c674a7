"""The soak's workload: the kinds of job a wave holds, each one's manifest and the end
Volcano's (or the Job controller's) rules give it, whatever faults ran meanwhile.

Names carry the kind (`<kind>-<wave>-<i>`). Pods run for the seconds of kwok's
`sim.caldera.dev/run-seconds` annotation and exit with `sim.caldera.dev/exit-code`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from models import batchv1

RUN_SECONDS: Final = "sim.caldera.dev/run-seconds"
EXIT_CODE: Final = "sim.caldera.dev/exit-code"
QUEUE: Final = "chaos-q"  # the queue closed and opened during the run
GONE: Final = "Deleted"  # the end of a job with ttlSecondsAfterFinished

Api = Literal["volcano", "batch"]


@dataclass(frozen=True)
class Kind:
    prefix: str
    api: Api
    end: str  # Volcano phase, batch/v1 condition (Complete, Failed) or GONE
    what: str
    evictable: bool = False  # the soak may delete its pods at random
    replicas: int = 1


KINDS: Final = (
    Kind("s", "volcano", "Completed", "one pod, 20 s", evictable=True),
    Kind(
        "g", "volcano", "Completed", "gang of 4 (minAvailable 4), 30 s", evictable=True, replicas=4
    ),
    Kind("x", "volcano", "Failed", "exits 3; exitCode 3 -> RestartJob, maxRetry 2"),
    Kind(
        "e",
        "volcano",
        "Completed",
        "2 pods, 60 s; PodEvicted -> RestartJob after 30 s, maxRetry 20",
        evictable=True,
        replicas=2,
    ),
    Kind("t", "volcano", GONE, "5 s, ttlSecondsAfterFinished 10"),
    Kind("a", "volcano", "Aborted", "runs until a Command CR aborts it"),
    Kind("r", "volcano", "Completed", "40 s; aborted, then resumed, by Temporal updates"),
    Kind("q", "volcano", "Completed", f"20 s in queue {QUEUE} (closed and opened)"),
    Kind("b", "batch", "Complete", "batch/v1, completions 2, 10 s"),
    Kind("bf", "batch", "Failed", "batch/v1, exits 1, backoffLimit 1"),
    Kind("bd", "batch", "Failed", "batch/v1, 300 s with activeDeadlineSeconds 30"),
)
BY_PREFIX: Final = {k.prefix: k for k in KINDS}
CANARY: Final = Kind("k", "volcano", "Completed", "one pod, 5 s: submitted after each fault")
BURST: Final = Kind("n", "volcano", "Completed", "one pod, 60 s: the `--burst` jobs at the start")


@dataclass(frozen=True)
class Planned:
    name: str
    kind: Kind


def kind_of(name: str) -> Kind:
    prefix = name.split("-", 1)[0]
    extra = {CANARY.prefix: CANARY, BURST.prefix: BURST}
    return extra.get(prefix) or BY_PREFIX[prefix]


def burst(count: int) -> list[Planned]:
    """The one-pod jobs in flight beside the waves (`--burst`)."""
    return [Planned(f"n-0-{i}", BURST) for i in range(count)]


def wave(number: int, queue_open: bool) -> list[Planned]:
    """One wave; `q` jobs only while their queue takes jobs."""
    out = [Planned(f"s-{number}-{i}", BY_PREFIX["s"]) for i in range(3)]
    for prefix in ("g", "x", "e", "t", "b", "bf", "bd"):
        out.append(Planned(f"{prefix}-{number}-0", BY_PREFIX[prefix]))
    if number % 2 == 0:
        out.append(Planned(f"a-{number}-0", BY_PREFIX["a"]))
    else:
        out.append(Planned(f"r-{number}-0", BY_PREFIX["r"]))
    if queue_open:
        out.append(Planned(f"q-{number}-0", BY_PREFIX["q"]))
    return out


def _template(
    run: float | None, exit_code: int = 0, scheduler: str | None = None
) -> dict[str, Any]:
    annotations = {} if run is None else {RUN_SECONDS: str(run)}
    if exit_code:
        annotations[EXIT_CODE] = str(exit_code)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
        ],
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"metadata": {"annotations": annotations}, "spec": spec}


def manifest(job: Planned, namespace: str) -> dict[str, Any]:
    if job.kind.api == "batch":
        return _batch(job, namespace)
    return _volcano(job, namespace)


def _volcano(job: Planned, namespace: str) -> dict[str, Any]:
    p = job.kind.prefix
    run = {"s": 20, "g": 30, "x": 3, "e": 60, "t": 5, "a": None, "r": 40, "q": 20, "k": 5, "n": 60}[
        p
    ]
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": QUEUE if p == "q" else "default",
        "minAvailable": job.kind.replicas,
        "tasks": [
            {
                "name": "w",
                "replicas": job.kind.replicas,
                "template": _template(run, exit_code=3 if p == "x" else 0),
            }
        ],
    }
    if p == "x":
        spec["maxRetry"] = 2
        spec["policies"] = [{"exitCode": 3, "action": "RestartJob"}]
    if p == "e":
        spec["maxRetry"] = 20
        spec["policies"] = [{"event": "PodEvicted", "action": "RestartJob", "timeout": "30s"}]
    if p == "t":
        spec["ttlSecondsAfterFinished"] = 10
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": namespace},
        "spec": spec,
    }


def _batch(job: Planned, namespace: str) -> dict[str, Any]:
    p = job.kind.prefix
    spec: dict[str, Any] = {"managedBy": batchv1.CONTROLLER_NAME}
    if p == "b":
        spec |= {"completions": 2, "parallelism": 2, "template": _template(10, 0, "volcano")}
    elif p == "bf":
        spec |= {"backoffLimit": 1, "template": _template(2, 1, "volcano")}
    else:
        spec |= {"activeDeadlineSeconds": 30, "template": _template(300, 0, "volcano")}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": namespace},
        "spec": spec,
    }

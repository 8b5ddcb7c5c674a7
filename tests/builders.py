"""Short builders for test inputs (after kueue's wrappers): `make_job("a").task("w", 3).build()`."""

from __future__ import annotations

from typing import Any, Self

from controllers.parsed import ParsedJob, ParsedQueue
from models import batchv1
from models.scheduling import Queue
from models.signals import job as job_signals
from models.signals import queue as queue_signals
from models.vcjob import Job


class JobBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self._meta: dict[str, Any] = {"name": name, "namespace": namespace}
        self._spec: dict[str, Any] = {"tasks": []}

    def task(self, name: str, replicas: int = 1, **fields: Any) -> Self:
        container = {"name": name, "image": "busybox", "command": ["sleep", "1"]}
        template = fields.pop(
            "template", {"spec": {"containers": [container], "restartPolicy": "Never"}}
        )
        self._spec["tasks"].append(
            {"name": name, "replicas": replicas, "template": template, **fields}
        )
        return self

    def spec(self, **fields: Any) -> Self:
        self._spec.update(fields)
        return self

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": dict(self._meta),
            "spec": {**self._spec, "tasks": list(self._spec["tasks"])},
        }

    def build(self) -> Job:
        return Job.model_validate(self.manifest())


def make_job(name: str, namespace: str = "default") -> JobBuilder:
    return JobBuilder(name, namespace)


class BatchJobBuilder:
    """A batch/v1 Job managed by Caldera, as the apiserver returns it (labels and selector in
    place; `build` applies the apiserver defaults)."""

    def __init__(self, name: str, namespace: str, uid: str) -> None:
        labels = {batchv1.CONTROLLER_UID_LABEL: uid, batchv1.JOB_NAME_LABEL: name}
        self._meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid}
        container = {"name": "main", "image": "busybox"}
        self._spec: dict[str, Any] = {
            "managedBy": batchv1.CONTROLLER_NAME,
            "selector": {"matchLabels": {batchv1.CONTROLLER_UID_LABEL: uid}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container], "restartPolicy": "Never"},
            },
        }

    def spec(self, **fields: Any) -> Self:
        self._spec.update(fields)
        return self

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": dict(self._meta),
            "spec": dict(self._spec),
        }

    def build(self) -> batchv1.BatchJob:
        return batchv1.defaulted(batchv1.BatchJob.model_validate(self.manifest()))


def make_batch_job(name: str, namespace: str = "ns", uid: str = "job-uid") -> BatchJobBuilder:
    return BatchJobBuilder(name, namespace, uid)


def observed_job(manifest: dict[str, Any]) -> ParsedJob[Job]:
    """`job_observed` for a Volcano Job, parsed as the job shell hands it to the core."""
    return ParsedJob(signal=job_signals.JobObserved(job=manifest), job=Job.model_validate(manifest))


def observed_batch_job(manifest: dict[str, Any]) -> ParsedJob[batchv1.BatchJob]:
    """`job_observed` for a batch/v1 Job, parsed as the job shell hands it to the core."""
    signal = job_signals.JobObserved(job=manifest)
    return ParsedJob(signal=signal, job=batchv1.BatchJob.model_validate(manifest))


def observed_queue(manifest: dict[str, Any]) -> ParsedQueue:
    """`queue_observed`, parsed as the queue shell hands it to the core."""
    signal = queue_signals.QueueObserved(queue=manifest)
    return ParsedQueue(signal=signal, queue=Queue.model_validate(manifest))

"""The Job model keeps a Volcano YAML intact and applies Volcano's webhook defaults."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from models.defaults import default_job
from models.duration import parse_duration
from models.vcjob import Job, JobPhase
from tests.builders import make_job

pytestmark = pytest.mark.unit

# Volcano's own sample job (example/job.yaml shape), plus fields Caldera does not model.
VOLCANO_SAMPLE = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-job
  namespace: default
  labels: {team: ml}
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: default
  policies:
  - event: PodEvicted
    action: RestartJob
  plugins:
    ssh: []
    env: []
    svc: []
  maxRetry: 5
  futureField: {keep: me}
  volumes:
  - mountPath: /myinput
  - mountPath: /myoutput
    volumeClaimName: testvolumeclaimname
  - mountPath: /myoutput2
    volumeClaim:
      accessModes: [ReadWriteOnce]
      storageClassName: my-storage-class
      resources: {requests: {storage: 1Gi}}
  tasks:
  - replicas: 6
    name: default-nginx
    template:
      metadata:
        name: web
        annotations: {sim.caldera.dev/run-seconds: "2.5"}
      spec:
        containers:
        - image: nginx
          imagePullPolicy: IfNotPresent
          name: nginx
          resources: {requests: {cpu: "1", memory: 1Gi}}
          env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        restartPolicy: OnFailure
        tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
    policies:
    - exitCode: 3
      action: RestartTask
      timeout: 1m30s
"""


def _sample() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(VOLCANO_SAMPLE)
    return doc


def test_volcano_sample_round_trips_unchanged() -> None:
    doc = _sample()
    assert Job.model_validate(doc).dump() == doc


def test_unknown_fields_are_kept_under_their_wire_names() -> None:
    job = Job.model_validate(_sample())
    assert job.spec.model_extra == {"futureField": {"keep": "me"}}
    assert job.spec.tasks[0].template is not None
    assert job.spec.tasks[0].template.spec is not None
    assert job.spec.tasks[0].template.spec["tolerations"][0]["key"] == "gpu"


def test_status_times_round_trip_in_rfc3339() -> None:
    doc = {
        **_sample(),
        "status": {
            "state": {"phase": "Running", "lastTransitionTime": "2026-01-01T10:05:00Z"},
            "taskStatusCount": {"worker": {"phase": {"Running": 2}}},
            "conditions": [{"status": "Pending", "lastTransitionTime": "2026-01-01T10:04:30Z"}],
            "version": 1,
            "retryCount": 1,
        },
    }
    job = Job.model_validate(doc)
    assert job.status is not None and job.status.state is not None
    assert job.status.state.phase is JobPhase.RUNNING
    assert job.dump() == doc


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param({"tasks": []}, "tasks", id="no-tasks"),
        pytest.param({"maxRetry": -1}, "maxRetry", id="negative-maxRetry"),
        pytest.param(
            {"policies": [{"event": "PodRunning", "action": "RestartJob"}]},
            "event",
            id="internal-event",
        ),
        pytest.param(
            {"policies": [{"event": "PodFailed", "action": "SyncJob"}]},
            "action",
            id="internal-action",
        ),
        pytest.param(
            {"policies": [{"event": "PodFailed", "action": "RestartJob", "timeout": "5 min"}]},
            "timeout",
            id="bad-timeout",
        ),
    ],
)
def test_invalid_job_field_is_named(patch: dict[str, Any], field: str) -> None:
    doc = _sample()
    doc["spec"].update(patch)
    with pytest.raises(ValidationError) as err:
        Job.model_validate(doc)
    assert field in str(err.value)


def test_defaults_follow_volcano_mutating_webhook() -> None:
    job = (
        make_job("j")
        .task("", replicas=2)
        .task("worker", replicas=3, minAvailable=1)
        .spec(plugins={"pytorch": ["--master=master"]})
        .build()
    )
    spec = default_job(job).spec
    assert spec.queue == "default"
    assert spec.scheduler_name == "volcano"
    assert spec.max_retry == 3
    assert [t.name for t in spec.tasks] == ["default0", "worker"]
    assert [t.min_available for t in spec.tasks] == [2, 1]
    assert [t.max_retry for t in spec.tasks] == [3, 3]
    assert spec.min_available == 3
    assert spec.plugins == {"pytorch": ["--master=master"], "svc": []}


def test_defaults_keep_what_the_user_set_and_are_idempotent() -> None:
    job = (
        make_job("j")
        .task("ps", replicas=2)
        .spec(queue="research", minAvailable=1, maxRetry=7, schedulerName="other")
        .build()
    )
    once = default_job(job)
    assert (once.spec.queue, once.spec.min_available, once.spec.max_retry) == ("research", 1, 7)
    assert once.spec.scheduler_name == "other"
    assert default_job(once) == once


def test_defaults_host_network_gets_cluster_first_with_host_net() -> None:
    template = {"spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "i"}]}}
    job = make_job("j").task("t", replicas=1, template=template).build()
    task = default_job(job).spec.tasks[0]
    assert task.template is not None and task.template.spec is not None
    assert task.template.spec["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_defaults_mpi_adds_ssh_and_svc() -> None:
    job = make_job("j").task("master").spec(plugins={"mpi": []}).build()
    assert set(default_job(job).spec.plugins or {}) == {"mpi", "svc", "ssh"}


@pytest.mark.parametrize(
    "plugins",
    [
        pytest.param({"tensorflow": []}, id="tensorflow"),
        pytest.param({"pytorch": []}, id="pytorch"),
        pytest.param({"ray": []}, id="ray"),
        pytest.param({"hcclrank": []}, id="hcclrank-needs-nothing"),
    ],
)
def test_defaults_framework_plugins_add_svc(plugins: dict[str, list[str]]) -> None:
    job = make_job("j").task("master").spec(plugins=plugins).build()
    added = {"svc"} if "hcclrank" not in plugins else set()
    assert set(default_job(job).spec.plugins or {}) == set(plugins) | added


def test_defaults_mpi_master_not_made_to_depend_on_workers() -> None:
    """Volcano's webhook has that mutation switched off (it would wedge a gang whose
    minAvailable counts the master), so the master is created with the workers."""
    job = make_job("j").task("master").task("worker", replicas=2).spec(plugins={"mpi": []})
    tasks = default_job(job.build()).spec.tasks
    assert [t.depends_on for t in tasks] == [None, None]


def test_total_replicas_sums_tasks() -> None:
    job = make_job("j").task("a", replicas=2).task("b", replicas=5).build()
    assert job.spec.total_replicas == 7


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1.5s", timedelta(seconds=1.5)),
        ("250ms", timedelta(milliseconds=250)),
        ("0", timedelta(0)),
    ],
)
def test_parse_duration_reads_go_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "5 m", "m5", "-5s", "5d"])
def test_parse_duration_rejects_non_durations_naming_them(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        parse_duration(text)


def test_policy_delay_and_events() -> None:
    job = Job.model_validate(_sample())
    policy = (job.spec.tasks[0].policies or [])[0]
    assert policy.delay == timedelta(seconds=90)
    assert (job.spec.policies or [])[0].all_events == ("PodEvicted",)

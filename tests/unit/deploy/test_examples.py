"""The example Jobs under deploy/examples/ read as Volcano Jobs, pass the webhook's Job rules
offline, and name only plugins Caldera runs (tests/e2e/test_plugin_jobs.py runs them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from admission import jobspec, templates
from cli.devstack import devices
from controllers.batchjob import workload
from models import batchv1, plugins
from models.defaults import default_job
from models.scheduling import Queue
from models.vcjob import Job

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "examples"
# Jobs only: the CronJob example has tests of its own (tests/unit/admission/test_cronjobs.py).
FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "cronjob.yaml")


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


@pytest.mark.parametrize("name", FILES)
def test_example_is_a_job_the_webhook_admits(name: str) -> None:
    doc = _load(name)
    job = Job.model_validate(doc)
    assert [*jobspec.create_problems(doc), *templates.problems(doc)] == []
    assert set(job.spec.plugins or {}) <= plugins.IMPLEMENTED


@pytest.mark.parametrize(
    ("name", "plugin"),
    [
        pytest.param("mpi-job.yaml", "mpi", id="mpi"),
        pytest.param("pytorch-job.yaml", "pytorch", id="pytorch"),
        pytest.param("tensorflow-job.yaml", "tensorflow", id="tensorflow"),
        pytest.param("ray-job.yaml", "ray", id="ray"),
        pytest.param("hcclrank-job.yaml", "hcclrank", id="hcclrank"),
    ],
)
def test_framework_example_uses_its_plugin(name: str, plugin: str) -> None:
    spec = default_job(Job.model_validate(_load(name))).spec
    assert plugin in (spec.plugins or {})


def test_the_gpu_example_claims_a_fake_driver_device_per_pod_through_its_template() -> None:
    """deploy/examples/devices/: the template asks the class `caldera dev up` publishes, and
    the Job's pods name it in `resourceClaims` and their container in `resources.claims`."""
    path = EXAMPLES / "devices" / "gpu-job.yaml"
    template, doc = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert (template["apiVersion"], template["kind"]) == (
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
    )
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": devices.DEVICE_CLASS, "count": 1}
    job = Job.model_validate(doc)
    assert [*jobspec.create_problems(doc), *templates.problems(doc)] == []
    assert (job.spec.min_available, job.spec.scheduler_name) == (2, "volcano")
    [task] = doc["spec"]["tasks"]
    spec = task["template"]["spec"]
    claim = {"name": request["name"], "resourceClaimTemplateName": template["metadata"]["name"]}
    assert (task["replicas"], spec["resourceClaims"]) == (2, [claim])
    [container] = spec["containers"]
    assert container["resources"]["claims"] == [{"name": request["name"]}]


def test_the_cluster_examples_register_a_cluster_and_dispatch_a_job_it_admits() -> None:
    """deploy/examples/clusters/: the Secret reads as a registration with a kubeconfig Caldera
    takes (inline credentials only), the queue names the dev stack's worker clusters, and the
    Job in it passes the webhook's rules (tests/e2e/test_dispatch.py runs it)."""
    import base64

    from activities.dispatch import cluster_secrets
    from models import kubeconfig
    from models.dispatch import CLUSTER_LABEL, DEFAULT_NAMESPACE, KUBECONFIG_KEY

    secret = yaml.safe_load((EXAMPLES / "clusters" / "worker-cluster-secret.yaml").read_text())
    assert secret["metadata"]["namespace"] == DEFAULT_NAMESPACE
    text = secret["stringData"][KUBECONFIG_KEY]
    listed = {**secret, "data": {KUBECONFIG_KEY: base64.b64encode(text.encode()).decode()}}
    registered = cluster_secrets.registration(listed)
    assert registered.cluster == secret["metadata"]["labels"][CLUSTER_LABEL] == "gpu-east"
    assert kubeconfig.parse(registered.kubeconfig or b"").server == "https://127.0.0.1:6443"
    path = EXAMPLES / "clusters" / "dispatched-job.yaml"
    queue, doc = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert [c["name"] for c in queue["spec"]["extendClusters"]] == ["worker-0", "worker-1"]
    assert doc["spec"]["queue"] == queue["metadata"]["name"]
    Job.model_validate(doc)
    assert [*jobspec.create_problems(doc), *templates.problems(doc)] == []


def test_the_start_estimate_example_is_a_queue_and_jobs_the_webhook_admits() -> None:
    """deploy/examples/queues/start-estimate.yaml (docs/user-guide/where-is-my-job.md): one
    queue with room for one of its three 2-CPU Jobs at a time, each run for a while on kwok."""
    queue, *jobs = yaml.safe_load_all((EXAMPLES / "queues" / "start-estimate.yaml").read_text())
    assert Queue.model_validate(queue).spec.capability == {"cpu": "2"}
    for doc in jobs:
        job = Job.model_validate(doc)
        assert [*jobspec.create_problems(doc), *templates.problems(doc)] == []
        assert job.spec.queue == queue["metadata"]["name"]
        (task,) = doc["spec"]["tasks"]
        assert task["template"]["metadata"]["annotations"]["sim.caldera.dev/run-seconds"]
    assert len(jobs) == 3


def test_the_kubernetes_gang_job_example_is_a_managed_job_with_a_gang_of_three() -> None:
    """deploy/examples/workloads/kubernetes-gang-job.yaml (run by tests/e2e/test_examples.py):
    Caldera's Job controller follows its spec.scheduling, a gang of its parallelism."""
    job = batchv1.defaulted(
        batchv1.BatchJob.model_validate(_load("workloads/kubernetes-gang-job.yaml"))
    )
    assert job.spec.managed_by == batchv1.CONTROLLER_NAME and job.gang_scheduled
    assert workload.wanted(job) and workload.min_count(job) == job.spec.parallelism == 3
    notes = (job.spec.template.metadata or {}).get("annotations") or {}
    assert notes[batchv1.QUEUE_ANNOTATION] == "default"

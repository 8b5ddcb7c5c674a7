"""A Volcano Job's volumes on the real stack, as Volcano's controller does them: a claim to
create is named `<job>-pvc-<12 random>`, written into the stored Job's spec and made owned by
the Job, and the pods mount it; a named claim is used as it is, or waited for (Pending, with a
`PVCError` Event) while it does not exist; `status.controlledResources` records the claims and
the plugins. Caldera's gang scheduler places the pods (the PodGroup gate is on), so a job
waiting for its claim never gets a PodGroup."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client

from cli.devstack import controlplane
from tests.builders import make_job
from tests.e2e import volcano
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")

SCHEDULER_OVERRIDE = None  # Caldera schedules and binds the volumes
CLAIM = {
    "accessModes": ["ReadWriteOnce"],
    "storageClassName": controlplane.STORAGE_CLASS,
    "resources": {"requests": {"storage": "1Gi"}},
}


def _submit(api: client.ApiClient, ns: str, name: str, **spec: Any) -> dict[str, Any]:
    doc = (
        make_job(name, namespace=ns)
        .task("w", replicas=2, template=volcano.template({volcano.RUN: "600"}))
        .spec(minAvailable=2, **spec)
        .manifest()
    )
    created: dict[str, Any] = client.CustomObjectsApi(api).create_namespaced_custom_object(
        *volcano.JOBS, ns, "jobs", doc
    )
    return created


def _pods(api: client.ApiClient, ns: str, job: str) -> list[client.V1Pod]:
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return [p for p in pods if p.metadata.name.startswith(f"{job}-")]


def _mounted(pod: client.V1Pod) -> list[str]:
    return [
        v.persistent_volume_claim.claim_name
        for v in pod.spec.volumes or []
        if v.persistent_volume_claim
    ]


def test_generated_claim_is_written_into_the_spec_owned_by_the_job_and_mounted(
    api: client.ApiClient, namespace: str
) -> None:
    created = _submit(
        api,
        namespace,
        "gen",
        volumes=[{"mountPath": "/data", "volumeClaim": CLAIM}],
        plugins={"svc": [], "env": []},
    )
    running = volcano.phase_becomes(api, namespace, "gen", "Running", timeout=120)
    (volume,) = running["spec"]["volumes"]
    name = volume["volumeClaimName"]
    assert re.fullmatch(r"gen-pvc-[0-9a-z]{12}", name), name
    assert volume["volumeClaim"] == CLAIM and volume["mountPath"] == "/data"
    pvc = client.CoreV1Api(api).read_namespaced_persistent_volume_claim(name, namespace)
    (owner,) = pvc.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Job",
        "gen",
        created["metadata"]["uid"],
        True,
    )
    assert running["status"]["controlledResources"] == {
        f"volume-pvc-{name}": name,
        "plugin-env": "env",
        "plugin-svc": "svc",
    }
    pods = _pods(api, namespace, "gen")
    assert len(pods) == 2 and all(_mounted(p) == [name] for p in pods)
    for pod in pods:
        (container,) = pod.spec.containers
        assert "/data" in [m.mount_path for m in container.volume_mounts]


def test_job_naming_an_existing_claim_runs_with_it(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_persistent_volume_claim(  # type: ignore[arg-type]
        namespace, {"metadata": {"name": "shared"}, "spec": CLAIM}
    )
    _submit(api, namespace, "named", volumes=[{"mountPath": "/data", "volumeClaimName": "shared"}])
    running = volcano.phase_becomes(api, namespace, "named", "Running", timeout=120)
    assert running["spec"]["volumes"] == [{"mountPath": "/data", "volumeClaimName": "shared"}]
    assert running["status"]["controlledResources"] == {"volume-pvc-shared": "shared"}
    assert all(_mounted(p) == ["shared"] for p in _pods(api, namespace, "named"))


def test_job_naming_a_missing_claim_waits_pending_and_says_why(
    api: client.ApiClient, namespace: str
) -> None:
    _submit(api, namespace, "wait", volumes=[{"mountPath": "/data", "volumeClaimName": "nope"}])
    volcano.phase_becomes(api, namespace, "wait", "Pending")
    message = (
        "Failed to create PVC, err: pvc nope is not found, the job will be in the Pending state "
        "until the PVC is created"
    )

    def warned() -> list[client.CoreV1Event]:
        events = client.CoreV1Api(api).list_namespaced_event(namespace).items
        return [
            e
            for e in events
            if e.involved_object.name == "wait" and e.reason == "PVCError" and e.type == "Warning"
        ]

    (event,) = eventually(warned, 60, "a PVCError Event on the job")
    assert event.message == message
    # The step is being retried: the job is still Pending, with neither PodGroup nor pods.
    assert volcano.job(api, namespace, "wait")["status"]["state"]["phase"] == "Pending"
    groups = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
    )["items"]
    assert groups == [] and _pods(api, namespace, "wait") == []


def test_webhook_refuses_a_mount_path_used_twice(api: client.ApiClient, namespace: str) -> None:
    volumes = [
        {"mountPath": "/data", "volumeClaim": CLAIM},
        {"mountPath": "/data", "volumeClaimName": "shared"},
    ]
    with pytest.raises(client.ApiException) as err:
        _submit(api, namespace, "twice", volumes=volumes)
    message = json.loads(err.value.body or "{}").get("message", "")
    assert message.startswith("admission webhook "), message  # the webhook's, not the CRD's
    assert f'job {namespace}/twice: spec.volumes[1].mountPath: duplicated mountPath "/data"' in (
        message
    ), message

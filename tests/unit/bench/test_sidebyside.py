"""The side-by-side benchmark's pure parts: which sides a run may ask for, what each side
submits (with and without DRA devices), how many GPUs the nodes publish, and the CPU a process
and its children spent."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Final, cast

import pytest
from kubernetes import client

from bench.sidebyside import cleanup, config, observe, workload
from bench.sidebyside import stack as stacks
from cli.devstack import devices

GPUS_1: Final = ["--gpus-per-pod", "1", "--out", "/tmp/x"]


def test_the_server_side_is_asked_for_by_name_and_not_run_by_default() -> None:
    opts = config.parse(["--sides", "builtin,caldera,caldera-server", "--out", "/tmp/x"])
    assert opts.sides == ("builtin", "caldera", "caldera-server")
    assert config.SERVER_SIDE not in config.parse(["--out", "/tmp/x"]).sides
    with pytest.raises(SystemExit):
        config.parse(["--sides", "caldera-postgres"])


def test_the_server_side_submits_the_caldera_sides_volcano_jobs() -> None:
    (plan,) = workload.plan("gangs", 1, 3)
    assert workload.manifest("caldera-server", plan, "ns") == workload.manifest(
        "caldera", plan, "ns"
    )


def test_a_processes_cpu_counts_what_its_children_spent() -> None:
    """The child spends a second of CPU; /proc counts it in sampled clock ticks, so the tally may
    fall a little short of it: 0.8 s shows it counted (the parent alone spends hundredths)."""
    busy = "import time\nend = time.process_time() + 1\nwhile time.process_time() < end: pass"
    wait = f"import subprocess,sys; subprocess.run([sys.executable, '-c', {busy!r}]); input()"
    parent = subprocess.Popen([sys.executable, "-c", wait], stdin=subprocess.PIPE, text=True)
    try:
        deadline = 3000  # five minutes: the child may get little of a busy machine
        while deadline and (stacks.cpu_seconds(parent.pid) or 0) < 0.8:
            os.sched_yield()
            subprocess.run(["sleep", "0.1"], check=True)
            deadline -= 1
        assert (stacks.cpu_seconds(parent.pid) or 0) >= 0.8  # most of the child's second
    finally:
        parent.communicate("\n", timeout=10)


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    """The pod template's spec of a side's Job, Volcano's or batch/v1's."""
    spec = doc["spec"]
    template = spec["tasks"][0]["template"] if "tasks" in spec else spec["template"]
    pod: dict[str, Any] = template["spec"]
    return pod


def test_without_devices_no_pod_claims_anything_and_no_node_publishes_gpus() -> None:
    opts = config.parse(["--shape", "gangs", "--out", "/tmp/x"])
    assert (opts.gpus_per_pod, opts.gpus_per_node) == (0, 0)
    (plan,) = workload.plan("gangs", 1, 3)
    for side in ("builtin", "caldera", "caldera-batch", "volcano"):
        pod = _pod_spec(workload.manifest(side, plan, "ns"))
        assert "resourceClaims" not in pod
        assert "claims" not in pod["containers"][0]["resources"]


@pytest.mark.parametrize("side", ["builtin", "caldera", "caldera-batch", "caldera-server"])
def test_with_devices_every_sides_pods_claim_the_namespaces_template(side: str) -> None:
    (plan,) = workload.plan("gangs", 1, 3)
    pod = _pod_spec(workload.manifest(side, plan, "ns", gpus=2))
    assert pod["resourceClaims"] == [
        {"name": workload.CLAIM, "resourceClaimTemplateName": workload.CLAIM_TEMPLATE}
    ]
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "100m"},
        "claims": [{"name": workload.CLAIM}],
    }


def test_the_builtin_and_caldera_sides_get_the_same_pods_but_for_the_scheduler() -> None:
    (plan,) = workload.plan("gangs", 1, 3)
    builtin = _pod_spec(workload.manifest("builtin", plan, "ns", gpus=1))
    for side in ("caldera", "caldera-batch"):
        theirs = dict(_pod_spec(workload.manifest(side, plan, "ns", gpus=1)))
        theirs.pop("schedulerName", None)
        assert theirs == builtin


def test_the_claim_template_asks_for_k_devices_of_the_fake_drivers_class() -> None:
    doc = workload.claim_template(3)
    assert doc["apiVersion"] == devices.API_VERSION
    assert doc["kind"] == "ResourceClaimTemplate"
    assert doc["metadata"]["name"] == workload.CLAIM_TEMPLATE
    (request,) = doc["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": devices.DEVICE_CLASS, "count": 3}


def test_nodes_publish_just_enough_gpus_for_the_whole_workload_by_default() -> None:
    opts = config.parse(["--shape", "gangs", "--jobs", "10", "--replicas", "100", *GPUS_1])
    assert (opts.gpus_per_pod, opts.gpus_per_node) == (1, 50)  # 1000 pods on 20 nodes
    # A pod's devices come from one node: 7 pods of 2 on 3 nodes need 3 pods' worth each.
    assert config.gpus_per_node(pods=7, nodes=3, per_pod=2, asked=None) == 6
    assert config.gpus_per_node(pods=7, nodes=3, per_pod=2, asked=8) == 8
    assert config.gpus_per_node(pods=7, nodes=3, per_pod=0, asked=None) == 0
    assert config.gpus_per_node(pods=7, nodes=3, per_pod=0, asked=4) == 4  # slices, no claims


@pytest.mark.parametrize(
    ("pods", "nodes", "per_pod", "asked", "says"),
    [
        pytest.param(1000, 5, 1, None, "over the 128", id="over-a-slice"),
        pytest.param(1, 1, 129, None, "over the 128", id="one-pod-over-a-slice"),
        pytest.param(10, 2, 2, 9, "hold 8 pods", id="asked-too-few"),
        pytest.param(10, 2, 2, 1, "hold 0 pods", id="asked-under-one-pod"),
        pytest.param(10, 2, -1, None, "at least 0", id="negative"),
        pytest.param(10, 0, 1, None, "at least one node", id="no-nodes"),
    ],
)
def test_a_workload_that_cannot_fit_is_refused(
    pods: int, nodes: int, per_pod: int, asked: int | None, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        config.gpus_per_node(pods, nodes, per_pod, asked)


def test_the_command_refuses_devices_that_cannot_fit_before_any_stack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        config.parse(["--shape", "singles", "--jobs", "1000", "--nodes", "5", *GPUS_1])
    assert "over the 128" in capsys.readouterr().err


def test_deletion_waits_for_claims_and_templates_only_in_runs_with_devices() -> None:
    api = cast(client.ApiClient, None)  # the probes are built, not called
    plain = cleanup._counters(api, "builtin", "ns", None)
    with_devices = cleanup._counters(api, "builtin", "ns", None, claims=True)
    assert set(with_devices) - set(plain) == {"resourceclaims", "claimtemplates"}


def _claim(*devices_: str, reserved: bool = True) -> dict[str, Any]:
    results = [{"driver": "gpu.caldera.dev", "pool": "n", "device": d} for d in devices_]
    status: dict[str, Any] = {"allocation": {"devices": {"results": results}}} if results else {}
    if reserved and results:
        status["reservedFor"] = [{"resource": "pods", "name": "p"}]
    return {"metadata": {"name": "c"}, "status": status}


def test_the_claims_at_the_target_show_a_device_taken_twice_or_none_allocated() -> None:
    claims = [_claim("gpu-0"), _claim("gpu-0", reserved=False), _claim()]
    assert observe.claim_figures(claims) == {
        "claims": 3,
        "allocated": 2,
        "reserved": 1,
        "devices": 2,
        "distinct_devices": 1,
    }

"""A pod's request: Kubernetes' PodRequests rule (containers, init max, sidecars, overhead)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduling.api.requests import NONZERO_MEMORY, NONZERO_MILLI_CPU, pod_request
from scheduling.api.vectors import Resources

GI = 2**30


def c(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"name": "c", "resources": {"requests": requests}, **extra}


CASES = [
    pytest.param({"containers": [c("1", "1Gi"), c("500m", "1Gi")]}, 1500, 2 * GI, id="sum"),
    pytest.param(
        {"containers": [c("1", "1Gi")], "initContainers": [c("3", "512Mi"), c("2", "4Gi")]},
        3000,
        4 * GI,
        id="init-max-per-dimension",
    ),
    pytest.param(
        {
            "containers": [c("1", "1Gi")],
            "initContainers": [c("500m", "1Gi", restartPolicy="Always"), c("1", "1Gi")],
        },
        1500,
        2 * GI,
        id="sidecar-adds-to-both",
    ),
    pytest.param(
        {"containers": [c("1", "1Gi")], "overhead": {"cpu": "250m", "memory": "1Gi"}},
        1250,
        2 * GI,
        id="overhead",
    ),
    pytest.param(
        {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}}}]},
        2000,
        0,
        id="limit-stands-in-for-request",
    ),
    pytest.param(
        {"containers": [c("1", "1Gi"), c("1", "1Gi")], "resources": {"requests": {"cpu": "1"}}},
        1000,
        2 * GI,
        id="pod-level-overrides-cpu",
    ),
    pytest.param({"containers": [{"name": "c"}]}, 0, 0, id="best-effort"),
]


@pytest.mark.parametrize(("spec", "milli_cpu", "memory"), CASES)
def test_pod_request(spec: dict[str, Any], milli_cpu: int, memory: int) -> None:
    assert pod_request(spec) == Resources.of(milli_cpu, memory, 1)


def test_nonzero_request_fills_kube_defaults_per_container() -> None:
    spec = {"containers": [c("1"), {"name": "empty"}]}
    expected = Resources.of(1000 + NONZERO_MILLI_CPU, 2 * NONZERO_MEMORY, 1)
    assert pod_request(spec, nonzero=True) == expected


def test_extended_resources_are_requested_in_milli_units() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    assert pod_request(spec).scalars == {"nvidia.com/gpu": 1000}

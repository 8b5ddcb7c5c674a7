"""svc builds the host ConfigMap, headless Service and NetworkPolicy, and wires pods to them."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.plugins import svc
from tests.builders import make_job
from tests.unit.controllers.job.plugins import owned, owner_ref

pytestmark = pytest.mark.unit

SELECTOR = {"volcano.sh/job-name": "j", "volcano.sh/job-namespace": "default"}


def _template(**spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


CONFIG_CASES = [
    pytest.param(
        make_job("j").task("master").task("worker", replicas=2),
        {
            "master.host": "j-master-0.j",
            "VC_MASTER_HOSTS": "j-master-0.j",
            "VC_MASTER_NUM": "1",
            "worker.host": "j-worker-0.j\nj-worker-1.j",
            "VC_WORKER_HOSTS": "j-worker-0.j,j-worker-1.j",
            "VC_WORKER_NUM": "2",
        },
        id="master-1-worker-2",
    ),
    pytest.param(
        make_job("j").task("ps-server", replicas=2),
        {
            "ps_server.host": "j-ps-server-0.j\nj-ps-server-1.j",
            "VC_PS_SERVER_HOSTS": "j-ps-server-0.j,j-ps-server-1.j",
            "VC_PS_SERVER_NUM": "2",
        },
        id="dash-in-task-name",
    ),
    pytest.param(
        make_job("j").task("w", replicas=3, template=_template(hostname="h", subdomain="s")),
        {"w.host": "h.s", "VC_W_HOSTS": "h.s", "VC_W_NUM": "1"},
        id="template-hostname-once",
    ),
    pytest.param(
        make_job("j").task("w", replicas=0),
        {"w.host": "", "VC_W_HOSTS": "", "VC_W_NUM": "0"},
        id="no-replicas",
    ),
]


@pytest.mark.parametrize(("builder", "want"), CONFIG_CASES)
def test_config_data_per_task_matches_volcano(builder: Any, want: dict[str, str]) -> None:
    assert svc.config_data(builder.build()) == want


def test_config_map_owned_by_job_holds_host_data() -> None:
    job = owned(make_job("j").task("master").task("worker", replicas=2))
    assert svc.config_map(job) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "j-svc", "namespace": "default", "ownerReferences": [owner_ref("j")]},
        "data": svc.config_data(job),
    }


@pytest.mark.parametrize(
    ("args", "publish"),
    [
        pytest.param([], False, id="default"),
        pytest.param(["--publish-not-ready-addresses"], True, id="publish-not-ready"),
        pytest.param(["--publish-not-ready-addresses=false"], False, id="explicit-false"),
    ],
)
def test_service_headless_selects_job_pods(args: list[str], publish: bool) -> None:
    job = owned(make_job("j").task("w"))
    opts, _ = svc.options(args)
    assert svc.service(job, opts) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "j", "namespace": "default", "ownerReferences": [owner_ref("j")]},
        "spec": {"clusterIP": "None", "selector": SELECTOR, "publishNotReadyAddresses": publish},
    }


def test_network_policy_ingress_only_from_same_job() -> None:
    job = owned(make_job("j").task("w"))
    assert svc.network_policy(job) == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "j", "namespace": "default", "ownerReferences": [owner_ref("j")]},
        "spec": {
            "podSelector": {"matchLabels": SELECTOR},
            "ingress": [{"from": [{"podSelector": {"matchLabels": SELECTOR}}]}],
            "policyTypes": ["Ingress"],
        },
    }


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param([], svc.Options(), id="defaults"),
        pytest.param(
            ["--disable-network-policy", "--inject-hosts-env=false"],
            svc.Options(disable_network_policy=True, inject_hosts_env=False),
            id="both-off",
        ),
        pytest.param(["--bogus", "--disable-network-policy"], svc.Options(), id="error-stops"),
    ],
)
def test_options_from_go_flags(args: list[str], want: svc.Options) -> None:
    assert svc.options(args)[0] == want

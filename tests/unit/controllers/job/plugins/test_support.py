"""Owner refs and host lists match Volcano."""

from __future__ import annotations

import pytest

from controllers.job.plugins import support
from tests.builders import make_job
from tests.unit.controllers.job.plugins import owned, owner_ref

pytestmark = pytest.mark.unit


def test_owner_reference_with_uid_is_controller_ref() -> None:
    job = owned(make_job("train", "ns1").task("worker"), uid="uid-1")
    assert support.object_meta(job, "train-svc") == {
        "name": "train-svc",
        "namespace": "ns1",
        "ownerReferences": [owner_ref("train", uid="uid-1")],
    }


def test_owner_reference_without_uid_names_the_field() -> None:
    job = make_job("train", "ns1").task("worker").build()
    with pytest.raises(ValueError, match=r"job ns1/train: metadata.uid is required"):
        support.owner_reference(job)


HOST_CASES = [
    pytest.param({}, 2, [("j-w-0", "j"), ("j-w-1", "j")], id="pod-names-job-subdomain"),
    pytest.param({"subdomain": "s"}, 2, [("j-w-0", "s"), ("j-w-1", "s")], id="template-subdomain"),
    pytest.param({"hostname": "h"}, 3, [("h", "j")], id="template-hostname-listed-once"),
    pytest.param({"hostname": "h"}, 0, [], id="template-hostname-no-replicas"),
    pytest.param({}, 0, [], id="no-replicas"),
]


@pytest.mark.parametrize(("spec", "replicas", "want"), HOST_CASES)
def test_task_hosts_follow_volcano_generate_hosts(
    spec: dict[str, str], replicas: int, want: list[tuple[str, str]]
) -> None:
    template = {"spec": {"containers": [{"name": "c", "image": "i"}], **spec}}
    job = make_job("j").task("w", replicas=replicas, template=template).build()
    assert support.task_hosts(job, job.spec.tasks[0]) == want


DOMAIN_CASES = [
    pytest.param({}, 1, "j-w-1.j", id="pod-name-job-subdomain"),
    pytest.param({"subdomain": "s"}, 0, "j-w-0.s", id="template-subdomain"),
    pytest.param({"hostname": "h"}, 2, "h.j", id="template-hostname-every-index"),
    pytest.param({"hostname": "h", "subdomain": "s"}, 0, "h.s", id="template-both"),
]


@pytest.mark.parametrize(("spec", "index", "want"), DOMAIN_CASES)
def test_domain_name_follows_volcano_make_domain_name(
    spec: dict[str, str], index: int, want: str
) -> None:
    template = {"spec": {"containers": [{"name": "c", "image": "i"}], **spec}}
    job = make_job("j").task("w", replicas=3, template=template).build()
    assert support.domain_name(job, job.spec.tasks[0], index) == want


def test_find_task_by_name_or_none() -> None:
    job = make_job("j").task("master").task("worker", replicas=2).build()
    found = support.find_task(job, "worker")
    assert found is not None and found.replicas == 2
    assert support.find_task(job, "ps") is None


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(22, 22, id="fits"),
        pytest.param(2**31 - 1, 2**31 - 1, id="largest"),
        pytest.param(2**31, -(2**31), id="wraps-negative"),
        pytest.param(2**32 + 22, 22, id="wraps-around"),
        pytest.param(-5, -5, id="negative-fits"),
    ],
)
def test_go_int32_wraps_as_go_conversion(value: int, want: int) -> None:
    assert support.go_int32(value) == want


PORT_CASES = [
    pytest.param({}, [("p", 22)], {"ports": [{"name": "p", "containerPort": 22}]}, id="added"),
    pytest.param(
        {"ports": [{"name": "ssh", "containerPort": 22}]},
        [("p", 22)],
        {"ports": [{"name": "ssh", "containerPort": 22}]},
        id="same-number-kept-with-its-name",
    ),
    pytest.param(
        {"ports": [{"name": "a", "containerPort": 80}]},
        [("p", 22)],
        {"ports": [{"name": "a", "containerPort": 80}, {"name": "p", "containerPort": 22}]},
        id="appended-after-others",
    ),
    pytest.param(
        {},
        [("x", 7), ("y", 7)],
        {"ports": [{"name": "x", "containerPort": 7}, {"name": "y", "containerPort": 7}]},
        id="checked-before-appending",
    ),
    pytest.param({"ports": None}, [], {"ports": None}, id="nothing-asked-nothing-written"),
]


@pytest.mark.parametrize(("container", "ports", "want"), PORT_CASES)
def test_open_ports_adds_missing_numbers(
    container: dict[str, object], ports: list[tuple[str, int]], want: dict[str, object]
) -> None:
    support.open_ports(container, *ports)
    assert container == want

"""The fake DRA driver's objects (cli/devstack/devices.py): what a slice and the DeviceClass
say, the names, the limits refused before any write, and publishing again (equal: no write;
changed: replaced with the pool's next generation), against a stand-in apiserver.
tests/e2e/test_devices_stack.py runs them on the real control plane."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from pydantic import ValidationError

from cli import main
from cli.devstack import devices
from cli.devstack.devices import Gpus
from cli.devstack.nodes import NodeTemplate

pytestmark = pytest.mark.unit


def test_a_slice_is_the_nodes_one_pool_of_gpus_owned_by_the_node() -> None:
    doc = devices.resource_slice("kwok-node-0", "uid-0", Gpus(count=2, model="h1", memory="80Gi"))
    assert (doc["apiVersion"], doc["kind"]) == ("resource.k8s.io/v1", "ResourceSlice")
    assert doc["metadata"]["name"] == "kwok-node-0-gpu.caldera.dev"
    assert doc["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "name": "kwok-node-0",
            "uid": "uid-0",
            "controller": True,
        }
    ]
    spec = doc["spec"]
    assert (spec["driver"], spec["nodeName"]) == ("gpu.caldera.dev", "kwok-node-0")
    assert spec["pool"] == {"name": "kwok-node-0", "generation": 1, "resourceSliceCount": 1}
    assert spec["devices"] == [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": "h1"}, "index": {"int": i}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i in range(2)
    ]


def test_the_defaults_are_four_caldera_a100_of_40gi() -> None:
    spec = devices.resource_slice("n", "u", Gpus())["spec"]
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert {d["attributes"]["model"]["string"] for d in spec["devices"]} == {"caldera-a100"}
    assert {d["capacity"]["memory"]["value"] for d in spec["devices"]} == {"40Gi"}


def test_the_device_class_selects_the_drivers_devices_by_cel() -> None:
    doc = devices.device_class()
    assert (doc["kind"], doc["metadata"]["name"]) == ("DeviceClass", "gpu.caldera.dev")
    assert doc["spec"]["selectors"] == [
        {"cel": {"expression": 'device.driver == "gpu.caldera.dev"'}}
    ]


@pytest.mark.parametrize(
    "node",
    [
        pytest.param("Node-0", id="upper-case"),
        pytest.param("node_0", id="underscore"),
        pytest.param("a" * 240, id="too-long-with-the-suffix"),
    ],
)
def test_a_node_name_that_makes_no_dns_subdomain_is_refused(node: str) -> None:
    with pytest.raises(ValueError, match="not a DNS subdomain"):
        devices.slice_name(node)


def test_the_longest_node_name_that_fits_is_taken() -> None:
    node = "a" * (253 - len("-gpu.caldera.dev"))
    assert len(devices.slice_name(node)) == 253


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"count": -1}, id="negative-count"),
        pytest.param({"count": 129}, id="over-128-devices-per-slice"),
        pytest.param({"model": ""}, id="empty-model"),
        pytest.param({"model": "m" * 65}, id="model-over-64"),
        pytest.param({"memory": "lots"}, id="memory-not-a-quantity"),
        pytest.param({"memory": "0"}, id="no-memory"),
    ],
)
def test_impossible_gpus_are_refused_before_any_write(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Gpus(**fields)


def test_fake_nodes_have_no_gpus_unless_asked() -> None:
    assert NodeTemplate().gpus.count == 0
    assert NodeTemplate(gpus=Gpus(count=2)).gpus == Gpus(count=2)


class _Response:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.data = json.dumps(doc).encode()


class _FakeResource:
    """The few ResourceV1Api calls the module makes, on a dict of slices."""

    def __init__(self, slices: dict[str, dict[str, Any]], writes: list[str]) -> None:
        self.slices, self.writes = slices, writes

    def create_device_class(self, body: dict[str, Any], field_manager: str) -> None:
        self.writes.append(f"create class {body['metadata']['name']}")

    def create_resource_slice(self, body: dict[str, Any], field_manager: str) -> None:
        assert field_manager == "gpu.caldera.dev"
        name = body["metadata"]["name"]
        if name in self.slices:
            raise client.ApiException(status=409)
        self.slices[name] = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
        self.writes.append(f"create {name}")

    def read_resource_slice(self, name: str, _preload_content: bool) -> _Response:
        return _Response(self.slices[name])

    def replace_resource_slice(self, name: str, body: dict[str, Any], field_manager: str) -> None:
        assert (
            body["metadata"]["resourceVersion"] == self.slices[name]["metadata"]["resourceVersion"]
        )
        self.slices[name] = body
        self.writes.append(f"replace {name}")

    def list_resource_slice(self, field_selector: str, _preload_content: bool) -> _Response:
        assert field_selector == "spec.driver=gpu.caldera.dev"
        return _Response({"items": list(self.slices.values())})

    def delete_resource_slice(self, name: str) -> None:
        self.slices.pop(name)
        self.writes.append(f"delete {name}")


class _FakeCore:
    def __init__(self, nodes: dict[str, str]) -> None:
        self.nodes = nodes

    def list_node(self) -> Any:
        items = [
            client.V1Node(metadata=client.V1ObjectMeta(name=n, uid=u))
            for n, u in self.nodes.items()
        ]
        return client.V1NodeList(items=items)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(slices by name, the writes made) of a cluster with nodes n0 and n1."""
    slices: dict[str, dict[str, Any]] = {}
    writes: list[str] = []
    monkeypatch.setattr(devices.client, "ResourceV1Api", lambda api: _FakeResource(slices, writes))
    monkeypatch.setattr(
        devices.client, "CoreV1Api", lambda api: _FakeCore({"n0": "u0", "n1": "u1"})
    )
    return slices, writes


API: Any = object()  # never reached: the stand-ins above answer


def test_publish_creates_the_class_and_a_slice_per_node(
    cluster: tuple[dict[str, dict[str, Any]], list[str]],
) -> None:
    slices, writes = cluster
    names = devices.publish(API, ["n0", "n1"], Gpus(count=1))
    assert names == ["n0-gpu.caldera.dev", "n1-gpu.caldera.dev"]
    assert writes == ["create class gpu.caldera.dev", *(f"create {n}" for n in names)]
    assert slices["n1-gpu.caldera.dev"]["metadata"]["ownerReferences"][0]["uid"] == "u1"


def test_publishing_the_same_again_writes_no_slice(
    cluster: tuple[dict[str, dict[str, Any]], list[str]],
) -> None:
    slices, writes = cluster
    devices.publish(API, ["n0"], Gpus())
    writes.clear()
    devices.publish(API, ["n0"], Gpus())
    assert writes == ["create class gpu.caldera.dev"]  # the class's create: 409 at a real one
    assert slices["n0-gpu.caldera.dev"]["spec"]["pool"]["generation"] == 1


def test_a_changed_slice_is_replaced_with_the_pools_next_generation(
    cluster: tuple[dict[str, dict[str, Any]], list[str]],
) -> None:
    slices, writes = cluster
    devices.publish(API, ["n0"], Gpus())
    devices.publish(API, ["n0"], Gpus(count=2, model="other"))
    assert writes[-1] == "replace n0-gpu.caldera.dev"
    spec = slices["n0-gpu.caldera.dev"]["spec"]
    assert spec["pool"]["generation"] == 2
    assert [d["attributes"]["model"]["string"] for d in spec["devices"]] == ["other", "other"]


def test_no_gpus_publish_nothing(cluster: tuple[dict[str, dict[str, Any]], list[str]]) -> None:
    assert devices.publish(API, ["n0", "n1"], Gpus(count=0)) == []
    assert cluster == ({}, [])


def test_a_missing_node_is_refused_before_any_write(
    cluster: tuple[dict[str, dict[str, Any]], list[str]],
) -> None:
    with pytest.raises(ValueError, match=r"no such nodes to publish GPUs on: \['n9'\]"):
        devices.publish(API, ["n0", "n9"], Gpus())
    assert cluster == ({}, [])


def test_remove_deletes_the_slices_of_the_nodes_named_or_all(
    cluster: tuple[dict[str, dict[str, Any]], list[str]],
) -> None:
    slices, _ = cluster
    devices.publish(API, ["n0", "n1"], Gpus())
    assert devices.remove(API, ["n1"]) == ["n1-gpu.caldera.dev"]
    assert list(slices) == ["n0-gpu.caldera.dev"]
    assert devices.remove(API) == ["n0-gpu.caldera.dev"]
    assert slices == {}


def test_dev_up_publishes_four_caldera_a100_per_node_by_default() -> None:
    args = main.parser().parse_args(["dev", "up"])
    assert (args.gpus_per_node, args.gpu_model) == (4, "caldera-a100")
    args = main.parser().parse_args(["dev", "up", "--gpus-per-node", "0", "--gpu-model", "h100"])
    assert (args.gpus_per_node, args.gpu_model) == (0, "h100")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--gpus-per-node", "129"], id="over-128"),
        pytest.param(["--gpus-per-node", "-1"], id="negative"),
        pytest.param(["--gpus-per-node", "two"], id="not-a-number"),
        pytest.param(["--gpu-model", "m" * 65], id="model-over-64"),
    ],
)
def test_dev_up_refuses_impossible_gpu_options_before_starting(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main.parser().parse_args(["dev", "up", *argv])
    assert exit_.value.code == 2
    assert "--gpu" in capsys.readouterr().err

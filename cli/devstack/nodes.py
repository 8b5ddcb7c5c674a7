"""Fake nodes for kwok, made from one template (count, capacity, labels, taints, GPUs)."""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from cli.devstack.devices import Gpus

KWOK_ANNOTATION: Final = "kwok.x-k8s.io/node"
KWOK_SELECTOR: Final = f"{KWOK_ANNOTATION}=fake"


class Taint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    value: str = ""
    effect: str = "NoSchedule"


class NodeTemplate(BaseModel):
    """What every fake node looks like; `count` of them are named `<prefix>-<i>`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int = Field(default=4, ge=0)
    prefix: str = "kwok-node"
    cpu: str = "32"
    memory: str = "256Gi"
    pods: int = Field(default=110, ge=1)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    # The fake DRA driver's devices on each node (cli/devstack/devices.py): none unless asked,
    # so clusters that never use DRA (the benchmarks') carry no ResourceSlices.
    gpus: Gpus = Gpus(count=0)

    def names(self) -> list[str]:
        return [f"{self.prefix}-{i}" for i in range(self.count)]

    def manifest(self, name: str) -> dict[str, Any]:
        capacity = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods)}
        labels = {
            "type": "kwok",
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            **self.labels,
        }
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": labels,
                "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {"taints": [t.model_dump() for t in self.taints]},
            "status": {"allocatable": capacity, "capacity": capacity, "phase": "Running"},
        }

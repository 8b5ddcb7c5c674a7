"""Disruption budgets as the pdb plugin reads them: PodDisruptionBudgets and a job's own.

Two kinds of budget limit how many pods reclaim and preempt may take:
- a policy/v1 `PodDisruptionBudget`, of which Volcano's pdb plugin reads the selector, the
  namespace, `status.disruptionsAllowed` and `status.disruptedPods`. Caldera also reads
  `status.desiredHealthy`, so that the pods it sees healthy now can lower a status the
  disruption controller has not recomputed yet (`plugins.pdb`);
- a PodGroup's `volcano.sh/jdb-min-available` or `volcano.sh/jdb-max-unavailable` annotation
  (the job controller copies a Job's annotations onto its PodGroup): an integer or a
  percentage of the job's tasks, rounded up, as Volcano's `intstr` reading does. When both are
  set, min-available wins (Volcano's `extractBudget`).

Parsed at the edge from the wire form; a value that is neither a non-negative integer nor a
percentage counts as unset, as an unreadable `sla-waiting-time` does.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict

from models import labels
from scheduling.api.podterms import LabelSelector
from scheduling.api.requests import Obj, as_obj

_AMOUNT: Final = re.compile(r"^(\d+)(%?)$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PodDisruptionBudget(_Frozen):
    """What the pdb plugin keeps of one PodDisruptionBudget."""

    namespace: str
    name: str
    selector: LabelSelector | None = None  # None: no selector, which matches no pod
    disruptions_allowed: int = 0  # status.disruptionsAllowed; 0 until the controller sets it
    desired_healthy: int | None = None  # status.desiredHealthy; None: not computed yet
    disrupted_pods: frozenset[str] = frozenset()  # status.disruptedPods: names already going

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, pod_labels: Mapping[str, str]) -> bool:
        """Volcano's match: the pod's namespace, and a selector that is neither missing nor
        empty and holds for its labels (an empty selector matches nothing, as in the plugin)."""
        if namespace != self.namespace or self.selector is None or self.selector.empty:
            return False
        return self.selector.matches(pod_labels)

    @classmethod
    def parse(cls, obj: Obj) -> PodDisruptionBudget:
        meta, spec, status = (as_obj(obj.get(k)) for k in ("metadata", "spec", "status"))
        selector = spec.get("selector")
        desired = status.get("desiredHealthy")
        return cls(
            namespace=str(meta.get("namespace") or "default"),
            name=str(meta.get("name") or ""),
            selector=LabelSelector.model_validate(selector)
            if isinstance(selector, Mapping)
            else None,
            disruptions_allowed=_int(status.get("disruptionsAllowed")),
            desired_healthy=desired if isinstance(desired, int) else None,
            disrupted_pods=frozenset(str(k) for k in as_obj(status.get("disruptedPods"))),
        )


class JobBudget(_Frozen):
    """A job's disruption budget from its PodGroup's annotations."""

    minimum: bool  # True: jdb-min-available; False: jdb-max-unavailable
    amount: int
    percent: bool = False  # `amount` is a percentage of the job's tasks

    def of(self, tasks: int) -> int:
        """The amount in tasks, a percentage rounded up (`GetValueFromIntOrPercent`)."""
        return math.ceil(self.amount * tasks / 100) if self.percent else self.amount


def job_budget(annotations: Mapping[str, str]) -> JobBudget | None:
    """The PodGroup's budget; None: it sets none (or one that is no amount)."""
    for key, minimum in ((labels.JDB_MIN_AVAILABLE, True), (labels.JDB_MAX_UNAVAILABLE, False)):
        if key in annotations:
            found = _AMOUNT.match(annotations[key].strip())
            if found is None:
                return None
            return JobBudget(minimum=minimum, amount=int(found[1]), percent=bool(found[2]))
    return None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

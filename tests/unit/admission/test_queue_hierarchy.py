"""The annotations on a Queue at admission: drf's hierarchy (Volcano's queue webhooks:
`validateHierarchicalAttributes` and the mutating webhook's `root/` prefix) and the dispatch
timings Caldera reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from admission import rules
from admission.reads import NamespaceQueueInfo, PodGroupInfo
from admission.rules import QueueInfo
from models import hierarchy
from models.signals.dispatch import (
    LOST_AFTER_ANNOTATION,
    ON_DRAIN_ANNOTATION,
    STALE_DEADLINE_ANNOTATION,
)


class Queues:
    def __init__(self, queues: Sequence[QueueInfo] = ()) -> None:
        self.queues = {q.name: q for q in queues}

    def get_queue(self, name: str) -> QueueInfo | None:
        return self.queues.get(name)

    def list_queues(self, fresh: bool = False) -> list[QueueInfo]:
        return list(self.queues.values())

    def get_namespace_queue(self, namespace: str, name: str) -> NamespaceQueueInfo | None:
        return None

    def list_namespace_queues(
        self, namespace: str | None, fresh: bool = False
    ) -> list[NamespaceQueueInfo]:
        return []

    def list_podgroups(self, namespace: str) -> list[PodGroupInfo]:
        return []


def _review(annotations: dict[str, str], lookup: Queues | None = None) -> rules.Verdict:
    obj: dict[str, Any] = {
        "metadata": {"name": "q", "annotations": annotations},
        "spec": {"weight": 1},
    }
    request = {
        "uid": "1",
        "resource": {"group": "scheduling.volcano.sh", "version": "v1beta1", "resource": "queues"},
        "operation": "CREATE",
        "name": "q",
        "object": obj,
    }
    return rules.review(request, lookup or Queues())


def _annotations(path: str, weights: str) -> dict[str, str]:
    return {hierarchy.HIERARCHY: path, hierarchy.WEIGHTS: weights}


@pytest.mark.parametrize(
    ("path", "weights", "message"),
    [
        pytest.param("root/a", "1", "has 2 levels but", id="lengths-differ"),
        pytest.param("root/a", "1/x", "'x' in '1/x' is not a number", id="not-a-number"),
        pytest.param("root/a", "1/NaN", "'NaN' in '1/NaN' is not a number", id="nan"),
        pytest.param("root/a", "1/0", "'0' in '1/0' must be larger than 0", id="zero"),
        pytest.param("", "1/2", "has 1 levels but", id="weights-without-path"),
    ],
)
def test_queue_with_bad_hierarchy_annotations_is_refused_naming_the_annotation(
    path: str, weights: str, message: str
) -> None:
    verdict = _review(_annotations(path, weights))
    assert not verdict.allowed
    assert "metadata.annotations[volcano.sh/hierarchy" in verdict.message
    assert message in verdict.message


@pytest.mark.parametrize(
    ("path", "weights"),
    [("root/a/b", "1/2/0.5"), ("a/b", "2/8"), ("", ""), ("root", "1")],
    ids=["weights-below-one", "no-root-prefix", "none", "root-only"],
)
def test_queue_with_good_hierarchy_annotations_is_allowed(path: str, weights: str) -> None:
    assert _review(_annotations(path, weights)).allowed


def test_queue_whose_path_has_another_queue_below_it_is_refused() -> None:
    below = QueueInfo("dev", hierarchy="root/sci/dev")
    verdict = _review(_annotations("root/sci", "1/1"), Queues([below]))
    assert not verdict.allowed
    assert "'root/sci' is not allowed to be a prefix of 'root/sci/dev' of queue dev" in (
        verdict.message
    )
    # Whole levels only, as Volcano's "/" suffix: root/scidev is not below root/sci.
    assert _review(
        _annotations("root/sci", "1/1"), Queues([QueueInfo("x", hierarchy="root/scidev")])
    ).allowed


def test_path_without_root_is_put_under_root_as_volcano_mutating_webhook_does() -> None:
    assert hierarchy.normalized("eng/dev", "2/8") == ("root/eng/dev", "1/2/8")
    assert hierarchy.normalized("root/eng", "1/2") == ("root/eng", "1/2")
    assert hierarchy.normalized("eng", "") == ("eng", "")  # both must be set
    stored = rules.queue_info(
        {"metadata": {"name": "q", "annotations": _annotations("eng/dev", "2/8")}}
    )
    assert stored.hierarchy == "root/eng/dev"


@pytest.mark.parametrize(
    ("annotations", "refused"),
    [
        pytest.param({LOST_AFTER_ANNOTATION: "3m"}, "", id="lost-after-duration"),
        pytest.param({LOST_AFTER_ANNOTATION: "45"}, "", id="lost-after-seconds"),
        pytest.param({STALE_DEADLINE_ANNOTATION: "6h"}, "", id="deadline-duration"),
        pytest.param({LOST_AFTER_ANNOTATION: "soon"}, LOST_AFTER_ANNOTATION, id="lost-after-text"),
        pytest.param({LOST_AFTER_ANNOTATION: "5s"}, LOST_AFTER_ANNOTATION, id="lost-after-short"),
        pytest.param({STALE_DEADLINE_ANNOTATION: "0s"}, STALE_DEADLINE_ANNOTATION, id="zero"),
        pytest.param({STALE_DEADLINE_ANNOTATION: "-1h"}, STALE_DEADLINE_ANNOTATION, id="negative"),
        pytest.param({ON_DRAIN_ANNOTATION: "Move"}, "", id="on-drain-move"),
        pytest.param({ON_DRAIN_ANNOTATION: "move"}, ON_DRAIN_ANNOTATION, id="on-drain-case"),
    ],
)
def test_dispatch_timings_the_dispatcher_could_not_read_are_refused_naming_the_annotation(
    annotations: dict[str, str], refused: str
) -> None:
    verdict = _review(annotations)
    assert verdict.allowed == (not refused)
    if refused:
        assert f"metadata.annotations[{refused}]: must be " in verdict.message

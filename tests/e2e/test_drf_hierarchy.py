"""drf with `enableHierarchy: true` on the real stack: two subtrees weighted 1:3 split a full
cluster by their hierarchical dominant shares.

The stack's volcano-scheduler.conf is Caldera's default with capacity in proportion's place
(Caldera refuses proportion with drf's hierarchy, as Volcano's hdrf design asks) and drf's
`enableHierarchy: true`. Queue `light-*` sits at `root/light-<tag>/jobs` with weights `1/1/1`,
`heavy-*` at `root/heavy-<tag>/jobs` with `1/3/1`: the subtrees part at the level weighted 1:3.
The queue that asks deserves the whole cluster, the one that filled it nothing, so capacity
alone would hand the asker everything: what stops reclaim is drf's hierarchy. A pod is taken
only while the asker's queue, with the pod moved, would still come strictly before the other
by share/weight level by level down the paths (a tie at the parting level, light 3 against
heavy 9, is decided one level down by plain share, where the smaller queue comes first). So
light filled first ends light 4, heavy 8 (heavy's ninth pod would tie and lose the tie);
heavy filled first ends at the 1:3 point, light 3, heavy 9 (light's third pod ties and wins).
Caldera's gang scheduler runs on the session's 3 kwok nodes of 8 CPUs: 12 pods of 2 CPUs fill
it. Volcano has no e2e for hdrf; its unit cases are in
`tests/unit/scheduling/test_drf_hierarchy.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from kubernetes import client

from cli.devstack import processes
from models import hierarchy
from scheduling.framework.conf import CALDERA_DEFAULT
from tests.e2e import sharing
from tests.e2e.conftest import eventually
from tests.e2e.sharing import SLOTS

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
HDRF: Final = CALDERA_DEFAULT.replace("name: proportion", "name: capacity").replace(
    "  - name: drf\n", "  - name: drf\n    enableHierarchy: true\n"
)
# Where reclaim stops, (light, heavy), by the queue that filled the cluster first.
SETTLES: Final = {"light": (4, 8), "heavy": (3, 9)}


@pytest.fixture(params=["light", "heavy"])
def subtrees(request: pytest.FixtureRequest, api: client.ApiClient) -> Iterator[tuple[str, ...]]:
    """Queues `light-*` and `heavy-*` in subtrees weighted 1:3; the one filled second (the
    asker) deserves the whole cluster. Yields (first, light, heavy)."""
    first = str(request.param)
    asker = "heavy" if first == "light" else "light"
    tag = uuid.uuid4().hex[:5]
    annotations = {
        "light": {hierarchy.HIERARCHY: f"root/light-{tag}/jobs", hierarchy.WEIGHTS: "1/1/1"},
        "heavy": {hierarchy.HIERARCHY: f"root/heavy-{tag}/jobs", hierarchy.WEIGHTS: "1/3/1"},
    }
    specs = {asker: {"deserved": {"cpu": str(2 * SLOTS)}}}
    with sharing.queues(api, {"light": 1, "heavy": 1}, annotations, specs) as names:
        yield (first, *names)


def test_subtrees_weighted_one_to_three_stop_reclaim_at_their_hierarchical_shares(
    api: client.ApiClient,
    namespace: str,
    subtrees: tuple[str, str, str],
    scheduler_conf: Path,
    controllers: list[processes.Process],
) -> None:
    first, light, heavy = subtrees
    worker = controllers[0]
    seen = sharing.sessions(worker)
    scheduler_conf.write_text(HDRF)
    eventually(lambda: sharing.sessions(worker) > seen + 1, 60, "a session under the new conf")
    early, late = (light, heavy) if first == "light" else (heavy, light)
    sharing.fill(api, namespace, early, "e")
    for i in range(SLOTS):  # the late queue asks for the whole cluster too
        sharing.submit(api, namespace, f"a{i}", late)

    def split() -> tuple[int, int]:
        counts = sharing.running(api, namespace)
        return counts[light], counts[heavy]

    expected = SETTLES[first]
    timeline: list[tuple[int, int]] = []

    def settled() -> bool:
        now = split()
        if not timeline or timeline[-1] != now:
            timeline.append(now)
        return now == expected

    try:
        eventually(settled, 240, f"light:heavy {expected}")
    except AssertionError as e:
        raise AssertionError(
            f"{e}; splits seen {timeline}; podgroups {sharing.groups(api, namespace)}"
        ) from None
    seen = sharing.sessions(worker)
    eventually(lambda: sharing.sessions(worker) >= seen + 3, 60, "three more sessions")
    assert split() == expected, sharing.groups(api, namespace)  # and no pod goes back and forth
    taken = SLOTS - expected[0 if first == "light" else 1]
    assert len(sharing.evicted_pods(api, namespace)) == taken

"""Sessions over random NamespaceQueue trees (capabilities, readiness, local parents that are
missing or loop, references that do not parse) never raise, never place a job whose queue may
not place (not Open and Ready, missing, malformed, or no capacity plugin), and never let a
queue's subtree (a NamespaceQueue's or its cluster parent's) hold more than its capability.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.keys import QueueName
from scheduling.actions.registry import run_session
from scheduling.api.vectors import EMPTY
from scheduling.cache.objects import snapshot_from_objects
from scheduling.framework.session_config import SessionConfig
from scheduling.framework.state import SessionState
from tests.unit.fuzz.common import fuzz_settings
from tests.unit.scheduling.builders import make_node, make_pod, make_podgroup, make_queue

pytestmark = pytest.mark.unit

Obj = dict[str, Any]
CONFIGS = (
    SessionConfig(),  # proportion: no NamespaceQueue places
    SessionConfig(capacity=True),
    SessionConfig(capacity=True, hierarchy=True),
)
NAMES = ("a", "b", "c", "d")
NAMESPACES = ("team-a", "team-b")
REFS = (*(f"namespace/{n}" for n in NAMES), "namespace/gone", "research", "other/x", "default")


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], list[Obj], list[Obj], list[Obj]]:
    """Nodes, pods, PodGroups, cluster queues and NamespaceQueues, all pods pending."""
    nodes = [make_node(f"n{i}", cpu="4", memory="16Gi").obj() for i in range(2)]
    research_cap = draw(st.sampled_from([None, "2", "5"]))
    research = make_queue(
        "research",
        allowedNamespaces=["*"],
        **({"capability": {"cpu": research_cap}} if research_cap else {}),
    )
    queues = [make_queue("default"), make_queue("root"), research]
    nqs = []
    for namespace in NAMESPACES:
        for name in NAMES:
            if draw(st.booleans()):
                continue
            spec: Obj = {"parent": draw(st.sampled_from(["cluster/research", *NAMES, "nope"]))}
            if (cap := draw(st.sampled_from([None, "1", "3"]))) is not None:
                spec["capability"] = {"cpu": cap}
            ready = draw(st.sampled_from(["True", "True", "False"]))
            nqs.append(
                {
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": spec,
                    "status": {
                        "state": draw(st.sampled_from(["Open", "Open", "Closed"])),
                        "conditions": [{"type": "Ready", "status": ready, "reason": "X"}],
                    },
                }
            )
    pods, groups = [], []
    for g in range(draw(st.integers(1, 6))):
        namespace, name = draw(st.sampled_from(NAMESPACES)), f"g{g}"
        size = draw(st.integers(1, 3))
        groups.append(
            make_podgroup(
                name,
                min_member=size,
                queue=draw(st.sampled_from(REFS)),
                namespace=namespace,
                phase=draw(st.sampled_from(["Pending", "Inqueue"])),
            )
        )
        pods += [
            make_pod(f"{name}-{i}", group=name, namespace=namespace).obj() for i in range(size)
        ]
    return nodes, pods, groups, queues, nqs


@given(world=worlds(), config=st.sampled_from(CONFIGS))
@fuzz_settings(max_examples=200)
def test_namespace_queue_sessions_place_only_where_allowed_and_within_bounds(
    world: tuple[list[Obj], list[Obj], list[Obj], list[Obj], list[Obj]], config: SessionConfig
) -> None:
    nodes, pods, groups, queues, nqs = world
    snap = snapshot_from_objects(nodes, pods, groups, queues, namespace_queues=nqs)
    state = SessionState(snap, config)  # the books as the session opens, for the refusals
    result = run_session(snap, config)
    by_name = {q.name: q for q in snap.queues}
    for placement in result.placements:
        queue = by_name[snap.job(placement.job).queue]
        assert queue.name not in state.refused, f"{placement.job} placed in refused {queue.name}"
        if queue.namespaced:
            assert config.capacity and queue.refusal is None and queue.listed
    # All pods were pending: what a queue holds now is what the session placed under it
    # (`queue_allocated` rolls each queue's up through its parents).
    for queue in snap.queues:
        held = result.queue_allocated.get(QueueName(queue.name), EMPTY)
        cap = queue.capability
        if (queue.namespaced or queue.name == "research") and cap is not None:
            assert held.milli_cpu <= cap.milli_cpu, f"{queue.name} holds {held.milli_cpu}"

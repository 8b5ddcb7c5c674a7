"""The Queue core fed random orders of its inputs (PodGroup batches with repeats and late
deletions, children and parent states in any order, commands in any state, the queue seen
again or as a new object) never raises; its counts are always the PodGroups it was told
about, a closing queue stays Closing only while something holds it, nothing closes the root
queue, and what it writes is what it counts. A state another queue reports that the
controller does not know reads as Unknown instead of raising.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from controllers import effects as fx
from controllers.parsed import ParsedQueue
from controllers.queue import controller
from controllers.queue import effects as queue_fx
from controllers.queue.state import QueueRecord
from models.bus import Action
from models.scheduling import CLOSED_BY_PARENT, ROOT_QUEUE, QueueState
from models.signals import common as common_signals
from models.signals import queue as queue_signals
from tests.builders import observed_queue
from tests.unit.fuzz.common import fuzz_settings

pytestmark = pytest.mark.unit

COUNTED = ("Pending", "Running", "Unknown", "Inqueue", "Completed")
GROUP_PHASES = (None, *COUNTED, "Weird")
STATES = (None, "Open", "Closed", "Closing", "Unknown")
REPORTED = (*STATES, "Draining")  # what another queue may report: any string
GROUPS = ("a/1", "a/2", "b/1", "b/2")
CHILDREN = ("c1", "c2")


def expected_counts(groups: dict[str, str]) -> dict[str, int]:
    phases = Counter(p if p in COUNTED else "Pending" for p in groups.values())
    return {phase.lower(): phases[phase] for phase in COUNTED}


class QueueCoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.uids = 0
        self.last: controller.Input | controller.Command | None = None

    def _fresh_run(self) -> None:
        self.q = QueueRecord()
        self.groups: dict[str, str] = {}

    def _queue(self, uid: str, state: str | None, closed_by_parent: bool) -> dict[str, Any]:
        annotations = {CLOSED_BY_PARENT: "true"} if closed_by_parent else {}
        meta = {"name": self.name, "uid": uid, "annotations": annotations}
        spec: dict[str, Any] = {"weight": 1}
        if self.parent is not None:
            spec["parent"] = self.parent
        doc: dict[str, Any] = {"metadata": meta, "spec": spec}
        if state is not None:
            doc["status"] = {"state": state}
        return doc

    def step(self, item: controller.Input | controller.Command) -> None:
        self.last = item
        before = self.q
        decision = controller.decide(before, item)
        q = decision.state
        if isinstance(item, queue_signals.PodGroupsChanged):
            for ref in item.groups:
                if ref.deleted:
                    self.groups.pop(ref.key, None)
                else:
                    self.groups[ref.key] = ref.phase or "Pending"
        if any(isinstance(e, fx.Finish) for e in decision.effects):
            assert isinstance(item, queue_signals.QueueDeleted)
            self._fresh_run()
            return
        assert q.pod_groups == self.groups
        assert q.counts() == expected_counts(self.groups)
        assert controller.view(q).pod_groups == expected_counts(self.groups)
        written = [e for e in decision.effects if isinstance(e, queue_fx.WriteQueueStatus)]
        if written:
            assert written[-1].counts == q.counts_written
            assert written[-1].state == q.current
        if q.queue is not None and not q.deleted:
            if q.current == QueueState.CLOSING:
                assert q.holding() > 0, f"Closing with nothing left: {q}"
            closed = (QueueState.CLOSED, QueueState.CLOSING)
            if q.name == ROOT_QUEUE and not isinstance(item, ParsedQueue):
                # Nothing closes the root queue (a recorded state is adopted as it is).
                assert before.current in closed or q.current not in closed
            if isinstance(item, queue_signals.PodGroupsChanged | ParsedQueue):
                assert q.counts_written == q.counts(), "counts changed and were not written"
        self.q = q

    @initialize(root=st.integers(0, 4), parent=st.sampled_from([None, "root", "p"]))
    def start(self, root: int, parent: str | None) -> None:
        self.name = ROOT_QUEUE if root == 0 else "q"
        self.parent = None if self.name == ROOT_QUEUE else parent
        self._fresh_run()
        self.uids += 1
        self.uid = f"uid-{self.uids}"
        self.step(observed_queue(self._queue(self.uid, None, False)))

    @rule(
        new_object=st.integers(0, 5),
        state=st.sampled_from(STATES),
        closed_by_parent=st.booleans(),
    )
    def observe(self, new_object: int, state: str | None, closed_by_parent: bool) -> None:
        """The Queue again (its recorded state may lag), or a new object under the name."""
        if new_object == 0:
            self.uids += 1
            self.uid = f"uid-{self.uids}"
        self.step(observed_queue(self._queue(self.uid, state, closed_by_parent)))

    @rule(data=st.data())
    def pod_groups_changed(self, data: st.DataObject) -> None:
        keys = data.draw(st.lists(st.sampled_from(GROUPS), max_size=3, unique=True))
        refs = [
            queue_signals.PodGroupRef(
                key=k,
                phase=data.draw(st.sampled_from(GROUP_PHASES)),
                deleted=data.draw(st.integers(0, 2)) == 0,
            )
            for k in keys
        ]
        self.step(queue_signals.PodGroupsChanged(groups=refs))

    @rule(
        name=st.sampled_from(CHILDREN),
        state=st.sampled_from(REPORTED),
        closed_by_parent=st.booleans(),
        deleted=st.integers(0, 3),
    )
    def child_observed(
        self, name: str, state: str | None, closed_by_parent: bool, deleted: int
    ) -> None:
        self.step(
            queue_signals.ChildQueueObserved(
                name=name, state=state, closed_by_parent=closed_by_parent, deleted=deleted == 0
            )
        )

    @rule(state=st.sampled_from(["Open", "Closed", "Closing", "Unknown", "Draining"]))
    def parent_state_changed(self, state: str) -> None:
        self.step(queue_signals.ParentStateChanged(parent=self.parent or "root", state=state))

    @rule(action=st.sampled_from([*(a.value for a in Action), "Bogus"]), update=st.booleans())
    def command(self, action: str, update: bool) -> None:
        if update and action in (Action.OPEN_QUEUE, Action.CLOSE_QUEUE):
            self.step(controller.Command(action=Action(action), why="update"))
        else:
            self.step(common_signals.CommandIssued(action=action, command="cmd"))

    @rule(which=st.integers(0, 5))
    def queue_deleted(self, which: int) -> None:
        if which == 0:
            self.step(queue_signals.QueueDeleted(uid=self.uid))

    @rule()
    def duplicate(self) -> None:
        if self.last is not None and not isinstance(self.last, queue_signals.QueueDeleted):
            self.step(self.last)


def _observed(name: str, parent: str = "root") -> QueueRecord:
    queue = {"metadata": {"name": name, "uid": f"u-{name}"}, "spec": {"parent": parent}}
    return controller.decide(QueueRecord(), observed_queue(queue)).state


def test_child_reporting_a_state_unknown_to_the_controller_does_not_raise() -> None:
    """It still holds a closing parent: only a Closed child lets it close."""
    q = _observed("p")
    q = controller.decide(q, queue_signals.ChildQueueObserved(name="c", state="Draining")).state
    assert q.children["c"].state == QueueState.UNKNOWN
    closed = controller.decide(q, controller.Command(action=Action.CLOSE_QUEUE)).state
    assert closed.current == QueueState.CLOSING


def test_parent_state_unknown_to_the_controller_neither_closes_nor_reopens() -> None:
    q = _observed("c", parent="p")
    decision = controller.decide(q, queue_signals.ParentStateChanged(parent="p", state="Draining"))
    assert decision.state.current == QueueState.OPEN and decision.effects == ()


QueueCoreMachine.TestCase.settings = fuzz_settings(max_examples=100, steps=40)
test_queue_core_never_raises_and_keeps_its_invariants = QueueCoreMachine.TestCase

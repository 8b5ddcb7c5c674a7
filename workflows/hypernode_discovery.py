"""HyperNodeDiscoveryWorkflow: Volcano's label-based HyperNode discovery, one per cluster
(id `hypernode-discovery`).

Each round is one activity (`discover_hypernodes`) that reads the configuration, the nodes and
the HyperNodes, and creates, updates and deletes the label source's HyperNodes and writes
every HyperNode's `status.nodeCount`. Volcano's label discoverer runs on node events; this
workflow runs a round every period instead (the configuration's `interval`, else its own,
10 s by default), and at once on `nodes_changed`. A failed round (a configuration that does
not load, an apiserver away) is logged and the next round tries again, so the workflow never
fails on a bad configuration. The names' random suffixes are seeded from `workflow.random()`,
so a retried round draws the same names.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from pydantic import BaseModel, ConfigDict
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from activities import options
    from activities.controllers import hypernodes
    from workflows import activity_call
    from workflows.inbox import continue_due

SEED_BITS = 63
WORKFLOW = "HyperNodeDiscoveryWorkflow"


class HyperNodeDiscoveryInput(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    period_ms: int = 10_000  # between rounds when the configuration names no interval
    max_history: int = 0  # 0: continue as new when the server suggests it
    rounds: int = 0  # rounds run before this run (carried through continue-as-new)


class NodesChanged(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    why: str = ""


@workflow.defn(name=WORKFLOW)
class HyperNodeDiscoveryWorkflow:
    @workflow.init
    def __init__(self, start: HyperNodeDiscoveryInput) -> None:
        self._start = start
        self._period = timedelta(milliseconds=start.period_ms)
        self._rounds = start.rounds
        self._due = False
        # None: no round has finished in this run.
        self._last: hypernodes.DiscoverHyperNodesResult | None = None

    @workflow.signal(name="nodes_changed")
    def nodes_changed(self, changed: NodesChanged) -> None:
        self._due = True

    @workflow.query
    def last_round(self) -> hypernodes.DiscoverHyperNodesResult | None:
        return self._last

    @workflow.query
    def rounds(self) -> int:
        return self._rounds

    @workflow.run
    async def run(self, start: HyperNodeDiscoveryInput) -> None:
        while True:
            self._due = False
            wait = await self._round()
            # The period elapsing is a regular round; a signal brings it forward.
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(
                    lambda: self._due, timeout=wait, timeout_summary="next discovery round"
                )
            if continue_due(self._start.max_history):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._start.model_copy(update={"rounds": self._rounds}))

    async def _round(self) -> timedelta:
        """Run one round; how long to wait for the next."""
        self._rounds += 1
        seed = workflow.random().getrandbits(SEED_BITS)
        try:
            result = await activity_call.run(
                hypernodes.discover_hypernodes,
                hypernodes.DiscoverHyperNodesInput(seed=seed),
                options.HYPERNODE_DISCOVERY,
                f"hypernode discovery round {self._rounds}",
            )
        except ActivityError as e:
            workflow.logger.warning(
                "hypernode discovery failed round=%d error=%s", self._rounds, e.cause
            )
            return self._period
        self._last = result
        if result.created or result.updated or result.deleted:
            workflow.logger.info(
                "hypernodes discovered round=%d discovered=%d created=%d updated=%d deleted=%d",
                self._rounds,
                result.discovered,
                result.created,
                result.updated,
                result.deleted,
            )
        if result.interval_ms:
            return timedelta(milliseconds=result.interval_ms)
        return self._period

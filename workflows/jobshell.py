"""What the workflows of both job kinds (Volcano's and batch/v1) share on top of the entity
shell: the signals every job takes, how its Events name it, and the search attributes it gets
once first observed. A subclass sets `_entity`, its API kind and model, and adds what is its
own."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

with workflow.unsafe.imports_passed_through():
    from controllers.parsed import ParsedJob
    from models.meta import Identity
    from models.signals import common as common_signals
    from models.signals import job as job_signals
    from models.signals import scheduler as scheduler_signals
    from service import search_attributes
    from workflows import visibility
    from workflows.entity import Ref, parsed
    from workflows.handlers import TakesDeletion


class Observed(Protocol):
    @property
    def identity(self) -> Identity: ...
    @property
    def observed(self) -> bool: ...


S = TypeVar("S", bound=Observed)
JobSignal = (
    ParsedJob[Any]
    | common_signals.JobDeleted
    | scheduler_signals.PodsPlaced
    | job_signals.PodsListed
)


class Inbox(Protocol):
    def accept(self, item: JobSignal) -> int: ...


class JobShell(TakesDeletion, Generic[S]):
    API_VERSION: ClassVar[str]
    KIND: ClassVar[str]
    MODEL: ClassVar[type[BaseModel]]  # what the core parses `job_observed` into
    _entity: Inbox

    def ref(self, state: S) -> Ref:
        who = state.identity
        return Ref(**who.model_dump(), api_version=self.API_VERSION, kind=self.KIND)

    def decided(self, before: S, after: S) -> None:
        if not before.observed and after.observed:
            who = after.identity
            visibility.upsert_changed(
                [
                    search_attributes.NAMESPACE.value_set(who.namespace),
                    search_attributes.JOB_NAME.value_set(who.name),
                    *self.attributes(after),
                ]
            )

    def carry(
        self, state: S, start_over: job_signals.JobObserved | None, max_history: int
    ) -> object:
        raise NotImplementedError  # each job kind's own

    def made_again(self, state: S, item: object, max_history: int) -> object | None:
        if not isinstance(item, ParsedJob):
            return None
        uid = (item.signal.job.get("metadata") or {}).get("uid")
        return None if uid == state.identity.uid else self.carry(state, item.signal, max_history)

    def attributes(self, state: S) -> list[SearchAttributeUpdate[Any]]:
        """Search attributes of the kind's own, set with the shared ones."""
        return []

    def _observe(self, observed: job_signals.JobObserved) -> None:
        """Hand the core the Job parsed here, once (`controllers.parsed`); one that is not the
        kind's object is dropped, logged."""
        job = parsed(self.MODEL, observed.job, job_signals.SIGNAL_JOB_OBSERVED)
        if job is not None:
            self._entity.accept(ParsedJob(signal=observed, job=job))

    @workflow.signal(name=job_signals.SIGNAL_JOB_OBSERVED)
    def job_observed(self, observed: job_signals.JobObserved) -> None:
        self._observe(observed)

    @workflow.signal(name=job_signals.SIGNAL_PODS_LISTED)
    def pods_listed(self, listed: job_signals.PodsListed) -> None:
        self._entity.accept(listed)

    @workflow.signal(name=scheduler_signals.SIGNAL_PODS_PLACED)
    def pods_placed(self, placed: scheduler_signals.PodsPlaced) -> None:
        self._entity.accept(placed)

"""The backlog digest goes back in a session's report only when the SchedulerWorkflow may lack
it: None ("as before") needs the workflow's last session to have run in this process, from an
earlier session, with the same digest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from activities.messages import Arrivals, SessionInput
from activities.scheduler import backlogs
from models.keys import JobKey, QueueName
from models.scheduling import PodGroupPhase
from scheduling.api.backlog import Backlog, QueueBacklog, Waiting
from scheduling.cache.observed import ObservedGroup, Owner

pytestmark = pytest.mark.unit

HERE = Arrivals(token="this-process", count=3)
DIGEST = Backlog(
    queues={
        QueueName("q"): QueueBacklog.of([(JobKey("ns/train-uid"), PodGroupPhase.PENDING, "x")], 1)
    }
)
GROUPS = {
    JobKey("ns/train-uid"): ObservedGroup(
        namespace="ns",
        name="train-uid",
        owners=(Owner("batch.volcano.sh/v1alpha1", "Job", "train", "uid"),),
        phase="Pending",
        conditions=(),
    )
}


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    backlogs.forget()
    yield
    backlogs.forget()


def _request(session: int, since: Arrivals | None = HERE) -> SessionInput:
    return SessionInput(scheduler_name="volcano", session=session, assumed={}, since=since)


def _report(
    session: int, since: Arrivals | None = HERE, digest: Backlog = DIGEST
) -> Backlog | None:
    return backlogs.report(_request(session, since), HERE, digest, GROUPS)


def test_the_first_report_is_in_full_and_names_each_podgroup_after_its_job() -> None:
    reported = backlogs.report(_request(1), HERE, DIGEST, GROUPS)
    assert reported is not None
    assert reported.queues[QueueName("q")].jobs == (
        Waiting("ns", "train", PodGroupPhase.PENDING, 0),
    )


def test_an_unchanged_digest_after_a_session_of_this_process_is_none() -> None:
    assert _report(1) is not None
    assert _report(2) is None
    assert _report(3) is None


def test_a_changed_digest_goes_back_in_full() -> None:
    _report(1)
    assert _report(2, digest=Backlog()) == Backlog()
    assert _report(3, digest=Backlog()) is None


@pytest.mark.parametrize(
    "since",
    [
        None,  # the workflow's last session failed, or it just started
        Arrivals(token="another-worker", count=9),  # its last session ran elsewhere
    ],
)
def test_a_workflow_that_heard_last_from_elsewhere_gets_it_in_full(since: Arrivals | None) -> None:
    _report(1)
    assert _report(2, since=since) is not None


def test_a_retried_attempt_of_the_same_session_reports_in_full() -> None:
    """The first attempt's answer may never have reached the workflow."""
    _report(4)
    assert _report(4) is not None


def test_each_scheduler_has_its_own_memory() -> None:
    _report(1)
    other = SessionInput(scheduler_name="other", session=2, assumed={}, since=HERE)
    assert backlogs.report(other, HERE, DIGEST, GROUPS) is not None

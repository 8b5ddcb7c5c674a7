"""One decision's short writes of a Volcano Job as one local activity: its status, its
PodGroup and its pods, in the order the decision gave them.

Why: every local activity is a marker in the job's history and one more round of the worker's
local-activity machinery; a decision that ensures the PodGroup and writes the status costs one
of each, not two. What it must keep is each step's end as a call of its own would have had it:

- a permanent error (Invalid, Forbidden, BadRequest: not retried by `options.KUBE_WRITE`) is
  that step's outcome, and the steps after it still run; NamespaceGone also ends the batch,
  since nothing written there would last (the shell stops the decision's writes there too);
- any other error fails the attempt, which the retry policy retries as it would the step's own
  activity; the retry runs every step again, which is safe because each is idempotent (a
  status replaced whole, a PodGroup or pod that exists counts as created and is brought up to
  date, one already gone as deleted); the failure's details name the step, so once the
  attempts run out the shell hands back that step's failure alone and goes on after it.

Events are not steps: one is written with a generated name, so a retry would write it twice,
and it is best effort, with fewer attempts than a write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from temporalio import activity
from temporalio.exceptions import ApplicationError, FailureError

from activities import options, status
from activities.controllers import podgroups, pods
from activities.messages import (
    NAMESPACE_GONE,
    CreatePodsResult,
    CreatePodsStep,
    DeletePodGroupStep,
    DeletePodsResult,
    DeletePodsStep,
    EnsurePodGroupStep,
    StepOutcome,
    WritesFailed,
    WritesInput,
    WritesResult,
    WriteStatusStep,
    WriteStep,
)

Runner = Callable[[WriteStep], CreatePodsResult | DeletePodsResult | None]


@activity.defn(name="apply_writes")
def apply_writes(request: WritesInput) -> WritesResult:
    return carry_out(request, run_step)


def run_step(step: WriteStep) -> CreatePodsResult | DeletePodsResult | None:
    """One step, by the function its own activity runs; the pods' results, None otherwise."""
    match step:
        case WriteStatusStep():
            status.write_job_status(step.input)
        case EnsurePodGroupStep():
            podgroups.ensure_pod_group(step.input)
        case DeletePodGroupStep():
            podgroups.delete_pod_group(step.input)
        case CreatePodsStep():
            return pods.create_pods(step.input)
        case DeletePodsStep():
            return pods.delete_pods(step.input)
        case _:
            assert_never(step)
    return None


def carry_out(request: WritesInput, run: Runner) -> WritesResult:
    """The steps in order by `run` (the workflow tests' fakes pass their own), each error
    ending as the module docstring says."""
    outcomes: list[StepOutcome] = []
    for index, step in enumerate(request.steps):
        try:
            result = run(step)
        except ApplicationError as e:
            if not (e.non_retryable or e.type in options.PERMANENT):
                raise _retried(index, outcomes, e) from e
            gone = e.type == NAMESPACE_GONE
            outcomes.append(StepOutcome(error=str(e), namespace_gone=gone))
            if gone:
                break
            continue
        except FailureError:
            raise  # the activity's own cancellation: not a step's to answer for
        except Exception as e:
            # A connection error or a bug: retried, as the SDK retries it in an activity alone.
            raise _retried(index, outcomes, ApplicationError(str(e), type=type(e).__name__)) from e
        outcomes.append(
            StepOutcome(
                created=result if isinstance(result, CreatePodsResult) else None,
                deleted=result if isinstance(result, DeletePodsResult) else None,
            )
        )
    return WritesResult(outcomes=outcomes)


def _retried(index: int, outcomes: list[StepOutcome], e: ApplicationError) -> ApplicationError:
    """The step's own error, retried as it would be alone (its type, category and the delay it
    asks for), with details that name the step."""
    failed = WritesFailed(step=index, outcomes=outcomes)
    return ApplicationError(
        e.message,
        failed.model_dump(mode="json"),
        type=e.type,
        next_retry_delay=e.next_retry_delay,
        category=e.category,
    )

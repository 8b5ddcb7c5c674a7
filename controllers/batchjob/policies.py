"""podFailurePolicy and successPolicy matching, as the built-in job controller does it. Pure.

A failed pod goes through the rules in order and the first match decides: FailJob fails the
whole Job (with the controller's message naming the container or condition and the rule's
index), FailIndex fails the pod's index, Ignore does not count the failure, Count counts it.
No match counts it too.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from controllers.batchjob import indexes
from controllers.batchjob.state import ContainerExit, PodRecord
from models.batchv1 import FailurePolicyAction, OnExitCodes, PodFailurePolicy, SuccessPolicy


class Match(BaseModel):
    """What the policy says about one failed pod."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fail_job: str | None = None  # None: the Job is not failed by this pod
    counts: bool = True  # counts toward backoffLimit (and the index's budget)
    action: FailurePolicyAction | None = None  # None: no rule matched


def _exit_matches(rule: OnExitCodes, exit: ContainerExit) -> bool:
    if rule.container_name is not None and rule.container_name != exit.name:
        return False
    if exit.exit_code == 0:
        return False
    inside = exit.exit_code in rule.values
    return inside if rule.operator == "In" else not inside


def _exit(rule: OnExitCodes, pod: PodRecord) -> ContainerExit | None:
    """Regular containers first, then init containers, each in status order."""
    for init in (False, True):
        for exit in pod.exits:
            if exit.init == init and _exit_matches(rule, exit):
                return exit
    return None


def match(policy: PodFailurePolicy | None, pod: PodRecord, namespace: str) -> Match:
    if policy is None:
        return Match()
    for position, rule in enumerate(policy.rules):
        message = None
        if rule.on_exit_codes is not None:
            exit = _exit(rule.on_exit_codes, pod)
            if exit is None:
                continue
            message = (
                f"Container {exit.name} for pod {namespace}/{pod.name} failed with exit code "
                f"{exit.exit_code} matching {rule.action} rule at index {position}"
            )
        elif rule.on_pod_conditions is not None:
            wanted = {(c.type, c.status) for c in rule.on_pod_conditions}
            found = next((t for t, s in pod.conditions.items() if (t, s) in wanted), None)
            if found is None:
                continue
            message = (
                f"Pod {namespace}/{pod.name} has condition {found} matching {rule.action} "
                f"rule at index {position}"
            )
        else:
            continue
        if rule.action == FailurePolicyAction.FAIL_JOB:
            return Match(fail_job=message, action=rule.action)
        return Match(counts=rule.action != FailurePolicyAction.IGNORE, action=rule.action)
    return Match()


def success(
    policy: SuccessPolicy | None, completions: int, succeeded: indexes.Intervals
) -> str | None:
    """The SuccessCriteriaMet message ("Matched rules at index 0"); None: no rule is met."""
    if policy is None or not succeeded:
        return None
    for position, rule in enumerate(policy.rules):
        if rule.succeeded_indexes is not None:
            required = indexes.parse(rule.succeeded_indexes, completions)
            if not required:
                continue
            contained = indexes.overlap(required, succeeded)
            enough = rule.succeeded_count is not None and contained >= rule.succeeded_count
            if contained == indexes.total(required) or enough:
                return f"Matched rules at index {position}"
        elif rule.succeeded_count is not None and indexes.total(succeeded) >= rule.succeeded_count:
            return f"Matched rules at index {position}"
    return None

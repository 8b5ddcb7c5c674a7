"""Shared settings for the fuzz tests: derandomized, so CI runs the same examples every time."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, settings

from controllers.outcomes import ActionFailed
from models.signals import common as common_signals

START = datetime(2026, 1, 1, tzinfo=UTC)


def fuzz_settings(max_examples: int, steps: int = 40) -> settings:
    """Fixed examples (derandomize), no deadline: a slow CI machine never flakes."""
    return settings(
        derandomize=True,
        deadline=None,
        max_examples=max_examples,
        stateful_step_count=steps,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        print_blob=False,
    )


def check_finish(job_uid: str | None, item: object) -> None:
    """A job's workflow finishes only on its own deletion or its namespace going."""
    match item:
        case common_signals.JobDeleted():
            assert job_uid is None or item.uid == job_uid
        case ActionFailed():
            assert item.namespace_gone
        case _:
            raise AssertionError(f"Finish after {item}")

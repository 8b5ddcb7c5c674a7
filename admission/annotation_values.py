"""The annotation values the scheduler and the dispatcher read, checked at admission: a value
they could not read would otherwise be dropped or fall back to a default silently, and the
object would run without the limit or the policy its author set. Each message names the
annotation.

Must not import anything with I/O: this module is pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from admission import reads
from models.duration import positive_duration, whole_seconds
from models.scheduling import SLA_WAITING_ANNOTATIONS
from models.signals import dispatch as dispatch_signals


def sla_problems(obj: Mapping[str, object]) -> list[str]:
    """An sla waiting time that is no duration above zero: Volcano's scheduler drops it
    silently, and the job would wait without the limit its author set."""
    annotations = reads.mapping(obj, "metadata", "annotations")
    problems = []
    for key in SLA_WAITING_ANNOTATIONS:
        value = annotations.get(key)
        if value is not None and not (isinstance(value, str) and positive_duration(value)):
            problems.append(
                f"metadata.annotations[{key}]: must be a duration above zero such as '10m', "
                f"not {value!r}"
            )
    return problems


def dispatch_problems(obj: Mapping[str, object]) -> list[str]:
    """The queue's dispatch timings: whole seconds or a Go duration above zero (lost-after at
    least MIN_LOST_AFTER), and its drain policy, as the forwarder reads them
    (`queue_translate.dispatch_settings`)."""
    annotations = reads.mapping(obj, "metadata", "annotations")
    problems = []
    for key, least in (
        (dispatch_signals.LOST_AFTER_ANNOTATION, dispatch_signals.MIN_LOST_AFTER),
        (dispatch_signals.STALE_DEADLINE_ANNOTATION, 1),
    ):
        value = annotations.get(key)
        if value is None:
            continue
        seconds = whole_seconds(value) if isinstance(value, str) else None
        if seconds is None or seconds < least:
            problems.append(
                f"metadata.annotations[{key}]: must be seconds or a duration such as '3m', "
                f"at least {least}s, not {value!r}"
            )
    on_drain = annotations.get(dispatch_signals.ON_DRAIN_ANNOTATION)
    if on_drain is not None and on_drain not in dispatch_signals.ON_DRAIN_VALUES:
        problems.append(
            f"metadata.annotations[{dispatch_signals.ON_DRAIN_ANNOTATION}]: must be one of "
            f"{', '.join(dispatch_signals.ON_DRAIN_VALUES)}, not {on_drain!r}"
        )
    return problems

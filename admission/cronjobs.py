"""The CronJob rules: what Volcano's CronJob webhook refuses, and the Job its template makes.

Volcano's webhook, on CREATE and UPDATE: the schedule is given, carries no `TZ=`/`CRON_TZ=`
(the zone belongs in `timeZone`), and parses as a standard five-field cron expression or a
descriptor (`controllers.cronjob.cron`, the parser the controller runs); `timeZone`, when set,
is not empty, not `Local`, made of IANA name parts, and known; the name leaves room for the
Jobs' `-<minutes>` suffix (52 characters at most) and is a qualified name. Caldera also checks
the template as the Job webhook would check the Jobs made from it (`admission.templates`,
`admission.jobspec`, and the pod-name length of `<cronjob>-<minutes>-<task>-<index>`), so a
template no Job could be made from is refused when it is written, not at every run.

Pure: takes the raw camelCase object; every message starts with the field it is about.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from admission import jobspec, templates
from controllers.cronjob import cron

MAX_TOTAL: Final = 63
SUFFIX: Final = 11  # "-" and the scheduled minute, with room to grow
MAX_NAME: Final = MAX_TOTAL - SUFFIX
MINUTES_DIGITS: Final = 8  # digits of the scheduled minute until the year 2160
_ZONE_PART: Final = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_QUALIFIED: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def schedule_problems(schedule: object) -> list[str]:
    if not isinstance(schedule, str) or not schedule:
        return ["spec.schedule: schedule is required, but got empty"]
    if "TZ" in schedule:
        return [
            "spec.schedule: schedule should not contain TZ or CRON_TZ, "
            "TZ should only be set in the timeZone field"
        ]
    try:
        cron.parse(schedule)
    except cron.CronError as e:
        return [f"spec.schedule: {schedule!r} is not a valid cron expression: {e}"]
    return []


def time_zone_problems(zone: object) -> list[str]:
    if zone is None:
        return []
    if not isinstance(zone, str) or not zone:
        return ["spec.timeZone: timeZone must be nil or non-empty string, got empty string"]
    parts = zone.split("/")
    if any(p in (".", "..") or p.startswith("-") or not _ZONE_PART.match(p) for p in parts):
        return [f"spec.timeZone: unknown timeZone {zone!r}"]
    if zone.lower() == "local":
        return ["spec.timeZone: timeZone can't be Local, and must be an IANA time zone"]
    if cron.load_zone(zone) is None:
        return [f"spec.timeZone: invalid timeZone {zone!r}"]
    return []


def name_problems(name: str) -> list[str]:
    if len(name) > MAX_NAME:
        return [
            f"metadata.name: cronJob name must be no more than {MAX_NAME} characters to "
            f"accommodate job name suffix (max {MAX_TOTAL} total)"
        ]
    if name and not _QUALIFIED.match(name):
        return [
            f"metadata.name: invalid cronJob name {name!r}: must consist of alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ]
    return []


def _pod_name_problems(name: str, template: Mapping[str, object]) -> list[str]:
    """The Job rule on pod names `<job>-<task>-<index>`, for the Jobs' names."""
    tasks = _mapping(template.get("spec")).get("tasks")
    out: list[str] = []
    job = len(name) + 1 + MINUTES_DIGITS
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        task_name = _mapping(task).get("name")
        replicas = _mapping(task).get("replicas")
        if not isinstance(task_name, str):
            continue
        last = max(replicas - 1, 0) if isinstance(replicas, int) else 0
        if job + len(task_name) + len(str(last)) + 2 > MAX_TOTAL:
            out.append(
                f"spec.jobTemplate.spec.tasks[{i}].name: pod names <job>-<task>-<index> of the "
                f"Jobs ({name}-<minutes>) must be at most {MAX_TOTAL} characters: shorten the "
                "CronJob or task name"
            )
    return out


def problems(obj: Mapping[str, object]) -> list[str]:
    spec = _mapping(obj.get("spec"))
    name = _mapping(obj.get("metadata")).get("name")
    name = name if isinstance(name, str) else ""
    template = _mapping(spec.get("jobTemplate"))
    inner = [*templates.problems(template), *jobspec.create_problems(template)]
    return [
        *schedule_problems(spec.get("schedule")),
        *time_zone_problems(spec.get("timeZone")),
        *name_problems(name),
        *(f"spec.jobTemplate.{p}" for p in inner),
        *_pod_name_problems(name, template),
    ]

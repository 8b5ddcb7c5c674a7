"""batch.volcano.sh/v1alpha1 CronJob: a Volcano Job made on a cron schedule, field for field.

The job template is a Volcano Job's metadata and spec (`models.vcjob`); its spec keeps the
Job's own CEL rules, except the two that compare a Job with its previous version (tasks and
queue fixed after creation): a CronJob's template may change freely, only the Jobs made from
it may not. Defaults the apiserver fills in are Volcano's: Allow, not suspended, three
successful and one failed Job kept.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field
from pydantic.config import JsonValue

from models import vcjob
from models.base import ApiModel, NonNegInt32
from models.meta import ObjectMeta

KIND: Final = "CronJob"
PLURAL: Final = "cronjobs"
# Stamped on every Job a CronJob makes: its nominal time, RFC 3339 in the CronJob's time zone.
SCHEDULED_TIMESTAMP: Final = "volcano.sh/cronjob-scheduled-timestamp"
DEFAULT_SUCCESSFUL_LIMIT: Final = 3
DEFAULT_FAILED_LIMIT: Final = 1


class ConcurrencyPolicy(StrEnum):
    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


def _template_rules() -> list[JsonValue]:
    """The JobSpec's CEL rules but those comparing it with its previous version."""
    extra = vcjob.JobSpec.model_config.get("json_schema_extra")
    rules = extra.get("x-kubernetes-validations") if isinstance(extra, dict) else None
    return [r for r in rules or [] if "oldSelf" not in str(r)] if isinstance(rules, list) else []


class TemplateJobSpec(vcjob.JobSpec):
    """A Volcano JobSpec as a template: the Job's rules without those about its updates."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _template_rules()})

    queue: str | None = Field(
        default=None, max_length=253, json_schema_extra={"x-crd-default": "default"}
    )  # None: the default queue


class TemplateMeta(ApiModel):
    """What the template may say of the Jobs' metadata; only labels and annotations travel."""

    name: str | None = None  # None: unnamed (Jobs are named after the CronJob anyway)
    namespace: str | None = None  # None: unset (Jobs go in the CronJob's namespace)
    labels: dict[str, str] | None = None  # None: no labels
    annotations: dict[str, str] | None = None  # None: no annotations
    finalizers: list[str] | None = None  # None: no finalizers


class JobTemplateSpec(ApiModel):
    metadata: TemplateMeta | None = None  # None: no labels or annotations for the Jobs
    spec: TemplateJobSpec


class CronJobSpec(ApiModel):
    schedule: str
    time_zone: str | None = None  # None: UTC (the zone Caldera's controllers run in)
    starting_deadline_seconds: Annotated[int, Field(ge=0)] | None = Field(
        default=None, json_schema_extra={"format": "int64"}
    )  # None: a missed run may start however late
    concurrency_policy: ConcurrencyPolicy = Field(
        default=ConcurrencyPolicy.ALLOW, json_schema_extra={"x-crd-default": "Allow"}
    )
    suspend: bool | None = Field(
        default=None, json_schema_extra={"x-crd-default": False}
    )  # None: not suspended
    job_template: JobTemplateSpec
    successful_jobs_history_limit: NonNegInt32 | None = Field(
        default=None, json_schema_extra={"x-crd-default": DEFAULT_SUCCESSFUL_LIMIT}
    )  # None: 3
    failed_jobs_history_limit: NonNegInt32 | None = Field(
        default=None, json_schema_extra={"x-crd-default": DEFAULT_FAILED_LIMIT}
    )  # None: 1

    @property
    def suspended(self) -> bool:
        return bool(self.suspend)

    @property
    def successful_limit(self) -> int:
        return (
            DEFAULT_SUCCESSFUL_LIMIT
            if self.successful_jobs_history_limit is None
            else self.successful_jobs_history_limit
        )

    @property
    def failed_limit(self) -> int:
        return (
            DEFAULT_FAILED_LIMIT
            if self.failed_jobs_history_limit is None
            else self.failed_jobs_history_limit
        )


class ObjectReference(ApiModel):
    """core/v1 ObjectReference, as the CronJob's status.active lists its running Jobs."""

    api_version: str | None = None  # None: not stated
    kind: str | None = None  # None: not stated
    namespace: str | None = None  # None: not stated
    name: str | None = None  # None: not stated
    uid: str | None = None  # None: not stated
    resource_version: str | None = None  # None: not stated
    field_path: str | None = None  # None: the whole object


class CronJobStatus(ApiModel):
    active: list[ObjectReference] | None = None  # None: no Job running
    last_schedule_time: datetime | None = None  # None: never scheduled
    last_successful_time: datetime | None = None  # None: no Job completed yet


class CronJob(ApiModel):
    """A Volcano CronJob (`cronvcjob`)."""

    api_version: Literal["batch.volcano.sh/v1alpha1"] = "batch.volcano.sh/v1alpha1"
    kind: Literal["CronJob"] = "CronJob"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: CronJobSpec
    status: CronJobStatus | None = None  # None: not reconciled yet

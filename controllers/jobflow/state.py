"""What a JobFlowWorkflow remembers between inputs, carried whole through continue-as-new."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from models.jobflow import JobFlowSpec, JobFlowStatus
from models.meta import Identity
from models.signals import jobflow as jobflow_signals


class FlowRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str = ""
    name: str = ""
    uid: str = ""  # "": the flow was not observed yet
    spec: JobFlowSpec | None = None  # None: not observed yet, nothing to do
    jobs: dict[str, jobflow_signals.FlowJob] = Field(
        default_factory=dict
    )  # live Jobs labelled with it
    created: list[str] = Field(default_factory=list)  # Jobs it made, not heard deleted since
    status: JobFlowStatus = Field(default_factory=JobFlowStatus)  # as last computed
    written: JobFlowStatus | None = None  # as last written; None: not yet
    missing: str = ""  # the JobTemplate the next Job waits for; "": none
    warned: str = ""  # the missing JobTemplate a Warning Event named; "": none
    deleting: list[str] = Field(default_factory=list)  # Jobs asked deleted (retain: delete)
    retry_at: datetime | None = None  # None: no retry timer armed

    @property
    def identity(self) -> Identity:
        return Identity(namespace=self.namespace, name=self.name, uid=self.uid)

    def exists(self, job: str) -> bool:
        """Made by this flow or heard of, and not heard deleted since."""
        return job in self.jobs or job in self.created

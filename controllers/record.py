"""The base of what the job kinds remember: frozen records, and the object a job's state
stands for (None until the forwarder first shows it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from models.meta import Identity, ObjectMeta, identity


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ObservedJob(Record):
    """A job's state; a kind adds `job` and says where its metadata is."""

    @property
    def meta(self) -> ObjectMeta | None:
        """None: the Job has not been observed yet."""
        raise NotImplementedError

    @property
    def observed(self) -> bool:
        return self.meta is not None

    @property
    def identity(self) -> Identity:
        return identity(self.meta)

    @property
    def key(self) -> str:
        """ "<namespace>/<name>" for logs ("?" before the Job is observed)."""
        meta = self.meta
        return f"{meta.namespace}/{meta.name}" if meta else "?"

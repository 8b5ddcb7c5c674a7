"""What several workflow kinds' payloads share: the `Payload` base and the messages more than
one kind hears.

A payload crosses the Temporal boundary (a forwarder signal, an update input, a query result).
Caldera owns it, so unknown fields are refused (`extra="forbid"`); every field added later gets a
default so running histories still decode. `JobDeleted` carries the uid of whatever went (a
Volcano Job, a batch/v1 Job, a CronJob, a JobFlow); `CommandIssued` goes to a JobWorkflow or a
QueueWorkflow. Pure: pydantic only.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Payload(BaseModel):
    """The base of every payload: camelCase on the wire, frozen, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class JobDeleted(Payload):
    """The object went: the uid of the Job, batch/v1 Job, CronJob or JobFlow deleted."""

    uid: str


class CommandIssued(Payload):
    """A Command CR aimed at this Job (or Queue), already consumed (deleted) by the forwarder."""

    action: str
    command: str = ""  # the Command's name, for the story
    reason: str = ""
    message: str = ""


# Workflow type and message names: histories and the forwarder use these strings.
SIGNAL_COMMAND_ISSUED = "command_issued"

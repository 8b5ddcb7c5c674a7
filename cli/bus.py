"""The Command CRs `--via-command` creates, shaped the way `vcctl` shapes them.

vcctl's `job suspend/resume` and `queue operate` write a bus.volcano.sh/v1alpha1 Command with
`generateName: <target>-<lowercased action>-`, a controller ownerReference to the target and
the same reference as `target`. The forwarder consumes it (deletes it, then delivers it to the
target's workflow), so the command is fire-and-forget: the CLI does not wait for its effect.
Pure: builds the object from the target as read from the apiserver.
"""

from __future__ import annotations

from typing import Any

from models import bus
from models.meta import ObjectMeta, OwnerReference

Obj = dict[str, Any]


def command(
    target: Obj, action: bus.Action, namespace: str, reason: str = "", message: str = ""
) -> Obj:
    """A Command aimed at `target` (a Job or a Queue as read), created in `namespace`."""
    meta = target.get("metadata") or {}
    ref = OwnerReference(
        api_version=str(target.get("apiVersion", "")),
        kind=str(target.get("kind", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        controller=True,
    )
    return bus.Command(
        metadata=ObjectMeta(
            generate_name=f"{ref.name}-{action.value.lower()}-",
            namespace=namespace,
            owner_references=[ref],
        ),
        action=action.value,
        target=ref,
        reason=reason or None,
        message=message or None,
    ).dump()

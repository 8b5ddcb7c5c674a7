"""Signals from one workflow to another (a CronJob and its scheduled runs).

A signal to a workflow that has closed fails on the server; the sender's story goes on (the
run ended already, or the CronJob is gone), so the failure is logged and reported, never
raised: an exception escaping a shell would fail its workflow task over and over.
"""

from __future__ import annotations

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import FailureError


async def tell(workflow_id: str, signal: str, payload: BaseModel) -> bool:
    """Signal `workflow_id`; False: it has no open run."""
    try:
        await workflow.get_external_workflow_handle(workflow_id).signal(signal, payload)
    except FailureError as e:
        workflow.logger.info("signal not delivered to=%s signal=%s: %s", workflow_id, signal, e)
        return False
    return True

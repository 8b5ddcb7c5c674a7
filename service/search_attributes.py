"""Caldera's custom search attributes: the one list the dev server registers and workflows set.

Users filter on them in the UI and with `temporal workflow list --query`, e.g.
`CalderaJobPhase='Running' AND CalderaQueue='default'`.
"""

from __future__ import annotations

from typing import Final

from temporalio.common import SearchAttributeKey

JOB_PHASE: Final = SearchAttributeKey.for_keyword("CalderaJobPhase")
JOB_NAME: Final = SearchAttributeKey.for_keyword("CalderaJobName")
NAMESPACE: Final = SearchAttributeKey.for_keyword("CalderaNamespace")
QUEUE: Final = SearchAttributeKey.for_keyword("CalderaQueue")
QUEUE_STATE: Final = SearchAttributeKey.for_keyword("CalderaQueueState")
QUEUE_PARENT: Final = SearchAttributeKey.for_keyword("CalderaQueueParent")

ALL: Final = (JOB_PHASE, JOB_NAME, NAMESPACE, QUEUE, QUEUE_STATE, QUEUE_PARENT)

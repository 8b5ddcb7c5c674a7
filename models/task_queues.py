"""Task-queue names: the one place they are spelled."""

from __future__ import annotations

from typing import Final

CONTROLLERS: Final = "caldera-controllers"  # JobWorkflow, BatchJobWorkflow, their activities
SCHEDULER: Final = "caldera-scheduler"  # scheduling sessions, next to the informer cache
# QueueWorkflow and NamespaceQueueWorkflow: their tasks never wait behind a backlog of the jobs'
# (after a restart, hundreds of JobWorkflows have a task waiting; a queue's close or open should
# not wait for them all).
QUEUES: Final = "caldera-queues"
# The dispatcher's calls to worker clusters (`activities.dispatch.copies`): long polls that last
# minutes and calls to clusters that may hang until they time out hold none of the slots the
# controllers' activities run in.
DISPATCH: Final = "caldera-dispatch"

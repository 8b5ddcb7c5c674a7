"""Which workflow drives a Volcano Job, for the `caldera job` commands: its JobWorkflow
(`vcjob/<ns>/<name>`), or its DispatchWorkflow (`dispatch/<ns>/<name>`) when the manager
dispatches it to a worker cluster. Both take the same command updates (`workflows.commands`);
each answers its own status query (`status`, `dispatch`).

The choice is the forwarder's own rule (`forwarder.routing.dispatches.dispatched`) applied to
the Job as the apiserver has it, so the CLI addresses the workflow the forwarder started: a Job
carrying `caldera.dev/dispatched-to` is dispatched, also while it waits for a cluster (the
annotation is written empty then); before the workflow's first write, a Job with no phase whose
queue names `extendClusters` is; a copy on a worker cluster (`caldera.dev/dispatch-origin`) is
run there by its JobWorkflow. Not "whichever workflow exists": that costs a Temporal call per
command, and a Job made again under the name of one that went the other way would find the old
workflow.
"""

from __future__ import annotations

from dataclasses import dataclass

from cli.apiserver import JOBS, QUEUES, Obj, Resources
from cli.clients import Connections
from forwarder.routing import dispatches, queue_translate
from models import keys
from models.dispatch import DispatchSettings, dispatch_workflow_id


@dataclass(frozen=True)
class JobRoute:
    workflow_id: str
    dispatched: bool  # True: a DispatchWorkflow; False: a JobWorkflow


def route(job: Obj, settings: dispatches.Settings) -> JobRoute:
    """The workflow of `job`; `settings` gives a queue's dispatch (asked only for a Job that
    neither says it was dispatched nor has a phase)."""
    meta = job.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    if dispatches.dispatched(job, settings):
        return JobRoute(dispatch_workflow_id(namespace, name), dispatched=True)
    return JobRoute(keys.job_workflow_id(namespace, name), dispatched=False)


def of(conn: Connections, job: Obj) -> JobRoute:
    """`route`, with the queue read from the apiserver when the rule needs it (a queue that is
    not there dispatches nothing, as for the forwarder)."""
    resources = Resources(conn)

    def settings(queue: str) -> DispatchSettings | None:
        found = resources.find(QUEUES, queue)
        return None if found is None else queue_translate.dispatch_settings(found)

    return route(job, settings)


def named(conn: Connections, namespace: str, name: str) -> JobRoute:
    """The route of the Job `namespace/name` as the apiserver has it now."""
    return of(conn, Resources(conn).get(JOBS, name, namespace))

"""The dispatcher's probe of a worker cluster for one job: the cluster's reading
(`clusters.read`: reachable, nodes, free, its pods' use by queue), shared by every probe of
that cluster in this process for `MAX_AGE` seconds, and the job's queue there.

Sharing (`shared_reads`): each DispatchWorkflow probes its queue's clusters before it places a
copy; a burst of N jobs costs one list of nodes and pods per cluster per `MAX_AGE`, not N.
The figures are as old as `MAX_AGE` at most, the grain of a choice that the worker cluster's
own scheduler refines anyway.

The queue (`QueueThere`): the queue a copy lands in there is the job's own if the cluster has
a queue of that name, else `default` (`activities.dispatch.copies.create_copy`); its state,
capability and use decide whether, and how much, the copy could run there
(`controllers.dispatch.choose`). Reading it needs what creating a copy needs already: get
Queues. A queue that cannot be read is said in `QueueThere.error`, never raised.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Final

import urllib3
from kubernetes import client

from activities.dispatch import clusters
from activities.dispatch.shared_reads import SharedReads
from controllers.dispatch import queue_usage
from models import scheduling
from models.dispatch import ClusterStatus

MAX_AGE: Final = 2.0  # seconds a cluster's reading answers later probes
NOT_FOUND: Final = 404


@dataclass(frozen=True)
class QueueRead:
    """A queue object as one cluster answered (None: it has none of that name)."""

    found: dict[str, Any] | None = None  # None: no queue of that name there (or unread)
    error: str = ""  # why it could not be read ("": it was)


_readings: SharedReads[str, clusters.Reading] = SharedReads(MAX_AGE)
_queues: SharedReads[tuple[str, str], QueueRead] = SharedReads(MAX_AGE)


def read_queue(api: client.ApiClient, server: str, name: str) -> QueueRead:
    """GET the Queue `name` on a cluster; every failure is a sentence in `error`."""
    what = f"get queue {name}"
    try:
        response: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            scheduling.GROUP,
            scheduling.VERSION,
            "queues",
            name,
            _preload_content=False,
            _request_timeout=(clusters.PROBE_TIMEOUT, clusters.READ_TIMEOUT),
        )
        return QueueRead(found=json.loads(response.data))
    except client.ApiException as e:
        if e.status == NOT_FOUND:
            return QueueRead()
        return QueueRead(error=clusters.refused(server, e, what))
    except (urllib3.exceptions.HTTPError, OSError) as e:
        return QueueRead(error=clusters.unreachable(server, e))
    except ValueError as e:
        return QueueRead(error=f"{server} answered no queue to {what}: {e}")


def queue_landing(cluster: str, reading: clusters.Reading, queue: str) -> QueueRead:
    """The queue a copy of a job of `queue` lands in on the cluster: its own, else default."""
    api = reading.api
    if api is None:
        return QueueRead(error="not reachable")
    for name in dict.fromkeys((queue, scheduling.DEFAULT_QUEUE)):
        got = _queues.get((cluster, name), functools.partial(read_queue, api, reading.server, name))
        if got.found is not None or got.error:
            return got
    return QueueRead()


def probe(cluster: str, queue: str = "") -> ClusterStatus:
    """The cluster's status, shared for MAX_AGE, with the figures of `queue` there ("": none
    asked)."""
    reading = _readings.get(cluster, lambda: clusters.read(cluster))
    status = reading.status
    if not queue or not status.reachable:
        return status
    landing = queue_landing(cluster, reading, queue)
    there = queue_usage.queue_there(queue, landing.found, reading.usage)
    if landing.error:
        there = there.model_copy(update={"error": landing.error})
    return status.model_copy(update={"queue": there})

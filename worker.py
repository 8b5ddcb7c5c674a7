"""The Caldera worker: hosts every workflow and activity (`workflows.ALL`, `activities.ALL`).

Configuration by environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE
(default `default`), CALDERA_TASK_QUEUE (default `caldera-controllers`). Run any number of
replicas; Temporal spreads the work.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

import activities
import workflows
from models import task_queues

log = logging.getLogger("caldera.worker")
MAX_ACTIVITIES = 32


async def run() -> int:
    address = os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233")
    namespace = os.environ.get("TEMPORAL_NAMESPACE", "default")
    queue = os.environ.get("CALDERA_TASK_QUEUE", task_queues.CONTROLLERS)
    client = await Client.connect(
        address, namespace=namespace, data_converter=pydantic_data_converter
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # The Kubernetes client blocks, so activities are sync functions on a thread pool.
    with ThreadPoolExecutor(max_workers=MAX_ACTIVITIES) as pool:
        async with Worker(
            client,
            task_queue=queue,
            workflows=list(workflows.ALL),
            activities=list(activities.ALL),
            activity_executor=pool,
            max_concurrent_activities=MAX_ACTIVITIES,
        ):
            log.info(
                "worker started address=%s namespace=%s task_queue=%s", address, namespace, queue
            )
            await stop.wait()
    log.info("worker stopped")
    return 0


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()

"""The extender plugin's HTTP client: `scheduling.api.extender.ExtenderPort` over urllib3.

Volcano's extender plugin POSTs each request as JSON to `<extender.urlPrefix>/<verb>` with the
configured `extender.httpTimeout` (1s by default) and reads at most 10 MB of answer; anything
but a 200 with a decodable body is a failure, which the session judges (`extender.ignorable`,
in `scheduling.plugins.extender`). This module does that and nothing else: it contacts only
the URL the configuration names, never retries (a session asks again next time, as Volcano
does), and turns every transport error into a `Failure` value so no exception crosses into
the pure session. Predicate requests, one per candidate node as Volcano's protocol has them,
go side by side on a shared pool, as Volcano checks nodes in parallel.

A client is made per session from the configuration in force (`port`); the connection pool
is shared by all sessions of the process.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

import urllib3
from pydantic import BaseModel, ValidationError
from temporalio import activity

from scheduling.api import extender as wire
from scheduling.plugins.extender import ExtenderConfig

MAX_BODY: Final = 10 << 20  # Volcano's maxBodySize
_WORKERS: Final = 16  # Volcano's predicate parallelism (workqueue.ParallelizeUntil(16))
_POOL: Final = urllib3.PoolManager(maxsize=_WORKERS, retries=False)
_CALLS: Final = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="extender")

log = logging.getLogger(__name__)
A = TypeVar("A", bound=BaseModel)


class HttpExtender:
    """One session's client; every method returns the answer or a Failure, never raises."""

    def __init__(self, config: ExtenderConfig) -> None:
        self._config = config
        self._timeout = urllib3.Timeout(total=config.http_timeout.total_seconds())

    def _post(self, verb: str, body: bytes) -> bytes | wire.Failure:
        url = f"{self._config.url_prefix.rstrip('/')}/{verb}"
        try:
            response = _POOL.request(
                "POST",
                url,
                body=body,
                headers={"Content-Type": "application/json"},
                timeout=self._timeout,
                retries=False,
                preload_content=False,
            )
            try:
                data = response.read(MAX_BODY + 1)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as e:
            return self._failed(verb, f"failed {verb} with extender at URL {url}: {e}")
        if response.status != 200:
            return self._failed(
                verb, f"failed {verb} with extender at URL {url}, code {response.status}"
            )
        if len(data) > MAX_BODY:
            return self._failed(verb, f"{verb} answer from {url} is larger than {MAX_BODY} bytes")
        return data

    def _failed(self, verb: str, message: str) -> wire.Failure:
        log.warning("extender call failed verb=%s error=%s", verb, message)
        return wire.Failure(message=message)

    def _call(self, verb: str, request: BaseModel | None, answer: type[A]) -> A | wire.Failure:
        body = request.model_dump_json(by_alias=True).encode() if request is not None else b"{}"
        data = self._post(verb, body)
        _beat()
        if isinstance(data, wire.Failure):
            return data
        try:
            return answer.model_validate_json(data or b"{}")
        except ValidationError as e:
            return self._failed(verb, f"{verb} answer does not decode: {e.errors()[0]['msg']}")

    def _notify(self, verb: str, request: BaseModel | None) -> wire.Failure | None:
        body = request.model_dump_json(by_alias=True).encode() if request is not None else b"{}"
        data = self._post(verb, body)
        _beat()
        return data if isinstance(data, wire.Failure) else None

    def session_open(self, request: wire.SessionOpenRequest) -> wire.Failure | None:
        return self._notify(self._config.session_open, request)

    def session_close(self) -> wire.Failure | None:
        return self._notify(self._config.session_close, None)

    def predicate(
        self, requests: Sequence[wire.PredicateRequest]
    ) -> list[wire.PredicateResponse | wire.Failure]:
        verb = self._config.predicate
        if len(requests) == 1:
            return [self._call(verb, requests[0], wire.PredicateResponse)]
        answers = list(_CALLS.map(lambda r: self._call(verb, r, wire.PredicateResponse), requests))
        _beat()  # the pool's threads carry no activity context: their caller beats for them
        return answers

    def prioritize(self, request: wire.PrioritizeRequest) -> wire.PrioritizeResponse | wire.Failure:
        return self._call(self._config.prioritize, request, wire.PrioritizeResponse)

    def preemptable(self, request: wire.EvictableRequest) -> wire.EvictableResponse | wire.Failure:
        return self._call(self._config.preemptable, request, wire.EvictableResponse)

    def reclaimable(self, request: wire.EvictableRequest) -> wire.EvictableResponse | wire.Failure:
        return self._call(self._config.reclaimable, request, wire.EvictableResponse)

    def job_enqueueable(
        self, request: wire.JobEnqueueableRequest
    ) -> wire.JobEnqueueableResponse | wire.Failure:
        return self._call(self._config.job_enqueueable, request, wire.JobEnqueueableResponse)


def _beat() -> None:
    """The session is alive while it waits on the extender (its heartbeat timeout, 15 s, is
    shorter than many slow calls); the SDK throttles the beats. Outside an activity (a pool
    thread, a test) there is nobody to tell."""
    if activity.in_activity():
        activity.heartbeat()


def port(config: ExtenderConfig | None) -> HttpExtender | None:
    """The session's client; None: the extender plugin is off."""
    return HttpExtender(config) if config is not None else None

"""The extender's HTTP client against a real HTTP server on 127.0.0.1 (an ephemeral port).

Checks the wire as Volcano's plugin speaks it: POST `<urlPrefix>/<verb>` with a JSON body in
Go's field names, answers decoded, and every failure (status, body, timeout, refused
connection) returned as a `Failure`, never raised.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from activities.scheduler import extender as http_extender
from scheduling.api import extender as wire
from scheduling.plugins import extender
from tests.unit.scheduling.builders import gang, make_nodes, snapshot


class _Server:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, Any]]] = []
        self.release = threading.Event()  # the `slow` verb answers once it is set
        seen, release = self.seen, self.release

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                seen.append((self.path, self.headers.get("Content-Type", ""), body))
                verb = self.path.rsplit("/", 1)[1]
                if verb == "slow":
                    release.wait(10)
                if verb == "broken":
                    self._answer(500, b"{}")
                elif verb == "garbled":
                    self._answer(200, b"{not json")
                elif verb == "predicate":
                    refused = body["node"]["Name"] == "n1"
                    answer = {"status": "no driver", "code": 2} if refused else {}
                    self._answer(200, json.dumps(answer).encode())
                elif verb == "prioritize":
                    self._answer(200, b'{"nodeScore": {"n0": 7.5}, "errorMessage": ""}')
                else:
                    self._answer(200, b'{"status": 1}')

            def _answer(self, code: int, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/ext/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    running.thread.start()
    try:
        yield running
    finally:
        running.release.set()
        running.httpd.shutdown()
        running.httpd.server_close()
        running.thread.join(5)


def _client(url: str, timeout: str = "2s", **verbs: str) -> http_extender.HttpExtender:
    arguments: dict[str, object] = {"extender.urlPrefix": url, "extender.httpTimeout": timeout}
    arguments.update({f"extender.{k}Verb": v for k, v in verbs.items()})
    client = http_extender.port(extender.parse(arguments))
    assert client is not None
    return client


def _requests() -> tuple[wire.PredicateRequest, ...]:
    shot = snapshot(make_nodes(3, cpu="4"), [gang("g", 1)])
    task = wire.task_body(shot.tasks[0])
    return tuple(wire.PredicateRequest(task=task, node=wire.node_body(n)) for n in shot.nodes)


def test_predicate_posts_one_request_per_node_in_volcanos_json(server: _Server) -> None:
    answers = _client(server.url, predicate="predicate").predicate(_requests())
    assert answers == [
        wire.PredicateResponse(),
        wire.PredicateResponse(status="no driver", code=2),
        wire.PredicateResponse(),
    ]
    paths = {path for path, _, _ in server.seen}
    assert paths == {"/ext/predicate"}
    _, kind, body = server.seen[0]
    assert kind == "application/json"
    assert body["task"]["UID"] == "default/g-worker-0" and body["task"]["Status"] == 1
    assert body["task"]["Resreq"]["MilliCPU"] == 1000
    assert body["node"]["Allocatable"]["MilliCPU"] == 4000
    assert sorted(b["node"]["Name"] for _, _, b in server.seen) == ["n0", "n1", "n2"]


def test_prioritize_answer_is_decoded(server: _Server) -> None:
    requests = _requests()
    request = wire.PrioritizeRequest(task=requests[0].task, nodes=[r.node for r in requests])
    answer = _client(server.url, prioritize="prioritize").prioritize(request)
    assert answer == wire.PrioritizeResponse(nodeScore={"n0": 7.5})
    assert len(server.seen[0][2]["nodes"]) == 3


@pytest.mark.parametrize(
    ("verb", "why"),
    [
        pytest.param("broken", "code 500", id="status-not-200"),
        pytest.param("garbled", "does not decode", id="bad-json"),
    ],
)
def test_a_bad_answer_is_a_failure(server: _Server, verb: str, why: str) -> None:
    request = wire.JobEnqueueableRequest(
        job=wire.job_body(snapshot(make_nodes(1, cpu="4"), [gang("g", 1)]).jobs[0], [])
    )
    answer = _client(server.url, jobEnqueueable=verb).job_enqueueable(request)
    assert isinstance(answer, wire.Failure) and why in answer.message


def test_a_slow_extender_times_out(server: _Server) -> None:
    client = _client(server.url, timeout="200ms", onSessionClose="slow")
    assert client._config.http_timeout == timedelta(milliseconds=200)
    failed = client.session_close()
    server.release.set()
    assert isinstance(failed, wire.Failure) and "slow" in failed.message


def test_no_listener_is_a_failure(server: _Server) -> None:
    url = server.url
    server.httpd.shutdown()
    server.httpd.server_close()
    failed = _client(url, onSessionOpen="onSessionOpen").session_open(wire.SessionOpenRequest())
    assert isinstance(failed, wire.Failure)


def test_session_close_posts_an_empty_object(server: _Server) -> None:
    assert _client(server.url, onSessionClose="onSessionClose").session_close() is None
    assert server.seen == [("/ext/onSessionClose", "application/json", {})]

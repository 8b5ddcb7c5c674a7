"""The extender plugin on the real stack: an HTTP extender the scheduler asks every session.

A tiny extender runs in this test on 127.0.0.1 (an ephemeral port, `http.server` in a thread):
its predicate refuses the second of the session's 3 kwok nodes (8 CPUs each) with
Unschedulable, and its prioritize gives the third 1000 points, far above nodeorder's. The
volcano-scheduler.conf lists the extender with its `urlPrefix` and both verbs. Six one-pod
jobs of 2 CPUs then land on the preferred node until it is full (4) and the rest on the first
node; none on the refused one, which without the extender would take its share of a spread.
Volcano's extender has no e2e of its own; its unit cases are in
`tests/unit/scheduling/test_extender.py` and `tests/unit/activities/test_extender.py`.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final

import pytest
from kubernetes import client

from scheduling.framework.conf import CALDERA_DEFAULT
from tests.e2e import sharing
from tests.e2e.conftest import eventually

pytestmark = pytest.mark.usefixtures("controllers")
SCHEDULER_OVERRIDE = None  # Caldera schedules: the PodGroup gate and gang scheduling are on
JOBS: Final = 6
PER_NODE: Final = 4  # 8 CPUs / 2


@contextlib.contextmanager
def _extender(refused: str, preferred: str) -> Iterator[tuple[str, Counter[str]]]:
    """The extender's URL prefix, and the verbs it was asked, while it serves."""
    asked: Counter[str] = Counter()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            verb = self.path.rsplit("/", 1)[1]
            asked[verb] += 1
            if verb == "predicate" and body["node"]["Name"] == refused:
                answer: object = {"status": "refused by the test extender", "code": 2}
            elif verb == "prioritize":
                answer = {"nodeScore": {preferred: 1000}, "errorMessage": ""}
            else:
                answer = {}
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _conf(url: str) -> str:
    return CALDERA_DEFAULT + (
        "  - name: extender\n    arguments:\n"
        f"      extender.urlPrefix: {url}\n"
        "      extender.httpTimeout: 2s\n"
        "      extender.predicateVerb: predicate\n"
        "      extender.prioritizeVerb: prioritize\n"
    )


def _placed(api: client.ApiClient, ns: str) -> Counter[str]:
    pods = client.CoreV1Api(api).list_namespaced_pod(ns).items
    return Counter(p.spec.node_name for p in pods if p.spec.node_name)


def test_pods_avoid_the_refused_node_and_fill_the_preferred_one_first(
    api: client.ApiClient, namespace: str, scheduler_conf: Path
) -> None:
    nodes = sorted(n.metadata.name for n in client.CoreV1Api(api).list_node().items)
    assert len(nodes) == 3, nodes
    first, refused, preferred = nodes
    eventually(lambda: not sharing.reserving(api, namespace), 120, "the cluster to this test alone")
    with _extender(refused, preferred) as (url, asked):
        try:
            scheduler_conf.write_text(_conf(url))
            for i in range(JOBS):
                sharing.submit(api, namespace, f"x{i}", None)
            expected = Counter({preferred: PER_NODE, first: JOBS - PER_NODE})
            try:
                eventually(lambda: _placed(api, namespace) == expected, 120, f"{expected}")
            except AssertionError as e:
                raise AssertionError(
                    f"{e}; placed {_placed(api, namespace)}; asked {asked}; "
                    f"podgroups {sharing.groups(api, namespace)}"
                ) from None
            assert asked["predicate"] >= JOBS and asked["prioritize"] >= 1, asked
        finally:
            scheduler_conf.write_text(CALDERA_DEFAULT)  # before the extender stops answering

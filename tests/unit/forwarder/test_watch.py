"""The list+watch loop against a scripted endpoint: paging, resume, bookmarks, relist on 410."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client

from forwarder import watch
from forwarder.routing import envelopes


class FakeResponse:
    def __init__(self, page: dict[str, Any] | None = None, lines: list[Any] | None = None) -> None:
        self.data = json.dumps(page or {}).encode()
        self._lines = lines or []

    def stream(self, amt: int | None = None, decode_content: bool = False) -> Iterator[bytes]:
        for line in self._lines:
            yield json.dumps(line).encode() + b"\n"

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


def obj(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": name, "resourceVersion": rv}}


def page(items: list[dict[str, Any]], rv: str, token: str | None = None) -> FakeResponse:
    meta: dict[str, Any] = {"resourceVersion": rv, **({"continue": token} if token else {})}
    return FakeResponse(page={"items": items, "metadata": meta})


def stream(*lines: Any) -> FakeResponse:
    return FakeResponse(lines=list(lines))


def gone() -> None:
    raise client.ApiException(status=410, reason="Expired")


class Script:
    """Answers each call with the next step; records the call; stops the watcher at the end."""

    def __init__(self, steps: list[FakeResponse | Callable[[], None]]) -> None:
        self.steps = steps
        self.calls: list[dict[str, Any]] = []
        self.watcher: watch.Watcher | None = None

    def __call__(self, **kwargs: Any) -> FakeResponse:
        self.calls.append(kwargs)
        if not self.steps:
            assert self.watcher is not None
            self.watcher.stop()
            raise OSError("script over")
        step = self.steps.pop(0)
        if isinstance(step, FakeResponse):
            return step
        step()
        raise AssertionError("step should have raised")


def test_watcher_pages_resumes_and_relists_after_gone() -> None:
    a, b, c = obj("a", "3"), obj("b", "4"), obj("c", "7")
    c2 = obj("c", "21")
    script = Script(
        [
            page([a], "6", token="t1"),
            page([b], "6"),
            stream(
                {"type": "ADDED", "object": c},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}},
                {"type": "ERROR", "object": {"code": 410, "message": "too old"}},
            ),
            page([c], "20"),
            stream({"type": "MODIFIED", "object": c2}),  # the server ends the watch normally
            gone,  # an HTTP 410 on the watch request itself
            page([], "30"),
        ]
    )
    seen: list[envelopes.Inbound] = []
    w = watch.Watcher(envelopes.Kind.JOB, script, seen.append, watch_seconds=(1, 1))
    script.watcher = w
    w._run()

    assert seen == [
        envelopes.Relisted(envelopes.Kind.JOB, [a, b]),
        envelopes.Observed(envelopes.Kind.JOB, "ADDED", c),
        envelopes.Relisted(envelopes.Kind.JOB, [c]),
        envelopes.Observed(envelopes.Kind.JOB, "MODIFIED", c2),
        envelopes.Relisted(envelopes.Kind.JOB, []),
    ]
    assert [k.get("_continue") for k in script.calls if not k.get("watch")] == [
        None,
        "t1",
        None,
        None,
    ]
    assert [k["resource_version"] for k in script.calls if k.get("watch")] == [
        "6",
        "20",
        "21",
        "30",
    ]

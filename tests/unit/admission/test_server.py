"""The AdmissionReview envelope around a verdict: uid echoed, 403 on denial, 500 when the
queues cannot be read. No socket: `answer` is what the HTTP handler sends back."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from admission import lookup, server
from admission.rules import QueueInfo
from tests.unit.admission.test_rules import Queues, job


class Unreachable:
    def get_queue(self, name: str) -> QueueInfo | None:
        raise lookup.LookupFailed(f"could not read queue {name!r}: 503 Service Unavailable")

    def list_queues(self, fresh: bool = False) -> list[QueueInfo]:
        raise lookup.LookupFailed("could not list queues: 503 Service Unavailable")


def _review(request: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@pytest.mark.parametrize(
    ("queue", "response"),
    [
        pytest.param("default", {"uid": "7f1c", "allowed": True}, id="allowed"),
        pytest.param(
            "nope",
            {
                "uid": "7f1c",
                "allowed": False,
                "status": {
                    "code": 403,
                    "message": 'job team/train: spec.queue: queue "nope" does not exist',
                },
            },
            id="denied",
        ),
    ],
)
def test_answer_echoes_uid_with_verdict(queue: str, response: dict[str, Any]) -> None:
    assert server.answer(_review(job(queue)), Queues(), 5) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    }


def test_answer_refuses_with_500_when_queues_cannot_be_read() -> None:
    got = server.answer(_review(job("default")), Unreachable(), 5)
    assert got["response"] == {
        "uid": "7f1c",
        "allowed": False,
        "status": {
            "code": 500,
            "message": "caldera admission: could not read queue 'default': 503 Service Unavailable",
        },
    }


def test_options_from_flags() -> None:
    p = argparse.ArgumentParser()
    server.add_arguments(p)
    args = p.parse_args(["--cert", "c.pem", "--key", "k.pem", "--port", "0", "--kubeconfig", "kc"])
    assert server.options_from(args) == server.Options(
        bind="127.0.0.1", port=0, cert="c.pem", key="k.pem", kubeconfig="kc", max_queue_depth=5
    )


class Broken:
    def get_queue(self, name: str) -> QueueInfo | None:
        raise KeyError(name)

    def list_queues(self, fresh: bool = False) -> list[QueueInfo]:
        return []


def test_answer_refuses_with_500_when_the_review_itself_fails() -> None:
    got = server.answer(_review(job("default")), Broken(), 5)
    assert got["response"] == {
        "uid": "7f1c",
        "allowed": False,
        "status": {
            "code": 500,
            "message": "caldera admission: internal error: KeyError('default')",
        },
    }


def test_answer_to_a_review_without_request_allows() -> None:
    got = server.answer({"kind": "AdmissionReview"}, Queues(), 5)
    assert got["response"] == {"uid": "", "allowed": True}

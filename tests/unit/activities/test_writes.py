"""A decision's writes done together (`apply_writes`): each step ends as its own activity would
have, against a recording runner and against a fake apiserver over HTTP (the raw responses:
nothing deserialised, every connection back in the pool, errors mapped as before)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory
from temporalio.testing import ActivityEnvironment

from activities import kube
from activities.controllers import writes
from activities.messages import (
    CreatePodsInput,
    CreatePodsResult,
    CreatePodsStep,
    DeletePodGroupStep,
    DeletePodsResult,
    EnsurePodGroupInput,
    EnsurePodGroupStep,
    PodGroupInput,
    StepOutcome,
    WritesFailed,
    WritesInput,
    WriteStatusInput,
    WriteStatusStep,
    WriteStep,
)
from models.vcjob import Job, JobStatus
from tests.builders import make_job

pytestmark = pytest.mark.unit

_MANIFEST = make_job("one", namespace="ns").task("worker").manifest()
JOB = Job.model_validate({**_MANIFEST, "metadata": {**_MANIFEST["metadata"], "uid": "u1"}})
STATUS = WriteStatusStep(input=WriteStatusInput(namespace="ns", name="one", status=JobStatus()))
GROUP = EnsurePodGroupStep(input=EnsurePodGroupInput(job=JOB))
PODS = CreatePodsStep(
    input=CreatePodsInput(job=JOB, version=0, retry_count=0, pods=[("worker", 0)])
)
CREATED = CreatePodsResult(created=["one-worker-0"], existing=[])


def _runner(errors: dict[str, Callable[[], Exception]]) -> tuple[writes.Runner, list[str]]:
    """Records each step's activity; a step named in `errors` raises that error."""
    ran: list[str] = []

    def run(step: WriteStep) -> CreatePodsResult | DeletePodsResult | None:
        ran.append(step.activity)
        if step.activity in errors:
            raise errors[step.activity]()
        return CREATED if isinstance(step, CreatePodsStep) else None

    return run, ran


def _carry_out(
    errors: dict[str, Callable[[], Exception]], *steps: WriteStep
) -> tuple[list[StepOutcome], list[str]]:
    run, ran = _runner(errors)
    return writes.carry_out(WritesInput(steps=list(steps)), run).outcomes, ran


def test_every_step_done_in_order_with_the_pods_result() -> None:
    outcomes, ran = _carry_out({}, GROUP, PODS, STATUS)
    assert ran == ["ensure_pod_group", "create_pods", "write_job_status"]
    assert outcomes == [StepOutcome(), StepOutcome(created=CREATED), StepOutcome()]


@pytest.mark.parametrize("kind", ["Invalid", "Forbidden", "BadRequest"])
def test_a_permanent_error_is_the_steps_outcome_and_the_rest_still_run(kind: str) -> None:
    refused = ApplicationError("create podgroup ns/one-u1: 422", type=kind, non_retryable=True)
    outcomes, ran = _carry_out({"ensure_pod_group": lambda: refused}, GROUP, PODS, STATUS)
    assert ran == ["ensure_pod_group", "create_pods", "write_job_status"]
    # The text the workflow reads off a failed activity of its own: "<type>: <message>".
    assert outcomes[0] == StepOutcome(error=f"{kind}: create podgroup ns/one-u1: 422")
    assert outcomes[1:] == [StepOutcome(created=CREATED), StepOutcome()]


def test_the_namespace_going_ends_the_batch_at_that_step() -> None:
    def gone() -> Exception:
        return ApplicationError("ns is being terminated", type="NamespaceGone", non_retryable=True)

    outcomes, ran = _carry_out({"create_pods": gone}, GROUP, PODS, STATUS)
    assert ran == ["ensure_pod_group", "create_pods"]
    assert outcomes == [
        StepOutcome(),
        StepOutcome(error="NamespaceGone: ns is being terminated", namespace_gone=True),
    ]


def test_a_retryable_error_fails_the_attempt_naming_the_step() -> None:
    """Retried as the step's own activity would be (type, category, the delay it asks for);
    the details tell the shell which step used the attempts up, once they run out."""
    webhook = ApplicationError(
        "create pod ns/one-worker-0: admission webhook refused",
        type="AdmissionDenied",
        next_retry_delay=timedelta(milliseconds=10),
        category=ApplicationErrorCategory.BENIGN,
    )
    with pytest.raises(ApplicationError) as failed:
        _carry_out({"create_pods": lambda: webhook}, GROUP, PODS, STATUS)
    e = failed.value
    assert (e.message, e.type, e.non_retryable) == (webhook.message, "AdmissionDenied", False)
    assert (e.next_retry_delay, e.category) == (webhook.next_retry_delay, webhook.category)
    assert WritesFailed.model_validate(e.details[0]) == WritesFailed(
        step=1, outcomes=[StepOutcome()]
    )
    assert e.__cause__ is webhook


def test_any_other_exception_is_retried_under_its_class_name() -> None:
    with pytest.raises(ApplicationError) as failed:
        _carry_out({"write_job_status": lambda: ConnectionResetError("reset by peer")}, STATUS)
    assert (failed.value.message, failed.value.type) == ("reset by peer", "ConnectionResetError")
    assert WritesFailed.model_validate(failed.value.details[0]).step == 0


# -- against a fake apiserver over HTTP --------------------------------------------------------


class _Apiserver(BaseHTTPRequestHandler):
    """Answers every request from `answers` by (method, path prefix), else 201 with a body
    the activities never read; records requests and the client ports they came from."""

    protocol_version = "HTTP/1.1"  # keep-alive: a connection back in the pool is used again
    answers: ClassVar[dict[tuple[str, str], tuple[int, dict[str, Any]]]] = {}
    seen: ClassVar[list[tuple[str, str, int]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.seen.append((self.command, self.path, self.client_address[1]))
        status, body = next(
            (
                a
                for (m, p), a in self.answers.items()
                if m == self.command and self.path.startswith(p)
            ),
            (201, {"kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": []}}),
        )
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def apiserver(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Apiserver]]:
    handler = type("Handler", (_Apiserver,), {"answers": {}, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    api = client.ApiClient(configuration)
    monkeypatch.setattr(kube, "api", lambda: api)

    def unread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a write's answer was deserialised")

    monkeypatch.setattr(api, "deserialize", unread)
    try:
        yield handler
    finally:
        server.shutdown()
        api.close()


def _status(code: int, reason: str, **details: Any) -> dict[str, Any]:
    return {"kind": "Status", "code": code, "reason": reason, "message": reason, "details": details}


def test_the_writes_go_over_one_connection_and_their_answers_are_not_deserialised(
    apiserver: type[_Apiserver],
) -> None:
    steps = [GROUP, PODS, STATUS, DeletePodGroupStep(input=PodGroupInput(namespace="ns", name="g"))]
    result = ActivityEnvironment().run(writes.apply_writes, WritesInput(steps=steps))
    assert [o.error for o in result.outcomes] == ["", "", "", ""]
    assert result.outcomes[1].created == CREATED
    assert [(m, p.split("?")[0]) for m, p, _ in apiserver.seen] == [
        ("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups"),
        ("POST", "/api/v1/namespaces/ns/pods"),
        ("PATCH", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/one/status"),
        ("DELETE", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups/g"),
    ]
    # Each raw answer was drained and its connection given back: one connection for all.
    assert len({port for _, _, port in apiserver.seen}) == 1


def test_error_answers_map_as_before(apiserver: type[_Apiserver]) -> None:
    """422 is the step's permanent failure, and the batch goes on; 409 a pod that exists; a
    500 fails the attempt (retried)."""
    apiserver.answers[("POST", "/apis/scheduling")] = (422, _status(422, "Invalid"))
    apiserver.answers[("POST", "/api/v1/namespaces/ns/pods")] = (409, _status(409, "AlreadyExists"))
    result = ActivityEnvironment().run(
        writes.apply_writes, WritesInput(steps=[GROUP, PODS, STATUS])
    )
    invalid, exists, written = result.outcomes
    assert invalid.error.startswith("Invalid: create podgroup ns/one-u1: 422")
    assert exists == StepOutcome(created=CreatePodsResult(created=[], existing=["one-worker-0"]))
    assert written == StepOutcome()

    apiserver.answers[("PATCH", "/apis/batch")] = (500, _status(500, "InternalError"))
    with pytest.raises(ApplicationError) as failed:
        ActivityEnvironment().run(writes.apply_writes, WritesInput(steps=[STATUS]))
    assert failed.value.type == "KubernetesError" and "500" in failed.value.message


def test_a_namespace_gone_ends_the_writes(apiserver: type[_Apiserver]) -> None:
    """A create's 404 for the namespace itself: nothing written there would last."""
    gone = _status(404, "NotFound", kind="namespaces", name="ns")
    apiserver.answers[("POST", "/api/v1/namespaces/ns/pods")] = (404, gone)
    result = ActivityEnvironment().run(
        writes.apply_writes, WritesInput(steps=[GROUP, PODS, STATUS])
    )
    assert [o.namespace_gone for o in result.outcomes] == [False, True]
    assert result.outcomes[1].error.startswith("NamespaceGone: create pod ns/one-worker-0: 404")
    assert [m for m, _, _ in apiserver.seen] == ["POST", "POST"]

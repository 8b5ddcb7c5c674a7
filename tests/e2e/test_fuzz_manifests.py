"""1,000 generated Volcano Jobs, Queues and Commands, valid and not, through the real apiserver
with Caldera running: every invalid one is refused with a message that names the field, and
every admitted one is processed to its end with no failed workflow task and no activity left
retrying. A Job whose pod template the apiserver refuses at pod creation ends Terminated with a
Warning Event that says why, as Volcano's requeue budget ends it.

The examples are derandomized (`tests.unit.fuzz.common.fuzz_settings`): CI runs the same ones.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import uuid
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from kubernetes import client
from temporalio.client import Client

from bench.chaos import histories
from models import keys
from tests.e2e.conftest import E2EStack, eventually
from tests.e2e.manifests import REFUSED, Case, any_case
from tests.unit.fuzz.common import fuzz_settings

pytestmark = pytest.mark.usefixtures("controllers")

CASES = 1000
ENDS = ("Completed", "Failed", "Terminated", "Aborted")
JOBS = ("batch.volcano.sh", "v1alpha1", "jobs")
QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")
COMMANDS = ("bus.volcano.sh", "v1alpha1", "commands")
PERMANENT = ("Invalid", "BadRequest")  # the activity failures a refused pod may leave


class Submitted:
    """What the apiserver admitted, by kind, and how many of each case were seen."""

    def __init__(self) -> None:
        self.jobs: dict[str, Case] = {}
        self.uids: dict[str, str] = {}
        self.queues: list[str] = []
        self.commands: list[str] = []
        self.refused: Counter[str] = Counter()


def _create(custom: client.CustomObjectsApi, ns: str, case: Case, body: dict[str, Any]) -> Any:
    if case.kind == "job":
        return custom.create_namespaced_custom_object(*JOBS[:2], ns, JOBS[2], body)
    if case.kind == "command":
        return custom.create_namespaced_custom_object(*COMMANDS[:2], ns, COMMANDS[2], body)
    return custom.create_cluster_custom_object(*QUEUES[:2], QUEUES[2], body)


def _submit_all(api: client.ApiClient, ns: str) -> Submitted:
    custom = client.CustomObjectsApi(api)
    seen = Submitted()
    numbers = itertools.count()
    suffix = uuid.uuid4().hex[:6]

    @fuzz_settings(CASES)
    @given(case=any_case())
    def submit(case: Case) -> None:
        n = next(numbers)
        body = copy.deepcopy(case.body)
        name = f"fz-{suffix}-{n}" if case.kind == "queue" else f"f{n}"
        body["metadata"].setdefault("name", name)
        if case.kind == "command":
            jobs = sorted(seen.uids)
            target = jobs[n % len(jobs)] if jobs else "f-none"
            body["target"]["name"] = target
            if "uid" in body["target"]:
                body["target"]["uid"] = seen.uids.get(target, "none")
        try:
            created = _create(custom, ns, case, body)
        except client.ApiException as e:
            assert case.field, f"{case.why}: refused ({e.status}): {e.body}"
            assert e.status in (403, 422), (case.why, e.status, e.body)
            message = json.loads(e.body)["message"]
            assert f"{case.field}:" in message and case.gist in message, (case.why, message)
            seen.refused[case.why] += 1
            return
        assert case.admitted, f"{case.why}: admitted; the refusal should name {case.field}"
        name = created["metadata"]["name"]
        match case.kind:
            case "job":
                seen.jobs[name] = case
                seen.uids[name] = created["metadata"]["uid"]
            case "queue":
                seen.queues.append(name)
            case "command":
                seen.commands.append(name)

    submit()
    return seen


def _phases(api: client.ApiClient, ns: str) -> dict[str, str]:
    listed = client.CustomObjectsApi(api).list_namespaced_custom_object(*JOBS[:2], ns, JOBS[2])
    return {
        j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase", "")
        for j in listed["items"]
    }


def _warnings(api: client.ApiClient, ns: str) -> dict[str, set[str]]:
    """Each object's Warning Event reasons."""
    out: dict[str, set[str]] = {}
    for e in client.CoreV1Api(api).list_namespaced_event(ns).items:
        if e.type == "Warning":
            out.setdefault(e.involved_object.name, set()).add(e.reason)
    return out


async def _runs(address: str, ns: str, queues: list[str]) -> list[histories.Run]:
    temporal = await Client.connect(address)
    prefixes = (keys.job_workflow_id(ns, ""), *(keys.queue_workflow_id(q) for q in queues))
    return await histories.read(temporal, prefixes)


def test_generated_manifests_are_refused_naming_the_field_or_processed_to_their_end(
    api: client.ApiClient, namespace: str, e2e_stack: E2EStack
) -> None:
    seen = _submit_all(api, namespace)
    custom = client.CustomObjectsApi(api)
    try:
        left: dict[str, str] = {}

        def ended() -> dict[str, str] | None:
            phases = _phases(api, namespace)
            left.clear()
            left.update(
                (n, f"{phases.get(n) or 'no phase'} ({case.why})")
                for n, case in seen.jobs.items()
                if phases.get(n) not in ENDS
            )
            return None if left else phases

        try:
            phases = eventually(ended, 400, f"every admitted job of {len(seen.jobs)} at its end")
        except AssertionError as e:
            raise AssertionError(f"{e}; {len(left)} not: {dict(sorted(left.items())[:20])}") from e
        warnings = _warnings(api, namespace)
        for name, case in seen.jobs.items():
            failed = "ActionFailed" in warnings.get(name, set())
            if case.pods_refused:
                assert phases[name] == "Terminated" and failed, (name, case.why, phases[name])
            else:
                assert not failed, (name, case.why, warnings[name])

        def consumed() -> bool:
            listed = custom.list_namespaced_custom_object(*COMMANDS[:2], namespace, COMMANDS[2])
            left = {c["metadata"]["name"] for c in listed["items"]} & set(seen.commands)
            return not left

        eventually(consumed, 60, f"all {len(seen.commands)} admitted Commands consumed")

        def opened() -> bool:
            for name in seen.queues:
                queue = custom.get_cluster_custom_object(*QUEUES[:2], QUEUES[2], name)
                if (queue.get("status") or {}).get("state") != "Open":
                    return False
            return True

        eventually(opened, 60, f"all {len(seen.queues)} admitted Queues Open")

        runs = asyncio.run(_runs(e2e_stack.temporal_address, namespace, seen.queues))
        assert len({r.workflow_id for r in runs}) >= len(seen.jobs) + len(seen.queues)
        for run in runs:
            assert not run.task_failures, (run.workflow_id, run.task_failures)
            assert not run.retrying, (run.workflow_id, run.retrying)
            job = keys.job_key_from_workflow_id(run.workflow_id)
            case = seen.jobs.get(job.partition("/")[2]) if job else None
            for failure in run.activity_failures:
                assert case is not None and case.pods_refused, (run.workflow_id, failure)
                assert failure.startswith(PERMANENT), (run.workflow_id, failure)
        # Every kind of refusal was met, and enough was admitted to be worth processing.
        assert set(seen.refused) == set(REFUSED), set(REFUSED) - set(seen.refused)
        assert len(seen.jobs) >= 100 and seen.queues and seen.commands
    finally:
        for name in seen.queues:
            custom.delete_cluster_custom_object(*QUEUES[:2], QUEUES[2], name)

"""Hypothesis strategies for Volcano Job, Queue and Command manifests, valid and not, each
with what the apiserver must answer: admitted, or refused with a message naming the field.

Pure: no client. The test names every object (`metadata.name` is left out unless the name
itself is what is wrong), so cases stay independent of the order they are drawn in.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from typing import Any, Final, Literal

from hypothesis import strategies as st

RUN: Final = "sim.caldera.dev/run-seconds"
EXIT: Final = "sim.caldera.dev/exit-code"
EVENTS: Final = ("PodFailed", "PodEvicted", "TaskCompleted", "Unknown")
ACTIONS: Final = ("AbortJob", "RestartJob", "RestartTask", "TerminateJob", "CompleteJob")
TASKS: Final = ("a", "b")
MISSING_QUEUE: Final = "no-such-queue"
ROOT: Final = "root"

Doc = dict[str, Any]


@dataclass(frozen=True)
class Case:
    kind: Literal["job", "queue", "command"]
    body: Doc
    field: str = ""  # "": admitted; else the field the refusal names ("<field>:")
    gist: str = ""  # a piece of the refusal's message
    pods_refused: bool = False  # admitted, but the apiserver refuses the pods it asks for
    why: str = "valid"  # the mutation, for the failure message

    @property
    def admitted(self) -> bool:
        return not self.field


def _container() -> Doc:
    return {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}


@st.composite
def _template(draw: st.DrawFn) -> Doc:
    annotations = {RUN: "1"}
    code = draw(st.sampled_from((0, 0, 0, 1, 3)))
    if code:
        annotations[EXIT] = str(code)
    spec = {"restartPolicy": "Never", "containers": [_container()]}
    return {"metadata": {"annotations": annotations}, "spec": spec}


@st.composite
def _policies(draw: st.DrawFn) -> list[Doc]:
    events = draw(st.lists(st.sampled_from(EVENTS), unique=True, max_size=2))
    codes = draw(st.lists(st.integers(1, 5), unique=True, max_size=1))
    out: list[Doc] = []
    for event in events:
        policy: Doc = {"event": event, "action": draw(st.sampled_from(ACTIONS))}
        timeout = draw(st.sampled_from((None, None, "1s", "2s")))
        if timeout:
            policy["timeout"] = timeout
        out.append(policy)
    out += [{"exitCode": c, "action": draw(st.sampled_from(ACTIONS))} for c in codes]
    return out


@st.composite
def valid_job(draw: st.DrawFn) -> Doc:
    tasks: list[Doc] = []
    for name in TASKS[: draw(st.integers(1, len(TASKS)))]:
        replicas = draw(st.integers(1, 2))
        task: Doc = {"name": name, "replicas": replicas, "template": draw(_template())}
        if draw(st.booleans()):
            task["minAvailable"] = draw(st.integers(0, replicas))
        if draw(st.booleans()):
            task["policies"] = draw(_policies())
        tasks.append(task)
    spec: Doc = {"tasks": tasks}
    total = sum(t["replicas"] for t in tasks)
    if draw(st.booleans()):
        spec["minAvailable"] = draw(st.integers(0, total))
    if draw(st.booleans()):
        spec["maxRetry"] = draw(st.integers(0, 2))
    if draw(st.booleans()):
        spec["policies"] = draw(_policies())
    if draw(st.booleans()):
        spec["queue"] = "default"
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {}, "spec": spec}


def _task(doc: Doc, index: int) -> Doc:
    task: Doc = doc["spec"]["tasks"][index % len(doc["spec"]["tasks"])]
    return task


def _containers(doc: Doc) -> list[Doc]:
    found: list[Doc] = _task(doc, 0)["template"]["spec"]["containers"]
    return found


# Each: (what, field, gist, change). A change edits a valid job in place; a refusal names the
# field. What the webhook does not check of a pod template (PODS_REFUSED) is admitted, and the
# apiserver refuses the pods.
def _no_tasks(d: Doc) -> None:
    d["spec"]["tasks"] = []


def _min_over_total(d: Doc) -> None:
    d["spec"]["minAvailable"] = sum(t["replicas"] for t in d["spec"]["tasks"]) + 1


def _task_min_over_replicas(d: Doc) -> None:
    _task(d, 0)["minAvailable"] = _task(d, 0)["replicas"] + 1


def _duplicate_task(d: Doc) -> None:
    d["spec"]["tasks"].append(copy.deepcopy(_task(d, 0)))


def _task_name_not_dns(d: Doc) -> None:
    _task(d, 0)["name"] = "Task_A"


def _event_and_exit_code(d: Doc) -> None:
    d["spec"]["policies"] = [{"event": "PodFailed", "exitCode": 3, "action": "RestartJob"}]


def _exit_code_zero(d: Doc) -> None:
    d["spec"]["policies"] = [{"exitCode": 0, "action": "AbortJob"}]


def _event_twice(d: Doc) -> None:
    d["spec"]["policies"] = [
        {"event": "PodFailed", "action": "RestartJob"},
        {"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"},
    ]


def _star_and_more(d: Doc) -> None:
    d["spec"]["policies"] = [
        {"event": "*", "action": "RestartJob"},
        {"event": "PodFailed", "action": "AbortJob"},
    ]


def _internal_event(d: Doc) -> None:
    d["spec"]["policies"] = [{"event": "PodRunning", "action": "RestartJob"}]


def _unknown_action(d: Doc) -> None:
    d["spec"]["policies"] = [{"event": "PodFailed", "action": "Reboot"}]


def _negative_max_retry(d: Doc) -> None:
    d["spec"]["maxRetry"] = -1


def _negative_replicas(d: Doc) -> None:
    _task(d, 0)["replicas"] = -1


def _replicas_text(d: Doc) -> None:
    _task(d, 0)["replicas"] = "two"


def _long_pod_name(d: Doc) -> None:
    _task(d, 0)["name"] = "t" * 60


def _bad_timeout(d: Doc) -> None:
    d["spec"]["policies"] = [{"event": "PodFailed", "action": "RestartJob", "timeout": "soon"}]


def _job_name_upper(d: Doc) -> None:
    d["metadata"]["name"] = "Job-Upper"


def _missing_queue(d: Doc) -> None:
    d["spec"]["queue"] = MISSING_QUEUE


def _root_queue(d: Doc) -> None:
    d["spec"]["queue"] = ROOT


def _container_name_upper(d: Doc) -> None:
    _containers(d)[0]["name"] = "Main"


def _no_image(d: Doc) -> None:
    del _containers(d)[0]["image"]


def _port_out_of_range(d: Doc) -> None:
    _containers(d)[0]["ports"] = [{"containerPort": 70000}]


def _cpu_not_a_quantity(d: Doc) -> None:
    _containers(d)[0]["resources"] = {"requests": {"cpu": "lots"}}


def _restart_policy_unknown(d: Doc) -> None:
    _task(d, 0)["template"]["spec"]["restartPolicy"] = "Sometimes"


def _containers_not_a_list(d: Doc) -> None:
    _task(d, 0)["template"]["spec"]["containers"] = "main"


def _twin_containers(d: Doc) -> None:
    _containers(d).append(_container())


def _env_value_and_source(d: Doc) -> None:
    source = {"fieldRef": {"fieldPath": "metadata.name"}}
    _containers(d)[0]["env"] = [{"name": "WHO", "value": "me", "valueFrom": source}]


def _mount_of_no_volume(d: Doc) -> None:
    _containers(d)[0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]


def _dns_policy_unknown(d: Doc) -> None:
    _task(d, 0)["template"]["spec"]["dnsPolicy"] = "Sometimes"


def _depends_on_itself(d: Doc) -> None:
    task = _task(d, 0)
    task["dependsOn"] = {"name": [task["name"]]}


def _depends_on_a_stranger(d: Doc) -> None:
    _task(d, 0)["dependsOn"] = {"name": ["nobody"]}


def _unknown_plugin(d: Doc) -> None:
    d["spec"]["plugins"] = {"teleport": []}


def _pull_policy_unknown(d: Doc) -> None:
    _containers(d)[0]["imagePullPolicy"] = "Sometimes"


_CLAIM: Final = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def _duplicated_mount_path(d: Doc) -> None:
    d["spec"]["volumes"] = [
        {"mountPath": "/data", "volumeClaim": _CLAIM},
        {"mountPath": "/data", "volumeClaimName": "shared"},
    ]


def _claim_and_claim_name(d: Doc) -> None:
    d["spec"]["volumes"] = [{"mountPath": "/data", "volumeClaim": _CLAIM, "volumeClaimName": "x"}]


def _volume_without_claim(d: Doc) -> None:
    d["spec"]["volumes"] = [{"mountPath": "/data"}]


REFUSED_JOBS: Final = (
    ("no-tasks", "spec.tasks", "at least 1", _no_tasks),
    (
        "minAvailable-over-total",
        "spec.minAvailable",
        "greater than total replicas",
        _min_over_total,
    ),
    (
        "task-minAvailable-over-replicas",
        "spec.tasks[0].minAvailable",
        "'minAvailable' is greater than 'replicas'",
        _task_min_over_replicas,
    ),
    ("duplicate-task", "spec.tasks", "duplicated task name", _duplicate_task),
    ("task-name-not-dns", "spec.tasks[0].name", "DNS-1123 label", _task_name_not_dns),
    (
        "event-and-exitCode",
        "spec.policies[0]",
        "must not specify event and exitCode simultaneously",
        _event_and_exit_code,
    ),
    ("exitCode-zero", "spec.policies[0].exitCode", "0 is not a valid error code", _exit_code_zero),
    ("event-twice", "spec.policies", "duplicate event", _event_twice),
    ("star-and-more", "spec.policies", "if there's * here", _star_and_more),
    ("internal-event", "spec.policies[0].event", "Unsupported value", _internal_event),
    ("unknown-action", "spec.policies[0].action", "Unsupported value", _unknown_action),
    ("negative-maxRetry", "spec.maxRetry", "greater than or equal to 0", _negative_max_retry),
    (
        "negative-replicas",
        "spec.tasks[0].replicas",
        "greater than or equal to 0",
        _negative_replicas,
    ),
    ("replicas-text", "spec.tasks[0].replicas", "must be of type integer", _replicas_text),
    ("pod-name-too-long", "metadata.name", "at most 63 characters", _long_pod_name),
    ("timeout-not-a-duration", "spec.policies[0].timeout", "should match", _bad_timeout),
    ("job-name-upper", "metadata.name", "RFC 1123", _job_name_upper),
    ("queue-missing", "spec.queue", f'queue "{MISSING_QUEUE}" does not exist', _missing_queue),
    ("queue-root", "spec.queue", "can not submit job to the root queue", _root_queue),
    ("depends-on-itself", "spec.tasks[0].dependsOn.name", "depends on itself", _depends_on_itself),
    (
        "depends-on-a-stranger",
        "spec.tasks[0].dependsOn.name",
        '"nobody" is not a task of this job',
        _depends_on_a_stranger,
    ),
    ("unknown-plugin", "spec.plugins", 'unable to find job plugin "teleport"', _unknown_plugin),
    (
        "container-name-upper",
        "spec.tasks[0].template.spec.containers[0].name",
        "must be a DNS-1123 label",
        _container_name_upper,
    ),
    ("no-image", "spec.tasks[0].template.spec.containers[0].image", "Required value", _no_image),
    (
        "port-out-of-range",
        "spec.tasks[0].template.spec.containers[0].ports[0].containerPort",
        "must be between 1 and 65535",
        _port_out_of_range,
    ),
    (
        "cpu-not-a-quantity",
        "spec.tasks[0].template.spec.containers[0].resources.requests.cpu",
        "must be a quantity",
        _cpu_not_a_quantity,
    ),
    (
        "restartPolicy-unknown",
        "spec.tasks[0].template.spec.restartPolicy",
        "Unsupported value",
        _restart_policy_unknown,
    ),
    (
        "containers-not-a-list",
        "spec.tasks[0].template.spec.containers",
        "Required value",
        _containers_not_a_list,
    ),
    (
        "duplicated-mountPath",
        "spec.volumes[1].mountPath",
        'duplicated mountPath "/data"',
        _duplicated_mount_path,
    ),
    (
        "volumeClaim-and-volumeClaimName",
        "spec.volumes[0].volumeClaimName",
        "conflict",
        _claim_and_claim_name,
    ),
    (
        "volume-without-claim",
        "spec.volumes[0]",
        "either volumeClaim or volumeClaimName must be specified",
        _volume_without_claim,
    ),
    (
        "twin-containers",
        "spec.tasks[0].template.spec.containers[1].name",
        "Duplicate value",
        _twin_containers,
    ),
)
PODS_REFUSED: Final = (
    ("env-value-and-valueFrom", _env_value_and_source),
    ("mount-of-no-volume", _mount_of_no_volume),
    ("dnsPolicy-unknown", _dns_policy_unknown),
    ("imagePullPolicy-unknown", _pull_policy_unknown),
)


# Which refusal the next refused Job gets, in turn: Hypothesis favours small and edge values,
# so a drawn index would leave some kinds of a long table unmet; a turn meets every one.
_TURNS: Final = {"job": itertools.count(), "pods": itertools.count()}


@st.composite
def job_case(draw: st.DrawFn) -> Case:
    doc = draw(valid_job())
    match draw(st.integers(0, 9)):
        case 0 | 1 | 2 | 3 | 4:
            why, field, gist, change = REFUSED_JOBS[next(_TURNS["job"]) % len(REFUSED_JOBS)]
            change(doc)
            return Case("job", doc, field=field, gist=gist, why=why)
        case 5:
            why, pod_change = PODS_REFUSED[next(_TURNS["pods"]) % len(PODS_REFUSED)]
            pod_change(doc)
            return Case("job", doc, pods_refused=True, why=why)
    return Case("job", doc)


@st.composite
def queue_case(draw: st.DrawFn) -> Case:
    spec: Doc = {"weight": draw(st.integers(1, 10))}
    if draw(st.booleans()):
        spec["parent"] = ROOT
    if draw(st.booleans()):
        spec["capability"] = {"cpu": str(draw(st.integers(1, 64)))}
    if draw(st.booleans()):
        spec["reclaimable"] = draw(st.booleans())
    doc: Doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {},
        "spec": spec,
    }
    match draw(st.integers(0, 9)):
        case 0:
            spec["weight"] = draw(st.integers(-3, 0))
            return Case("queue", doc, "spec.weight", "greater than or equal to 1", why="q-weight")
        case 1:
            spec["parent"] = MISSING_QUEUE
            gist = f'parent queue "{MISSING_QUEUE}" does not exist'
            return Case("queue", doc, "spec.parent", gist, why="q-parent-missing")
        case 2:
            spec["capability"] = {"cpu": "lots"}
            return Case("queue", doc, "spec.capability.cpu", "should match", why="q-capability")
        case 3:
            doc["metadata"]["name"] = "Queue_Upper"
            return Case("queue", doc, "metadata.name", "RFC 1123", why="q-name")
        case 4:
            cap = draw(st.integers(1, 64))
            spec["capability"] = {"cpu": str(cap)}
            spec["deserved"] = {"cpu": str(cap + draw(st.integers(1, 8)))}
            gist = f"must be <= capability[cpu]={cap}"
            return Case("queue", doc, "spec.deserved.cpu", gist, why="q-deserved-over-capability")
    return Case("queue", doc)


COMMAND_ACTIONS: Final = ("AbortJob", "ResumeJob", "RestartJob", "CompleteJob", "Nap")


@st.composite
def command_case(draw: st.DrawFn) -> Case:
    """A Command for a Job the test admitted before (the test fills in its name and uid)."""
    doc: Doc = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {},
        "action": draw(st.sampled_from(COMMAND_ACTIONS)),
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "", "uid": ""},
        "reason": "fuzz",
    }
    match draw(st.integers(0, 5)):
        case 0:
            doc["action"] = "A" * 64
            return Case("command", doc, "action", "may not be more than 63", why="c-action-long")
        case 1:
            del doc["target"]["uid"]
            return Case("command", doc, "target.uid", "Required value", why="c-target-uid")
    return Case("command", doc)


REFUSED: Final = (
    *(why for why, *_ in REFUSED_JOBS),
    "q-weight",
    "q-parent-missing",
    "q-capability",
    "q-name",
    "q-deserved-over-capability",
    "c-action-long",
    "c-target-uid",
)


def any_case() -> st.SearchStrategy[Case]:
    return st.one_of(job_case(), job_case(), job_case(), job_case(), queue_case(), command_case())

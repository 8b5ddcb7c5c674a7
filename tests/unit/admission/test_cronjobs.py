"""What the CronJob webhook refuses, each message naming its field; the example is admitted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from admission import cronjobs, rules
from models.cronjob import CronJob

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "examples" / "cronjob.yaml"


def _cron(name: str = "nightly", **spec: Any) -> dict[str, Any]:
    template = {
        "spec": {
            "tasks": [
                {
                    "name": "t",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ]
        }
    }
    return {
        "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": template, **spec},
    }


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(_cron(schedule=""), "spec.schedule: schedule is required", id="empty"),
        pytest.param(
            _cron(schedule="TZ=UTC 0 * * * *"),
            "spec.schedule: schedule should not contain TZ",
            id="tz-prefix",
        ),
        pytest.param(
            _cron(schedule="0 0 * * * *"),
            "spec.schedule: '0 0 * * * *' is not a valid cron expression: expected exactly 5",
            id="seconds-field",
        ),
        pytest.param(
            _cron(schedule="61 * * * *"),
            "spec.schedule: '61 * * * *' is not a valid cron expression",
            id="range",
        ),
        pytest.param(
            _cron(timeZone=""),
            "spec.timeZone: timeZone must be nil or non-empty string",
            id="zone-empty",
        ),
        pytest.param(
            _cron(timeZone="Local"), "spec.timeZone: timeZone can't be Local", id="zone-local"
        ),
        pytest.param(
            _cron(timeZone="../etc/passwd"), "spec.timeZone: unknown timeZone", id="zone-path"
        ),
        pytest.param(
            _cron(timeZone="Mars/Olympus"),
            "spec.timeZone: invalid timeZone 'Mars/Olympus'",
            id="zone-unknown",
        ),
        pytest.param(
            _cron(name="n" * 53),
            "metadata.name: cronJob name must be no more than 52 characters",
            id="name-length",
        ),
        pytest.param(
            _cron(
                schedule="@every 1m",
                jobTemplate={"spec": {"tasks": [{"name": "t", "template": {"spec": {}}}]}},
            ),
            "spec.jobTemplate.spec.tasks[0].template.spec.containers: Required value",
            id="template-pod",
        ),
        pytest.param(
            _cron(
                name="n" * 45,
                jobTemplate={
                    "spec": {
                        "tasks": [
                            {
                                "name": "t" * 10,
                                "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
                            }
                        ]
                    }
                },
            ),
            "spec.jobTemplate.spec.tasks[0].name: pod names",
            id="pod-name-length",
        ),
    ],
)
def test_refused(obj: dict[str, Any], message: str) -> None:
    found = cronjobs.problems(obj)
    assert any(p.startswith(message) for p in found), found


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"timeZone": "Asia/Tokyo"},
        {"schedule": "@hourly"},
        {"schedule": "@every 90s"},
        {"schedule": "0 9 * * mon-fri"},
    ],
)
def test_admitted(spec: dict[str, Any]) -> None:
    assert cronjobs.problems(_cron(**spec)) == []


def test_review_names_the_cronjob_and_joins_problems() -> None:
    request = {
        "operation": "CREATE",
        "resource": {"group": "batch.volcano.sh", "version": "v1alpha1", "resource": "cronjobs"},
        "namespace": "ns",
        "object": _cron(schedule="", timeZone="Local"),
    }
    verdict = rules.review(request, lookup=None)  # type: ignore[arg-type]
    assert not verdict.allowed
    assert verdict.message.startswith("cronjob ns/nightly: spec.schedule: ")
    assert "; spec.timeZone: " in verdict.message


def test_example_is_a_cronjob_the_webhook_admits() -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    CronJob.model_validate(doc)
    assert cronjobs.problems(doc) == []

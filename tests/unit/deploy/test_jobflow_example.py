"""The JobFlow example (deploy/examples/jobflow/) reads as Volcano's JobTemplates and JobFlow,
the webhook admits the flow, and the Jobs it makes pass the webhook's Job rules offline
(tests/e2e/test_jobflow.py runs it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from admission import jobflows, jobspec, templates
from controllers.jobflow import build
from models.jobflow import JobFlow, JobTemplate
from models.meta import Identity

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[3] / "deploy" / "examples" / "jobflow"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((EXAMPLE / name).read_text()) if d]


def test_the_flow_names_the_example_templates_and_is_a_dag() -> None:
    [doc] = _docs("jobflow.yaml")
    flow = JobFlow.model_validate(doc)
    names = {JobTemplate.model_validate(d).metadata.name for d in _docs("jobtemplates.yaml")}
    assert {f.name for f in flow.spec.entries} == names
    assert jobflows.problems(doc) == []


@pytest.mark.parametrize("doc", _docs("jobtemplates.yaml"), ids=lambda d: d["metadata"]["name"])
def test_each_template_makes_a_job_the_webhook_admits(doc: dict[str, Any]) -> None:
    template = JobTemplate.model_validate(doc)
    name = template.metadata.name or ""
    job = build.job(
        Identity(namespace="default", name="flow-example", uid="u"), name, template.spec
    )
    body = job.dump()
    assert [*jobspec.create_problems(body), *templates.problems(body)] == []

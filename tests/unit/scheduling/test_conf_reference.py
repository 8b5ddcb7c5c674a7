"""docs/reference/volcano-scheduler.md is the page the loader's tables print, and covers all of
Volcano: every plugin Volcano registers (`git grep 'ssn.Add.*Fn(' pkg/scheduler/plugins` at
HEAD, `tiers.REGISTERED`) and every action (`pkg/scheduler/actions/factory.go`), each run or
refused with why."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduling.framework import conf, conf_reference
from scheduling.framework.session_config import Action
from scheduling.framework.tiers import REGISTERED

pytestmark = pytest.mark.unit

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "volcano-scheduler.md"


def test_the_committed_page_is_the_generated_one() -> None:
    assert PAGE.read_text() == conf_reference.page(), (
        "regenerate: python -m scheduling.framework.conf_reference > " + str(PAGE)
    )


def test_every_volcano_plugin_and_action_is_run_or_refused_with_why() -> None:
    assert set(REGISTERED) == conf.VOLCANO_PLUGINS
    assert set(conf_reference.NOT_RUN) == conf.VOLCANO_PLUGINS - conf.SUPPORTED
    run = {a.value for a in Action}
    assert set(conf_reference.ACTIONS_NOT_RUN) == conf.VOLCANO_ACTIONS - run
    assert run <= conf.VOLCANO_ACTIONS
    for name in conf.VOLCANO_PLUGINS:
        assert f"| `{name}` |" in PAGE.read_text()


def test_every_point_a_plugin_honours_is_one_it_registers_and_is_explained() -> None:
    for name, points in conf.HONOURED.items():
        assert points <= REGISTERED[name], name
        assert all(p in conf_reference.POINT_EFFECT for p in points), name

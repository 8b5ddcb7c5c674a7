"""Where a session's configuration comes from, how a change is picked up, and what a broken
configuration does to the sessions."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from temporalio.exceptions import ApplicationError

from activities import kube
from activities.scheduler import scheduler_conf
from scheduling.framework.conf import VOLCANO_DEFAULT
from scheduling.framework.session_config import Action

pytestmark = pytest.mark.unit

BINPACK = VOLCANO_DEFAULT + "  - name: binpack\n"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_conf, "_LOADED", scheduler_conf._Loaded())
    for name in (
        scheduler_conf.ENV_CONF,
        scheduler_conf.ENV_CONFIGMAP,
        scheduler_conf.ENV_ACTIONS,
        scheduler_conf.ENV_PENDING_LISTED,
    ):
        monkeypatch.delenv(name, raising=False)


def test_no_configuration_gives_the_defaults_with_reclaim() -> None:
    assert Action.RECLAIM in scheduler_conf.session_config().actions


def test_a_file_is_read_and_its_change_picked_up_by_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(VOLCANO_DEFAULT)
    monkeypatch.setenv(scheduler_conf.ENV_CONF, str(conf))
    first = scheduler_conf.session_config()
    assert first.scoring.binpack == 0 and Action.RECLAIM not in first.actions
    conf.write_text(BINPACK)
    assert scheduler_conf.session_config().scoring.binpack == 1


def test_a_broken_change_keeps_the_last_good_configuration_and_logs_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(BINPACK)
    monkeypatch.setenv(scheduler_conf.ENV_CONF, str(conf))
    assert scheduler_conf.session_config().scoring.binpack == 1
    conf.write_text(BINPACK + "  - name: binpak\n")
    with caplog.at_level(logging.ERROR):
        assert scheduler_conf.session_config().scoring.binpack == 1
        scheduler_conf.session_config()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "unknown plugin(s) ['binpak']" in errors[0]  # once per text


def test_a_configuration_that_never_loaded_fails_the_session_naming_the_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(VOLCANO_DEFAULT.replace("enqueue, allocate", "enqueue, alocate"))
    monkeypatch.setenv(scheduler_conf.ENV_CONF, str(conf))
    with pytest.raises(ApplicationError, match="unknown action") as failure:
        scheduler_conf.session_config()
    assert failure.value.non_retryable and str(conf) in str(failure.value)
    monkeypatch.setenv(scheduler_conf.ENV_CONF, str(tmp_path / "absent.conf"))
    with pytest.raises(ApplicationError, match="cannot read"):
        scheduler_conf.session_config()


def test_the_actions_shortcut_replaces_the_configurations_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(BINPACK)
    monkeypatch.setenv(scheduler_conf.ENV_CONF, str(conf))
    monkeypatch.setenv(scheduler_conf.ENV_ACTIONS, "enqueue, allocate, preempt")
    session = scheduler_conf.session_config()
    assert session.actions == (Action.ENQUEUE, Action.ALLOCATE, Action.PREEMPT)
    assert session.scoring.binpack == 1  # the rest of the file still holds


def test_a_configmap_is_read_at_most_every_few_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[tuple[str, str]] = []
    data = {scheduler_conf.CONFIGMAP_KEY: BINPACK}

    class Core:
        def read_namespaced_config_map(self, name: str, namespace: str) -> SimpleNamespace:
            reads.append((namespace, name))
            return SimpleNamespace(data=dict(data))

    clock = [100.0]
    monkeypatch.setattr(kube, "core", Core)
    monkeypatch.setattr(scheduler_conf.time, "monotonic", lambda: clock[0])
    monkeypatch.setenv(scheduler_conf.ENV_CONFIGMAP, "volcano-system/volcano-scheduler")
    assert scheduler_conf.session_config().scoring.binpack == 1
    data[scheduler_conf.CONFIGMAP_KEY] = VOLCANO_DEFAULT
    assert scheduler_conf.session_config().scoring.binpack == 1  # not read again yet
    clock[0] += scheduler_conf.CONFIGMAP_EVERY
    assert scheduler_conf.session_config().scoring.binpack == 0
    assert reads == [("volcano-system", "volcano-scheduler")] * 2


def test_a_configmap_without_the_key_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    class Core:
        def read_namespaced_config_map(self, name: str, namespace: str) -> SimpleNamespace:
            return SimpleNamespace(data={"other": ""})

    monkeypatch.setattr(kube, "core", Core)
    monkeypatch.setenv(scheduler_conf.ENV_CONFIGMAP, "ns/cm")
    with pytest.raises(ApplicationError, match=r"has no key 'volcano-scheduler\.conf'"):
        scheduler_conf.session_config()


def test_the_jobs_each_queue_lists_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert scheduler_conf.session_config().pending_listed == 100
    monkeypatch.setenv(scheduler_conf.ENV_PENDING_LISTED, "25")
    assert scheduler_conf.session_config().pending_listed == 25
    monkeypatch.setenv(scheduler_conf.ENV_PENDING_LISTED, "-1")
    with pytest.raises(ApplicationError, match="CALDERA_SCHEDULER_PENDING_LISTED='-1'"):
        scheduler_conf.session_config()

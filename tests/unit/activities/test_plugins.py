"""The plugin activities: the objects' markers as Volcano records them, a Job without a uid
refused, a bad argument logged, and the ssh key pair generated in Volcano's formats."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.controllers import plugins
from controllers.job import plugins as job_plugins
from tests.builders import make_job
from tests.unit.controllers.job.plugins import owned

pytestmark = pytest.mark.unit


def _distributed(plugin_args: dict[str, list[str]]) -> Any:
    return make_job("j").task("master").task("worker", replicas=2).spec(plugins=plugin_args)


def test_ensure_plugins_job_without_uid_is_invalid_not_retried() -> None:
    job = make_job("j").task("w").spec(plugins={"svc": []}).manifest()
    with pytest.raises(ApplicationError) as err:
        ActivityEnvironment().run(plugins.ensure_plugins, plugins.PluginsInput(job=job))
    assert err.value.type == "Invalid"
    assert err.value.non_retryable
    assert "job default/j: metadata.uid is required" in str(err.value)


def test_activities_exported_under_stable_names() -> None:
    names = [getattr(fn, "__temporal_activity_definition").name for fn in plugins.ACTIVITIES]
    assert names == ["ensure_plugins", "remove_plugins"]


def test_every_pod_hook_has_ensure_and_remove_effects() -> None:
    hooks = set(job_plugins.POD_HOOKS)
    assert set(plugins._ENSURE) == hooks
    assert set(plugins._REMOVE) == hooks


def test_ensure_plugins_markers_as_volcano_records_them() -> None:
    """Plugins that own no object need no apiserver: their job add is the marker alone, and
    hcclrank records none."""
    job = owned(_distributed({p: [] for p in ("env", "hcclrank", "mpi", "pytorch", "tensorflow")}))
    result = ActivityEnvironment().run(plugins.ensure_plugins, plugins.PluginsInput(job=job))
    assert result.controlled == {
        "plugin-env": "env",
        "plugin-mpi": "mpi",
        "plugin-pytorch": "pytorch",
        "plugin-tensorflow": "tensorflow",
    }
    removed = ActivityEnvironment().run(plugins.remove_plugins, plugins.PluginsInput(job=job))
    assert removed.controlled == {}


def test_ensure_plugins_logs_a_bad_framework_argument(caplog: pytest.LogCaptureFixture) -> None:
    job = owned(_distributed({"mpi": ["--np=4", "--master=launcher"]}))
    ActivityEnvironment().run(plugins.ensure_plugins, plugins.PluginsInput(job=job))
    warnings = [r.getMessage() for r in caplog.records if "arguments ignored" in r.getMessage()]
    assert len(warnings) == 1
    assert "plugin=mpi error=flag provided but not defined: -np" in warnings[0]


def test_generate_keys_rsa_2048_in_volcano_formats() -> None:
    pair = plugins.generate_keys()
    assert pair.private.startswith("-----BEGIN RSA PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(pair.private.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == 2048
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert pair.public == public.decode() + "\n"
    assert pair != plugins.generate_keys()

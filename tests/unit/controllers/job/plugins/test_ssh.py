"""ssh writes Volcano's key Secret (keys, authorized_keys, per-pod config) and parses its flags."""

from __future__ import annotations

import base64

import pytest

from controllers.job.plugins import ssh
from tests.builders import make_job
from tests.unit.controllers.job.plugins import owned, owner_ref

pytestmark = pytest.mark.unit

KEYS = ssh.KeyPair(private="PRIVATE\n", public="ssh-rsa AAAA\n")
CONFIG_22 = (
    "StrictHostKeyChecking no\n"
    "UserKnownHostsFile /dev/null\n"
    "Host j-master-0\n  HostName j-master-0.j\n  Port 22\n"
    "Host j-worker-0\n  HostName j-worker-0.j\n  Port 22\n"
    "Host j-worker-1\n  HostName j-worker-1.j\n  Port 22\n"
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_secret_holds_keys_and_config_owned_by_job() -> None:
    job = owned(make_job("j").task("master").task("worker", replicas=2))
    opts, _ = ssh.options([])
    assert ssh.secret(job, opts, KEYS) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "j-ssh", "namespace": "default", "ownerReferences": [owner_ref("j")]},
        "type": "Opaque",
        "data": {
            "id_rsa": _b64("PRIVATE\n"),
            "id_rsa.pub": _b64("ssh-rsa AAAA\n"),
            "authorized_keys": _b64("ssh-rsa AAAA\n"),
            "config": _b64(CONFIG_22),
        },
    }


@pytest.mark.parametrize(
    ("args", "port"),
    [
        pytest.param([], 22, id="default"),
        pytest.param(["--ssh-port=2222"], 2222, id="custom"),
        pytest.param(["--ssh-port=0"], 22, id="zero-falls-back"),
        pytest.param(["--ssh-port=65536"], 22, id="too-large-falls-back"),
        pytest.param(["--ssh-port=abc"], 22, id="unparsable-keeps-default"),
    ],
)
def test_config_port_from_flag(args: list[str], port: int) -> None:
    job = make_job("j").task("master").task("worker", replicas=2).build()
    opts, _ = ssh.options(args)
    assert ssh.config(job, opts.ssh_port) == CONFIG_22.replace("Port 22", f"Port {port}")


def test_config_template_hostname_listed_once() -> None:
    template = {"spec": {"containers": [{"name": "c", "image": "i"}], "hostname": "h"}}
    job = make_job("j").task("w", replicas=3, template=template).build()
    assert ssh.config(job, 22) == (
        "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
        "Host h\n  HostName h.j\n  Port 22\n"
    )


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param([], None, id="generate"),
        pytest.param(
            ["--ssh-private-key=PRIV", "--ssh-public-key=PUB"],
            ssh.KeyPair(private="PRIV", public="PUB"),
            id="user-given",
        ),
        pytest.param(["--ssh-public-key=PUB"], None, id="public-alone-ignored"),
    ],
)
def test_user_keys_only_with_private_key(args: list[str], want: ssh.KeyPair | None) -> None:
    assert ssh.user_keys(ssh.options(args)[0]) == want


def test_keys_from_data_round_trips_secret_data() -> None:
    job = make_job("j").task("w").build()
    data = ssh.secret_data(job, ssh.Options(), KEYS)
    assert ssh.keys_from_data(data) == KEYS
    assert ssh.keys_from_data({"config": data["config"]}) is None

"""The kubeconfig's credentials are looked at again at most once a second, not per request."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from service import kube

pytestmark = pytest.mark.unit

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret-token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


@pytest.fixture
def api(tmp_path: Path) -> client.ApiClient:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return kube.new_api(str(path), connections=4)


def test_every_request_still_carries_the_token(api: client.ApiClient) -> None:
    for _ in range(3):
        assert api.configuration.auth_settings()["BearerToken"]["value"] == "Bearer secret-token"


def test_the_credentials_are_looked_at_again_once_per_period() -> None:
    configuration = client.Configuration()
    configuration.api_key = {"BearerToken": "secret-token"}
    looked: list[float] = []
    clock = [1000.0]
    configuration.refresh_api_key_hook = lambda c: looked.append(clock[0])  # type: ignore[assignment]
    kube._refresh_at_most_every(configuration, kube.REFRESH_EVERY, lambda: clock[0])
    for _ in range(50):
        configuration.auth_settings()
    assert looked == [1000.0]
    clock[0] += kube.REFRESH_EVERY
    configuration.auth_settings()
    configuration.auth_settings()
    assert looked == [1000.0, 1000.0 + kube.REFRESH_EVERY]


def test_a_client_without_a_refresh_hook_is_left_alone() -> None:
    configuration = client.Configuration()
    kube._refresh_at_most_every(configuration, kube.REFRESH_EVERY)
    assert configuration.refresh_api_key_hook is None

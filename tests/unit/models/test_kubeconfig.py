"""A cluster Secret's kubeconfig is checked before a client is built: each mistake is one
sentence naming it, and what would reach past the Secret (files, programs) is refused."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from models import kubeconfig
from models.kubeconfig import KubeconfigError

pytestmark = pytest.mark.unit

CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n...\n").decode()


def doc(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "w",
                "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": CA},
            }
        ],
        "users": [{"name": "admin", "user": {"token": "t"}}],
        "contexts": [{"name": "w", "context": {"cluster": "w", "user": "admin"}}],
        "current-context": "w",
    }
    base.update(changes)
    return base


def text(d: dict[str, Any]) -> str:
    return yaml.safe_dump(d)


def test_a_good_kubeconfig_names_its_context_and_server() -> None:
    parsed = kubeconfig.parse(text(doc()))
    assert (parsed.context, parsed.server) == ("w", "https://127.0.0.1:6443")
    assert parsed.document["users"][0]["user"]["token"] == "t"


def test_bytes_and_a_single_context_without_current_context() -> None:
    d = doc()
    del d["current-context"]
    assert kubeconfig.parse(text(d).encode()).context == "w"


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("clusters: [", "kubeconfig is not YAML"),
        ("just text", "not a YAML mapping"),
        ("", "not a YAML mapping"),
        (text(doc(contexts=[])).replace("current-context: w", ""), "no contexts"),
        (text(doc(**{"current-context": "other"})), "current-context 'other' is not among"),
        (text(doc(clusters=[])), "names no cluster it defines"),
        (text(doc(clusters="x")), "`clusters` is not a list"),
        (
            text(doc(clusters=[{"name": "w", "cluster": {"server": "127.0.0.1:6443"}}])),
            "has no https:// server ('127.0.0.1:6443')",
        ),
        (text(doc(clusters=[{"name": "w", "cluster": {}}])), "has no https:// server (none)"),
        (text(doc(users=[])), "names user 'admin', not defined"),
        (
            text(
                doc(
                    clusters=[
                        {
                            "name": "w",
                            "cluster": {"server": "https://x", "certificate-authority-data": "%%"},
                        }
                    ]
                )
            ),
            "`certificate-authority-data` is not base64",
        ),
    ],
)
def test_each_mistake_reads_as_one_sentence(given: str, says: str) -> None:
    with pytest.raises(KubeconfigError) as e:
        kubeconfig.parse(given)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_several_contexts_need_a_current_one() -> None:
    d = doc()
    del d["current-context"]
    d["contexts"].append({"name": "x", "context": {"cluster": "w"}})
    with pytest.raises(KubeconfigError, match="2 contexts and no current-context"):
        kubeconfig.parse(text(d))


def test_a_file_for_the_certificate_authority_is_refused() -> None:
    d = doc(
        clusters=[{"name": "w", "cluster": {"server": "https://x", "certificate-authority": "/ca"}}]
    )
    with pytest.raises(KubeconfigError, match="names a file; put the certificate inline"):
        kubeconfig.parse(text(d))


@pytest.mark.parametrize("field", kubeconfig.REFUSED_USER_FIELDS)
def test_user_fields_reading_files_or_running_programs_are_refused(field: str) -> None:
    d = doc(users=[{"name": "admin", "user": {field: "/var/run/secrets/token"}}])
    with pytest.raises(KubeconfigError, match=f"`{field}` is not allowed in a cluster Secret"):
        kubeconfig.parse(text(d))


def test_an_anonymous_context_needs_no_user() -> None:
    d = doc(contexts=[{"name": "w", "context": {"cluster": "w"}}], users=[])
    assert kubeconfig.parse(text(d)).server == "https://127.0.0.1:6443"

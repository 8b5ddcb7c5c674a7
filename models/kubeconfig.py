"""A worker cluster's kubeconfig as a registration Secret carries it, checked before any client
is built from it.

The Secret is written by hand, so a mistake in it must read as one sentence naming what is
wrong (`caldera cluster list` shows it, the probe's `ClusterStatus.error` carries it) rather
than as the client library's exception from deep inside a request. The worker also refuses what
would make a Secret reach past itself: paths to files (`certificate-authority`,
`client-certificate`, `client-key`, `tokenFile`) would read the worker's own filesystem, and
`exec` or `auth-provider` would run programs inside it; credentials go inline (`*-data`,
`token`), as MultiKueue asks of its cluster Secrets too.

Pure: YAML in, a checked document out.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

import yaml
from pydantic import BaseModel, ConfigDict

# Fields that name files or programs on the machine that loads the kubeconfig.
REFUSED_CLUSTER_FIELDS: Final = ("certificate-authority",)
REFUSED_USER_FIELDS: Final = (
    "client-certificate",
    "client-key",
    "tokenFile",
    "exec",
    "auth-provider",
)
DATA_FIELDS: Final = {
    "cluster": ("certificate-authority-data",),
    "user": ("client-certificate-data", "client-key-data"),
}
SCHEMES: Final = ("https://", "http://")


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says why, in one line."""


class Kubeconfig(BaseModel):
    """A usable kubeconfig: the context it will use, that context's server, the document."""

    model_config = ConfigDict(frozen=True)

    context: str
    server: str
    document: dict[str, Any]


def _named(doc: Mapping[str, Any], section: str, name: str) -> dict[str, Any] | None:
    """The body (`cluster`, `user`, `context`) of the entry `name` of a section, if any."""
    singular = section.removesuffix("s")
    for entry in doc.get(section) or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            body = entry.get(singular)
            return dict(body) if isinstance(body, Mapping) else {}
    return None


def _check_data(where: str, body: Mapping[str, Any], fields: tuple[str, ...]) -> None:
    for field in fields:
        value = body.get(field)
        if value is None:
            continue
        try:
            base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError(f"{where}: `{field}` is not base64") from None


def _current_context(doc: Mapping[str, Any]) -> str:
    contexts = [c for c in doc.get("contexts") or [] if isinstance(c, Mapping)]
    current = doc.get("current-context")
    if current:
        return str(current)
    if len(contexts) == 1 and contexts[0].get("name"):
        return str(contexts[0]["name"])
    if not contexts:
        raise KubeconfigError("kubeconfig has no contexts")
    raise KubeconfigError(f"kubeconfig has {len(contexts)} contexts and no current-context")


def parse(text: str | bytes) -> Kubeconfig:
    """The checked kubeconfig; KubeconfigError says what makes it unusable."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise KubeconfigError(f"kubeconfig is not YAML: {first}") from None
    if not isinstance(doc, Mapping):
        raise KubeconfigError("kubeconfig is not a YAML mapping (apiVersion, clusters, ...)")
    for section in ("clusters", "users", "contexts"):
        if not isinstance(doc.get(section) or [], list):
            raise KubeconfigError(f"kubeconfig `{section}` is not a list")
    name = _current_context(doc)
    context = _named(doc, "contexts", name)
    if context is None:
        raise KubeconfigError(f"kubeconfig current-context {name!r} is not among its contexts")
    cluster_name = str(context.get("cluster") or "")
    cluster = _named(doc, "clusters", cluster_name) if cluster_name else None
    if cluster is None:
        raise KubeconfigError(f"kubeconfig context {name!r} names no cluster it defines")
    server = str(cluster.get("server") or "")
    if not server.startswith(SCHEMES):
        shown = repr(server) if server else "none"
        raise KubeconfigError(
            f"kubeconfig cluster {cluster_name!r} has no https:// server ({shown})"
        )
    for field in REFUSED_CLUSTER_FIELDS:
        if field in cluster:
            raise KubeconfigError(
                f"kubeconfig cluster {cluster_name!r}: `{field}` names a file; "
                f"put the certificate inline as `{field}-data`"
            )
    _check_data(f"kubeconfig cluster {cluster_name!r}", cluster, DATA_FIELDS["cluster"])
    user_name = str(context.get("user") or "")
    if user_name:
        user = _named(doc, "users", user_name)
        if user is None:
            raise KubeconfigError(
                f"kubeconfig context {name!r} names user {user_name!r}, not defined"
            )
        for field in REFUSED_USER_FIELDS:
            if field in user:
                raise KubeconfigError(
                    f"kubeconfig user {user_name!r}: `{field}` is not allowed in a cluster "
                    "Secret (it reads files or runs programs in the worker); use `token` or "
                    "`client-certificate-data` and `client-key-data`"
                )
        _check_data(f"kubeconfig user {user_name!r}", user, DATA_FIELDS["user"])
    return Kubeconfig(context=name, server=server, document=dict(doc))

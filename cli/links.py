"""Links into the Temporal UI: the one place their shape is spelled.

`caldera dev up` prints one for the sample job; the job and queue commands print one for every
object they touch, so a user goes from a terminal to the object's whole history in one click.
"""

from __future__ import annotations

import os
from typing import Final
from urllib.parse import quote

from cli.devstack import temporal_dev

UI_ENV: Final = "CALDERA_UI_URL"
DEFAULT_UI: Final = f"http://localhost:{temporal_dev.DEFAULT_UI_PORT}"


def default_ui() -> str:
    """$CALDERA_UI_URL, else the dev server's UI on its default port."""
    return os.environ.get(UI_ENV) or DEFAULT_UI


def workflow_url(ui: str, namespace: str, workflow_id: str) -> str:
    """`{ui}/namespaces/{ns}/workflows/{id}`; the id is encoded whole (its slashes too)."""
    return (
        f"{ui.rstrip('/')}/namespaces/{quote(namespace, safe='')}"
        f"/workflows/{quote(workflow_id, safe='')}"
    )

"""docs/reference/rbac.md is what `caldera docs rbac` renders from deploy/base/rbac-*.yaml, and
the rendering says what the manifests grant: a stale page, or a grant the page leaves out, fails
here. Regenerate with `caldera docs rbac > docs/reference/rbac.md`."""

from __future__ import annotations

import pytest

from cli import main, reference
from tests import access


def test_the_page_on_disk_is_the_rendered_manifests() -> None:
    assert reference.PAGE.read_text() == reference.rbac_page(), f"run `{reference.COMMAND}`"


def test_every_permission_the_manifests_grant_is_a_row() -> None:
    """The rows, read back as permissions, are what tests/access.py evaluates the RBAC to."""
    docs = access.manifests()
    for account in access.NEEDS:
        rows = {
            access.Permission(verb, g.resource, g.group, g.scope or None, name)
            for g in reference.grants(reference.load())
            if g.account == account
            for verb in g.verbs
            for name in (g.names or (None,))
        }
        assert rows == access.granted(docs, account), account


def test_the_command_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["docs", "rbac"]) == 0
    assert capsys.readouterr().out == reference.rbac_page()

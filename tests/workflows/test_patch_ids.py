"""Every `workflow.patched` id in the shells starts with `caldera-` (STYLE rule 6), except the
ones named here: ids histories already hold cannot be renamed. Two were renamed with their old
id still asked after the new one (`workflows.scheduler.LEGACY_IDS`, proven by the replay of
`histories/scheduler_binds_in_session.json`); two keep their old id (the replay of the
`local_writes_*` and `entity_batch_unique_pod_names` histories needs it, and no alias for them
is proven yet)."""

from __future__ import annotations

import ast
from pathlib import Path

from workflows import scheduler

WORKFLOWS = Path(scheduler.__file__).parent
KEPT = {"local-kube-writes", "unique-pod-names"}


def _constants() -> dict[str, str]:
    """Module-level string constants of every workflow module, by name and by `module.NAME`."""
    found: dict[str, str] = {}
    for path in WORKFLOWS.glob("*.py"):
        for node in ast.parse(path.read_text()).body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                found[f"{path.stem}.{target.id}"] = value.value
    return found


def _asked() -> dict[str, str]:
    """Each id passed to a `…patched(…)` call: where → id (a lookup in LEGACY_IDS is left out)."""
    constants = _constants()
    asked: dict[str, str] = {}
    for path in WORKFLOWS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if not name.endswith("patched"):
                continue
            arg, where = node.args[0], f"{path.name}:{node.lineno}"
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                asked[where] = arg.value
            elif isinstance(arg, ast.Name) and f"{path.stem}.{arg.id}" in constants:
                asked[where] = constants[f"{path.stem}.{arg.id}"]
            elif isinstance(arg, ast.Name):
                assert arg.id == "patch_id", f"{where}: {arg.id} is no module constant"
                # forwarded by scheduler._patched: its callers' ids are checked
            elif isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
                asked[where] = constants[f"{arg.value.id}.{arg.attr}"]
            else:
                assert isinstance(arg, ast.Subscript), f"{where}: a patch id read how?"
                assert ast.unparse(arg.value) == "LEGACY_IDS", where
    return asked


def test_patch_ids_start_with_caldera_except_those_histories_hold() -> None:
    asked = _asked()
    assert len(asked) >= 8, asked
    wrong = {w: i for w, i in asked.items() if not i.startswith("caldera-") and i not in KEPT}
    assert wrong == {}


def test_legacy_ids_are_asked_only_after_their_caldera_id() -> None:
    assert all(new.startswith("caldera-") for new in scheduler.LEGACY_IDS)
    assert set(scheduler.LEGACY_IDS.values()) == {"binds-in-session", "handoffs-in-background"}

"""The workflow sandbox every Caldera worker, and the workflow tests, run workflows in.

Temporal's sandbox re-executes, for every workflow instance it creates, each module that is
not passed through. For Caldera that meant compiling the pure cores and rebuilding every
pydantic model's schema per instance: 84% of the worker's CPU while 300 single-pod jobs
started (py-spy, bench/README.md). Those modules are deterministic and keep no module state,
so they are imported once, outside; only the workflow shells (`*/workflow.py`) are reloaded
per instance, which keeps the sandbox's checks on the code that calls Temporal.

Modules are listed one by one, not by package: a package prefix would pass the shells through
too. `from workflows.job import controller` inside a shell would bypass
`imports_passed_through` (the submodule is loaded by importlib's fromlist handling, not by the
sandbox's import hook), which is why the list is configured on the runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

# Whole packages without workflow shells: pydantic models, pure scheduling, activity
# definitions and their messages, process plumbing.
PACKAGES: Final = ("models", "scheduling", "activities", "service")
SHELL: Final = "workflow.py"


def core_modules() -> tuple[str, ...]:
    """Every module under workflows/ except the shells and the packages that hold them."""
    root = Path(__file__).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        if path.name in (SHELL, "__init__.py"):
            continue
        parts = path.relative_to(root.parent).with_suffix("").parts
        names.append(".".join(parts))
    return tuple(names)


def runner() -> SandboxedWorkflowRunner:
    modules = (*PACKAGES, *core_modules())
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*modules)
    )

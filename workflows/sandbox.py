"""The workflow sandbox every Caldera worker, and the workflow tests, run workflows in.

Temporal's sandbox re-executes, for every workflow instance it creates, each module that is
not passed through. For Caldera that meant compiling the pure cores and rebuilding every
pydantic model's schema per instance: 84% of the worker's CPU while 300 single-pod jobs
started (py-spy, bench/README.md). Those modules are deterministic and keep no module state,
so their packages are imported once, outside; only the workflow shells (`workflows/`) are
reloaded per instance, which keeps the sandbox's checks on the code that calls Temporal.

The list is configured on the runner rather than with `imports_passed_through()` in each
shell, because `from controllers.job import controller` inside that block is loaded by
importlib's fromlist handling, past the sandbox's import hook.
"""

from __future__ import annotations

from typing import Final

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

# Packages without workflow shells: pydantic models, the controllers' pure cores, pure
# scheduling, activity definitions and their messages, process plumbing.
PACKAGES: Final = ("models", "controllers", "scheduling", "activities", "service")


def runner() -> SandboxedWorkflowRunner:
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PACKAGES)
    )

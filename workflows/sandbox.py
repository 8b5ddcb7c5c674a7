"""The workflow sandbox the workflow tests run workflows in, and the worker when asked.

Temporal's sandbox re-executes, for every workflow instance it creates, each module that is
not passed through. For Caldera that meant compiling the pure cores and rebuilding every
pydantic model's schema per instance: 84% of the worker's CPU while 300 single-pod jobs
started (py-spy, bench/README.md). Those modules are deterministic and keep no module state,
so their packages are imported once, outside; only the workflow shells (`workflows/`) are
reloaded per instance, which keeps the sandbox's checks on the code that calls Temporal.

Even so, creating the sandbox of each new workflow instance and decoding payloads through it
was about 40% of the worker's CPU while 1000 one-pod jobs started (py-spy with `--gil`), so the
worker runs workflows unsandboxed by default (`CALDERA_WORKFLOW_SANDBOX=on` turns it on). The
sandbox's checks stay where they find mistakes: every workflow test and every replay test
runs sandboxed, so a shell that reads the clock or does I/O fails there first.

The list is configured on the runner rather than with `imports_passed_through()` in each
shell, because `from controllers.job import controller` inside that block is loaded by
importlib's fromlist handling, past the sandbox's import hook.
"""

from __future__ import annotations

import os
from typing import Final

from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

ENV: Final = "CALDERA_WORKFLOW_SANDBOX"  # "on": the worker runs workflows sandboxed
# Packages without workflow shells: pydantic models, the controllers' pure cores, pure
# scheduling, activity definitions and their messages, process plumbing.
PACKAGES: Final = ("models", "controllers", "scheduling", "activities", "service")


def runner() -> SandboxedWorkflowRunner:
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PACKAGES)
    )


def worker_runner() -> WorkflowRunner:
    """The worker's runner: unsandboxed unless `CALDERA_WORKFLOW_SANDBOX=on`."""
    if os.environ.get(ENV, "off").lower() in ("on", "1", "true"):
        return runner()
    return UnsandboxedWorkflowRunner()

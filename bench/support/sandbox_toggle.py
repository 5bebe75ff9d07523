"""The task workflows as they ran before they left the sandbox, for "before" rows.

``McpTaskWorkflow`` and ``McpToolTaskWorkflow`` are ``sandboxed=False``. A
worker picks its runner when it creates a workflow instance (each new run), from
the definition's ``sandboxed`` flag, and every worker of this process has both
runners (the plugin's sandboxed one, with its pass-through modules, and the
default unsandboxed one). Setting the flag back around a row's measurements
runs that row's new tasks in the sandbox again, in the same process and run as
the rows without it. (A benchmark-only reach into ``temporalio.workflow``'s
definition record: nothing in the package does this.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio import workflow

from fastmcp_temporal.workflows.task_workflow import McpTaskWorkflow, McpToolTaskWorkflow


def _set_sandboxed(value: bool) -> None:
    for cls in (McpTaskWorkflow, McpToolTaskWorkflow):
        definition = workflow._Definition.must_from_class(cls)
        object.__setattr__(definition, "sandboxed", value)


@contextmanager
def task_workflows_sandboxed() -> Iterator[None]:
    """Within: new task workflow runs in this process run in Temporal's sandbox."""
    _set_sandboxed(True)
    try:
        yield
    finally:
        _set_sandboxed(False)

"""Workflow tools: a Temporal workflow class registered as an MCP task tool.

```python
from fastmcp_temporal import workflow_tool

mcp.add_tool(workflow_tool(ResearchAgent, activities=[search, write_report]))
```

The tool's input schema comes from the workflow's ``run`` parameters, its
output schema and result conversion from ``run``'s return type (exactly as for
a function tool), its description from the class docstring. It is always a
task (``TaskConfig(mode="required")``): calling it starts the task workflow,
which runs the tool's workflow as its body (see ``workflows.body_workflow``).
Inside, ``fastmcp_temporal.workflows.ask / report_progress / caller`` talk to
the task.

The worker that serves the task must also run the tool's workflow and its
activities: ``TemporalTasks`` (and ``fastmcp-temporal worker``) register them
from the server's workflow tools; a hand-built ``Worker`` gets them from
``workflow_tool_parts(server)``.
"""

from __future__ import annotations

import inspect
import typing
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools.base import Tool
from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities.tasks import TaskConfig

from fastmcp_temporal import _compat


@dataclass(frozen=True)
class WorkflowToolSpec:
    """What the task side needs to run a workflow tool's body."""

    workflow_class: type
    workflow_name: str
    parameters: tuple[str, ...]
    activities: tuple[Callable[..., Any], ...]
    task_queue: str | None


_SPECS: weakref.WeakKeyDictionary[Callable[..., Any], WorkflowToolSpec] = (
    weakref.WeakKeyDictionary()
)


def workflow_tool(
    workflow_class: type,
    *,
    name: str | None = None,
    description: str | None = None,
    activities: Sequence[Callable[..., Any]] = (),
    task_queue: str | None = None,
    poll_interval: timedelta = timedelta(seconds=1),
) -> FunctionTool:
    """Make ``workflow_class`` (a ``@workflow.defn`` class) an MCP task tool."""
    workflow_name, run_fn = _compat.workflow_run_signature(workflow_class)
    if workflow_name is None:
        raise ValueError("A dynamic workflow cannot be a workflow tool: it has no run signature")
    signature = inspect.signature(run_fn)
    parameters = list(signature.parameters.values())[1:]  # drop self
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        raise ValueError("A workflow tool's run() needs named parameters, not *args/**kwargs")
    hints = typing.get_type_hints(run_fn)
    tool_name = name or _snake(workflow_name)

    async def run_as_task(**arguments: Any) -> Any:
        raise ToolError(f"{tool_name!r} is a workflow: it runs only as a task")

    run_as_task.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=hints.get("return", signature.return_annotation)
    )
    run_as_task.__annotations__ = {
        key: value
        for key, value in hints.items()
        if key == "return" or key in {p.name for p in parameters}
    }
    run_as_task.__name__ = tool_name
    run_as_task.__doc__ = description or inspect.getdoc(workflow_class)
    tool = FunctionTool.from_function(
        run_as_task,
        name=tool_name,
        description=run_as_task.__doc__,
        task=TaskConfig(mode="required", poll_interval=poll_interval),
    )
    _SPECS[tool.fn] = WorkflowToolSpec(
        workflow_class=workflow_class,
        workflow_name=workflow_name,
        parameters=tuple(p.name for p in parameters),
        activities=tuple(activities),
        task_queue=task_queue,
    )
    return tool


def spec_for(tool: Tool) -> WorkflowToolSpec | None:
    """The workflow-tool spec of ``tool`` (or of the component it wraps), if any."""
    fn = getattr(tool, "fn", None)
    return _SPECS.get(fn) if fn is not None else None


async def workflow_tool_parts(server: FastMCP) -> tuple[list[type], list[Callable[..., Any]]]:
    """The workflows and activities a worker needs for ``server``'s workflow tools."""
    workflows: dict[str, type] = {}
    activities: dict[int, Callable[..., Any]] = {}
    for component in await server.get_tasks():
        if not isinstance(component, Tool) or (spec := spec_for(component)) is None:
            continue
        workflows[spec.workflow_name] = spec.workflow_class
        for fn in spec.activities:
            activities[id(fn)] = fn
    return list(workflows.values()), list(activities.values())


def _snake(name: str) -> str:
    out = [f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name)]
    return "".join(out)

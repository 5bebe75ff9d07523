"""Why a workflow tool's module does not load in Temporal's workflow sandbox, in one line.

A worker validates every workflow it registers by importing the workflow's module
in the sandbox (``Worker(...)``). An agent framework imported there -- LangGraph
on a server without ``LangGraphPlugin`` -- touches something the sandbox
restricts, and temporalio says only ``RuntimeError: Failed validating workflow
OrderAgent``, with the restriction as its cause and the import that led there
only in the traceback. ``explain`` turns that into one sentence: which module
imports what, which restricted name it reaches, and what passes it through --
the framework's plugin when one does, else the sandbox's own pass-through. The
worker builder raises it (``in_process_worker``), so the CLI's one line and the
last line of a server's traceback both carry it.

The import chain is read from the traceback's module frames (a module's body
runs as a ``<module>`` code object with its ``__name__``): plain Python, no
temporalio internals; a chain that cannot be read still names the restriction.
"""

from __future__ import annotations

from collections.abc import Iterator

from temporalio.worker.workflow_sandbox import RestrictedWorkflowAccessError

#: The frameworks whose Temporal plugin passes their modules through, by top-level
#: package (as each plugin lists them: temporalio-langgraph 0.1, temporalio-openai-agents
#: 1.1, pydantic-ai 2.68), and how to add it.
_PLUGINS: dict[str, str] = {
    **dict.fromkeys(
        ("langgraph", "langchain", "langchain_core", "langsmith"),
        "LangGraphPlugin (from temporalio.langgraph import LangGraphPlugin; "
        "pip install 'fastmcp-temporal[langgraph]')",
    ),
    **dict.fromkeys(
        ("agents", "openai"),
        "OpenAIAgentsPlugin (from temporalio.openai_agents import OpenAIAgentsPlugin; "
        "pip install 'fastmcp-temporal[openai-agents]')",
    ),
    **dict.fromkeys(
        ("pydantic_ai", "pydantic_graph", "logfire"),
        "PydanticAIPlugin (from pydantic_ai.durable_exec.temporal import PydanticAIPlugin; "
        "pip install 'fastmcp-temporal[agents]')",
    ),
}


class WorkflowSandboxError(RuntimeError):
    """A workflow's module does not load in the sandbox; the message says why and what to do."""


def explain(err: BaseException) -> WorkflowSandboxError | None:
    """``err`` (a worker that would not start) as one sentence, if the sandbox refused an import."""
    restricted = next(
        (e for e in causes(err) if isinstance(e, RestrictedWorkflowAccessError)), None
    )
    if restricted is None:
        return None
    name = _readable(restricted.qualified_name)
    modules = _modules(restricted)
    outer = " ".join(str(err).split()) if err is not restricted else "A workflow did not load"
    imported = _foreign(modules) if modules else None
    if imported is None:
        # The workflow's own module (or an unreadable chain): nothing to pass through.
        own = modules[0] if modules else "its module"
        where = f" (in {modules[-1]})" if modules and modules[-1] != own else ""
        return WorkflowSandboxError(
            f"{outer}: {own} uses {name}{where} while it is imported, which Temporal's "
            "workflow sandbox restricts: do it in an activity, or at run time through "
            "workflow.* (workflow.now(), workflow.random())"
        )
    top = imported.split(".")[0]
    through = f" (in {modules[-1]})" if modules[-1] != imported else ""
    plugin = _PLUGINS.get(top)
    remedy = (
        f"{plugin} passes {top} through: add it to TemporalTasks(plugins=[...]); or pass"
        if plugin is not None
        else "Pass"
    )
    return WorkflowSandboxError(
        f"{outer}: {modules[0]} imports {imported}, which reaches {name}{through}, restricted "
        f"in Temporal's workflow sandbox. {remedy} {top} through yourself: import it under "
        "`with workflow.unsafe.imports_passed_through():`, or TemporalTasks(worker_options="
        '{"workflow_runner": SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default'
        f".with_passthrough_modules({top!r}))}})"
    )


def causes(err: BaseException) -> Iterator[BaseException]:
    """``err`` and each cause under it, outermost first: ``__cause__``, else the context it
    was raised in (not one its author suppressed, ``from None``); a group by its first leaf."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        while isinstance(current, BaseExceptionGroup) and current.exceptions:
            current = current.exceptions[0]
        seen.add(id(current))
        yield current
        if current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None


def _modules(err: BaseException) -> list[str]:
    """The modules whose import led to ``err``, outermost first (the workflow's own first)."""
    modules: list[str] = []
    frame_link = err.__traceback__
    while frame_link is not None:
        frame = frame_link.tb_frame
        name = frame.f_globals.get("__name__")
        module_body = frame.f_code.co_name == "<module>" and isinstance(name, str)
        if module_body and name != "__main__" and (not modules or modules[-1] != name):
            modules.append(name)
        frame_link = frame_link.tb_next
    return modules


def _foreign(modules: list[str]) -> str | None:
    """The first module of another top-level package than the workflow's own."""
    own = modules[0].split(".")[0]
    return next((m for m in modules[1:] if m.split(".")[0] != own), None)


def _readable(qualified_name: str) -> str:
    """``http.client.IncompleteRead`` for ``http.client.IncompleteRead.__mro_entries__``
    (subclassing it): the special method is how, not what."""
    head, _, last = qualified_name.rpartition(".")
    return head if head and last.startswith("__") and last.endswith("__") else qualified_name

"""temporalio's private names: reading a ``@workflow.defn`` class's name and ``run`` method.

A workflow tool is declared from its workflow class, and temporalio has no
public reader of a workflow definition; with why, when to delete it and the
clear error when it is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow


def workflow_run_signature(workflow_class: type) -> tuple[str | None, Callable[..., Any]]:
    """A ``@workflow.defn`` class's registered name (``None``: dynamic) and ``run`` method.

    Why: temporalio has no public reader of a workflow definition; its own
    worker uses ``workflow._Definition.must_from_class``. Delete when it has one.
    Without it a workflow tool cannot be declared: a clear error names why.
    """
    reader = getattr(workflow, "_Definition", None)
    if reader is None:
        raise RuntimeError(
            "fastmcp-temporal: this temporalio has no workflow._Definition: workflow tools "
            "cannot be declared with it (pyproject.toml bounds the releases tested)"
        )
    definition = reader.must_from_class(workflow_class)
    return definition.name, definition.run_fn

"""Durable synchronous calls as they waited before a change, for "before" rows (``compare.py``).

Each is a context manager that patches ``server.protocol.sync_calls`` (or
temporalio) back to what a change replaced, around one row's measurements. They
reach into internals on purpose: when those change, ``./dev bench-smoke`` fails
here first, and the row goes or follows.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any
from unittest import mock

from fastmcp_temporal.server.protocol import sync_calls


async def _not_ended_here(*_: Any) -> None:
    return None


def full_wait() -> AbstractContextManager[Any]:
    """Before: the wait reads the history's first page, then long-polls for each batch of events.

    As every durable synchronous call waited before ``sync_calls._ended_here``, which reads
    only the close event of a task run in this process.
    """
    return mock.patch.object(sync_calls, "_ended_here", _not_ended_here)


def wait_without_run_id() -> AbstractContextManager[Any]:
    """Before: the wait's long poll named the workflow only, so the server looked up its run."""
    fresh = sync_calls.ended

    async def ended(engine: Any, task_id: str, scope: Any, *, run_id: Any = None) -> Any:
        return await fresh(engine, task_id, scope)

    return mock.patch.object(sync_calls, "ended", ended)


def no_patch_markers() -> AbstractContextManager[Any]:
    """Bench only, an upper bound: every ``workflow.patched`` is True with no marker written."""
    from temporalio import workflow as temporal_workflow

    return mock.patch.object(temporal_workflow, "patched", lambda _id: True)

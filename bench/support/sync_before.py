"""Durable synchronous calls as they ran before a change, for "before" rows (``compare.py``).

Each is a context manager that patches the package back to what a change replaced,
around one row's measurements (or one server's start). They reach into internals on
purpose: when those change, ``./dev bench-smoke`` fails here first, and the row goes
or follows.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any
from unittest import mock

from fastmcp_temporal.server.embedded import devserver
from fastmcp_temporal.server.tasks import engine


def patch_level_zero() -> AbstractContextManager[Any]:
    """Before: new tasks at patch level 0, asking ``workflow.patched`` at every patch
    (a marker and a ``TemporalChangeVersion`` upsert each: two of a default tool's task,
    three of a short tool's), as before ``workflows/patches.py``."""
    return mock.patch.object(engine, "PATCH_LEVEL", 0)


def transfer_reader_limited() -> AbstractContextManager[Any]:
    """Before, for a dev server started inside: its transfer-queue reader at Temporal's
    default 20 reads a second (``devserver.DISPATCH_DYNAMIC_CONFIG`` not applied)."""
    return mock.patch.object(devserver, "DISPATCH_DYNAMIC_CONFIG", ())

"""Tools whose body needs the live request: they stay inline for a durable synchronous call.

A body written for inline calls may ask the client imperatively
(``await ctx.elicit(...)``; sampling and roots through
``ctx.session.create_message(...)`` / ``ctx.session.list_roots()``, FastMCP 4.1's
``Context`` having no ``sample()`` or ``list_roots()`` -- a body written for an
older FastMCP that calls them is counted too) or reach for what only an open
request has (``ctx.session``, ``ctx.request_context``).
In a task leg there is no request: ``ctx.elicit()`` ends the task with an
``isError`` result pointing to the guard pattern. Turning durable synchronous
calls on by default must not break such a tool, so a call from a client that
did not opt in runs it inline, exactly as before.

The check reads the tool function's source once (its syntax tree, so comments
and strings do not count): an attribute above read from the function's
``Context`` parameter, from ``get_context()``, or from a name bound to
``get_context()``. What it cannot see -- a helper function that receives the
context, a body without source -- is durable; ``ToolOptions(durable_sync_calls=
False)`` keeps such a tool inline.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from fastmcp.server.context import Context
from fastmcp.tools.base import Tool
from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities.types import find_kwarg_by_type

#: What a body can only use with the live request at hand.
LIVE_ONLY = frozenset({"elicit", "sample", "list_roots", "session", "request_context"})
_GET_CONTEXT = "get_context"


def needs_live_request(component: Tool) -> bool:
    """Whether ``component``'s body visibly uses what only a live request has."""
    if not isinstance(component, FunctionTool):
        return False
    return _uses_live_request(component.fn)


@functools.lru_cache(maxsize=1024)
def _uses_live_request(fn: Callable[..., Any]) -> bool:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False  # no source to read (a C function, a REPL): nothing seen
    names = {name} if (name := find_kwarg_by_type(fn, Context)) else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_get_context(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in LIVE_ONLY:
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id in names) or _is_get_context(owner):
            return True
    return False


def _is_get_context(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    called = node.func
    name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", None)
    return name == _GET_CONTEXT

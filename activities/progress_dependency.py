"""FastMCP's ``Progress()`` dependency, resolved to the running leg's progress, per call.

``Progress`` knows Docket's execution and an in-memory fallback: inside a leg the
latter would swallow every report. FastMCP has no hook for the sink it picks, and
no override of a dependency for one call (it drops arguments named like one), so a
leg runs the tool through a copy of its component whose function declares
``LegProgressDependency`` where the tool declared ``Progress()``:
``routed_progress(component)``. The copy is the leg's alone; the component the
server registered, FastMCP's ``Progress`` class and every other server of the
process are untouched, and a ``Progress()`` resolved anywhere else is FastMCP's own.

What it reaches: a ``FunctionTool``'s parameters whose default (or ``Annotated``
metadata) is a ``Progress``, the form FastMCP documents. A tool of another kind (a
transformed tool, whose forwarding closes over its parent) keeps FastMCP's
in-memory progress there; ``ctx.report_progress`` reaches the leg from any tool.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin

from fastmcp.server.dependencies import Progress
from fastmcp.tools.base import Tool
from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities.async_utils import is_coroutine_function

from fastmcp_temporal.activities.progress import LegProgress, current_leg_progress


class LegBoundProgress(Progress):
    """What a tool's ``Progress`` parameter holds inside a leg: the leg's ``LegProgress``."""

    def __init__(self, sink: LegProgress) -> None:
        self._sink = sink

    @property
    def current(self) -> int | None:
        return self._sink.current

    @property
    def total(self) -> int:
        return self._sink.total

    @property
    def message(self) -> str | None:
        return self._sink.message

    async def set_total(self, total: int) -> None:
        await self._sink.set_total(total)

    async def increment(self, amount: int = 1) -> None:
        await self._sink.increment(amount)

    async def set_message(self, message: str | None) -> None:
        await self._sink.set_message(message)


class LegProgressDependency(Progress):
    """``Progress()``, resolved to the leg running in this asyncio task (else FastMCP's own)."""

    async def __aenter__(self) -> Progress:
        sink = current_leg_progress.get()
        if sink is None:
            return await super().__aenter__()
        return LegBoundProgress(sink)


_LEG_PROGRESS = LegProgressDependency()


def routed_progress(component: Tool) -> Tool:
    """``component`` for one leg: a copy whose ``Progress()`` parameters report to the leg."""
    if not isinstance(component, FunctionTool):
        return component
    try:
        routed = _routed_function(component.fn)
    except TypeError:  # an unhashable callable object: not cached
        routed = _routed_function.__wrapped__(component.fn)
    if routed is component.fn:
        return component
    return component.model_copy(update={"fn": routed})


@functools.lru_cache(maxsize=1024)
def _routed_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its ``Progress`` defaults and ``Annotated`` metadata made ours (``fn``
    itself if it has none), mirrored as FastMCP mirrors a tool function: same signature
    otherwise, resolved annotations, so validation and schemas do not change."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # as FastMCP: unresolvable hints fall back to the signature's own
        hints = {}
    parameters = []
    annotations: dict[str, Any] = {}
    changed = False
    for name, parameter in signature.parameters.items():
        annotation = hints.get(name, parameter.annotation)
        default = parameter.default
        if isinstance(default, Progress) and not isinstance(default, LegProgressDependency):
            default, changed = _LEG_PROGRESS, True
        if get_origin(annotation) is Annotated:
            base, *metadata = get_args(annotation)
            if any(isinstance(item, Progress) for item in metadata):
                swapped = [_LEG_PROGRESS if isinstance(m, Progress) else m for m in metadata]
                annotation, changed = Annotated[(base, *swapped)], True  # type: ignore[valid-type]
        if annotation is not inspect.Parameter.empty:
            annotations[name] = annotation
        parameters.append(parameter.replace(default=default, annotation=annotation))
    if not changed:
        return fn
    returns = hints.get("return", signature.return_annotation)
    if returns is not inspect.Signature.empty:
        annotations["return"] = returns

    if is_coroutine_function(fn):

        async def routed(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **kwargs)

    else:  # sync, or a generator of either kind: FastMCP runs and drains it as it would fn

        def routed(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    routed.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    routed.__annotations__ = annotations
    for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
        if hasattr(fn, attribute):
            setattr(routed, attribute, getattr(fn, attribute))
    return routed

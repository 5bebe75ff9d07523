"""Durable multi-step tools: named steps whose results survive crashes.

```python
from fastmcp_temporal import Steps


@mcp.tool(task=True)
async def report(url: str, ctx: Context) -> str:
    steps = Steps(ctx)
    page = await steps.run("download", download, url)
    summary = await steps.run("summarize", summarize, page)
    return await steps.run("publish", publish, summary)
```

In a task, every step that finishes ends the leg with a checkpoint (a
*state-only round*: an ``InputRequiredResult`` with ``request_state`` and no
input requests). The workflow records it and starts the next leg at once; the
body runs again from the top and finished steps return their recorded results
without running. A worker that crashes in step *k* therefore re-runs only step
*k*. Outside a task the steps simply run one after another.

Step results are kept as JSON (pass ``result_type=`` to get models back) and
travel through the workflow history: keep them small (Temporal rejects payloads
of 2 MB or more; store big data elsewhere and keep a reference). ``Steps`` owns
``ctx.request_state``; do not mix it with a hand-written guard pattern in the
same tool.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from fastmcp import Context
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

T = TypeVar("T")
_STATE_KEY = "fastmcp_temporal.steps"


class StepCheckpoint(BaseException):
    """Ends a leg after a step finished; carries the checkpoint.

    A ``BaseException`` (like ``asyncio.CancelledError``) so that a tool's own
    ``except Exception`` cannot swallow it; the leg activity turns it into a
    state-only round.
    """

    def __init__(self, request_state: str) -> None:
        super().__init__("step checkpoint")
        self.request_state = request_state


class Steps:
    """Named, checkpointed steps of one tool call."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._done: dict[str, Any] = _load(ctx.request_state)

    @property
    def ctx(self) -> Context:
        """The tool call's ``Context`` (helpers built on steps report progress through it)."""
        return self._ctx

    @property
    def finished(self) -> list[str]:
        """Names of the steps that already ran, in order."""
        return list(self._done)

    async def run(
        self,
        name: str,
        fn: Callable[..., Awaitable[T] | T],
        *args: Any,
        result_type: type[T] | None = None,
        **kwargs: Any,
    ) -> T:
        """Run ``fn`` once for this call; later legs get its recorded result."""
        if name in self._done:
            return _typed(self._done[name], result_type)
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        self._done[name] = to_jsonable_python(value)
        if self._ctx.is_background_task:
            raise StepCheckpoint(json.dumps({_STATE_KEY: self._done}))
        return _typed(self._done[name], result_type)


def _load(request_state: str | None) -> dict[str, Any]:
    if not request_state:
        return {}
    try:
        state = json.loads(request_state)
    except ValueError:
        return {}
    done = state.get(_STATE_KEY) if isinstance(state, dict) else None
    return dict(done) if isinstance(done, dict) else {}


def _typed(value: Any, result_type: type[T] | None) -> T:
    if result_type is None:
        return cast(T, value)
    return TypeAdapter(result_type).validate_python(value)

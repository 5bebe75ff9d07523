"""Before a host's hard limit fires, answer: the work goes on, and calling again gets its result.

Some hosts end every tool call at a fixed time, whatever the server says meanwhile
(``host_limits``: Cline and Continue at 60 s, Gemini CLI and Qwen Code at 600 s by
default). A durable tool longer than that could never answer them: the host cancels,
reports "Request timed out", and the model is left guessing. So a plain call from
such a host (its ``clientInfo``; the server setting ``host_limits`` adds or changes
limits) is answered a little before the limit (``host_limits.answer_within_s``) with
a result that says, in words a model follows, that the work goes on and that calling
the tool again with exactly the same arguments returns its result. The task is then
*undelivered* (``reattach``): the next identical call attaches to it and waits again,
or answers at once once it has finished. A two-minute tool thus finishes for a Cline
user in three calls, with one body run.

The answer is a ``CallToolResult`` with ``isError: true``:

- a tool with an output schema (FastMCP gives most tools one) must return
  structured content matching it in any non-error result, and the TypeScript SDK's
  client -- Cline's, Continue's, Gemini CLI's -- rejects a non-error result without
  it: "still running" matches no tool's schema;
- models treat a tool error as "this did not give you the answer yet" and read its
  text for what to do next, where a successful result is taken as the answer and
  summarized to the user ("the tool says it is still running").

Its ``_meta`` carries ``io.github.fastmcp-temporal/stillRunning``: the task id, its
status, and the seconds the call waited, for a program that reads it.

Only a call that can be found again answers early: one whose tool attaches repeats,
from a caller with an identity, or one with an idempotency key. Any other call waits
as before, and the host's limit decides.
"""

from __future__ import annotations

from collections.abc import Mapping

import mcp_types
from fastmcp.server.context import Context
from fastmcp.tools.base import ToolResult

from fastmcp_temporal.server.protocol.host_limits import answer_within_s, client_name, hard_limit_s
from fastmcp_temporal.server.protocol.reattach import Delivery

STILL_RUNNING_META = "io.github.fastmcp-temporal/stillRunning"


def answer_in_s(
    context: Context, delivery: Delivery, host_limits: Mapping[str, float]
) -> float | None:
    """Seconds after the call began to answer it early; ``None``: wait to the end."""
    if not delivery.findable:
        return None
    limit = hard_limit_s(client_name(context), host_limits)
    return answer_within_s(limit) if limit is not None else None


def still_running(
    tool_name: str,
    task_id: str,
    waited_s: float,
    *,
    keyed: bool,
    status_message: str | None = None,
) -> ToolResult:
    """The early answer (module docstring)."""
    doing = f" Its last status: {status_message}." if status_message else ""
    again = (
        "the same arguments and the same Idempotency-Key" if keyed else "exactly the same arguments"
    )
    text = (
        f"The tool {tool_name!r} is still working (task {task_id}, {waited_s:.0f} s so far)."
        f"{doing} "
        "This app stops waiting for a tool call soon, so the server answers now; the work "
        f"goes on. To get its result, call {tool_name!r} again with {again}: it waits for "
        "the work to finish, or returns the result at once if it already has. Do not "
        "change the arguments, or the work starts over."
    )
    result = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        is_error=True,
        _meta={  # type: ignore[call-arg]
            STILL_RUNNING_META: {
                "taskId": task_id,
                "status": "working",
                "waitedS": round(waited_s, 1),
            }
        },
    )
    return ToolResult.from_mcp_result(result)

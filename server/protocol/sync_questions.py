"""A durable synchronous call's questions on 2025-11-25: live requests on the open call.

The handshake-era wire has no MRTR result, but it has what an inline
``ctx.elicit()`` uses: server-to-client requests over the request that is open.
So when the task a 2025-11-25 call waits for asks, and the client declared what
the question needs (``elicitation``, ``sampling``, ``roots``), each of its input
requests goes to the client as that request (``elicitation/create``,
``sampling/createMessage``, ``roots/list``), and the answers are delivered to the
task exactly as ``tasks/update`` would deliver them; the call then waits again.
One workflow serves the whole exchange, each leg runs once.

Behind a load balancer the answer may reach another front end of the deployment.
Each question goes out under an id of its own (``live_calls``): bound to its
task, input key and round, to the session and the caller, and sealed under the
deployment's key. The front end that asked hands an answer to it to the SDK, as
always; any other one delivers it to the task (``deliver_answer``: the
``tasks/update`` signal; an error answer cancels the task, as a client that
refuses does on the front end that asked). The call that asked sees its task
leave that round (it watches the task's history while it asks) and waits again.
An answer that is stale (its round is over), foreign (another session, caller or
deployment) or altered changes nothing and is logged.

A body that asks inline (``await ctx.elicit()`` in a plain tool, or in a task
tool's body, which then runs inline: ``live_request``) asks through the SDK alone:
its answer must reach the front end that asked (``docs/guides/deploying.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import mcp_types
from fastmcp.server.context import Context
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import INTERNAL_ERROR
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, TypeAdapter
from starlette.responses import JSONResponse, Response
from temporalio.service import RPCError

from fastmcp_temporal.activities.input_capabilities import undeclared
from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.core.wire import GetTaskResult
from fastmcp_temporal.server.protocol.creation import declared_capabilities
from fastmcp_temporal.server.protocol.live_calls import LiveCalls, QuestionRef, question_round
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.tasks.task_watch import watch
from fastmcp_temporal.timing import TICK_S

logger = logging.getLogger(__name__)

_INPUT_REQUEST = TypeAdapter(mcp_types.InputRequest)
_RESULT_FOR_METHOD: dict[str, type[BaseModel]] = {
    "elicitation/create": mcp_types.ElicitResult,
    "sampling/createMessage": mcp_types.CreateMessageResult,
    "roots/list": mcp_types.ListRootsResult,
}


def can_ask_live(context: Context, input_requests: Mapping[str, Any]) -> bool:
    """A handshake-era call whose client declared everything these questions need."""
    request_context = context.request_context
    if request_context is None or request_context.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return False
    if any(
        str(request.get("method")) not in _RESULT_FOR_METHOD for request in input_requests.values()
    ):
        return False
    return not undeclared(dict(input_requests), declared_capabilities(context))


async def ask_live(
    context: Context,
    engine: TaskEngine,
    view: GetTaskResult,
    scope: str | None,
    calls: LiveCalls | None,
) -> dict[str, Any] | None:
    """Send each of ``view``'s questions to the client on the open request; its answers,
    by key -- or ``None`` once the task has left this round without them here (answered
    through another front end, or cancelled)."""
    asking = asyncio.ensure_future(_ask_each(context, view, calls))
    leaving = asyncio.ensure_future(_left_round(engine, view, scope))
    try:
        await asyncio.wait({asking, leaving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (asking, leaving):
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pending
    if leaving.done() and not leaving.cancelled() and (failed := leaving.exception()):
        raise failed  # not Temporal being away (it waits that out): a bug, said as one
    return asking.result() if asking.done() and not asking.cancelled() else None


async def _ask_each(
    context: Context, view: GetTaskResult, calls: LiveCalls | None
) -> dict[str, Any]:
    related = ServerMessageMetadata(related_request_id=context.request_id)
    session_id, request_id = context.session_id, str(context.request_id)
    answers: dict[str, Any] = {}
    for key, raw in (view.input_requests or {}).items():
        request = _INPUT_REQUEST.validate_python(raw)
        ref = QuestionRef(view.task_id, key, question_round(view, key))
        with calls.asking(session_id, request_id, ref) if calls else contextlib.nullcontext():
            result = await context.session.send_request(
                request,  # type: ignore[arg-type]
                _RESULT_FOR_METHOD[request.method],
                metadata=related,
            )
        answers[key] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return answers


async def _left_round(engine: TaskEngine, view: GetTaskResult, scope: str | None) -> None:
    """Returns once the task has left the round ``view`` asks in: it no longer asks, or
    asks something else (its history, long-polled)."""
    asked = _rounds(view)
    while True:
        try:
            changes = watch(engine, view.task_id, scope, seen=view)
            async with contextlib.aclosing(changes) as views:
                async for latest in views:
                    if latest.status != "input_required" or _rounds(latest) != asked:
                        return
            return  # it ended
        except (RPCError, MCPError, PayloadDecryptionError) as err:
            logger.debug("Watching task %s while it asks failed: %s", view.task_id, err)
            await asyncio.sleep(TICK_S)


def _rounds(view: GetTaskResult) -> dict[str, str]:
    return {key: question_round(view, key) for key in view.input_requests or {}}


async def deliver_answer(
    engine: TaskEngine,
    calls: LiveCalls,
    message: dict[str, Any],
    session_id: str,
    scope: str | None,
) -> Response:
    """An answer to a question another front end asked, delivered to its task; ``202``.

    Refused answers change nothing (and are still ``202``: nothing awaits them);
    an answer the task refuses as malformed is the client's ``-32602``.
    """
    ref = calls.open_answer_id(message["id"], session_id, scope)
    if ref is None:
        logger.warning(
            "fastmcp-temporal: dropped an answer to %s: not a question of this session and "
            "caller (altered, or another's)",
            str(message["id"])[:48],
        )
        return Response(status_code=202)
    try:
        try:
            view: GetTaskResult | None = await engine.get(ref.task_id, scope)
        except MCPError:  # expired since
            view = None
        asked = view is not None and view.status == "input_required"
        if view is None or not asked or question_round(view, ref.key) != ref.round:
            logger.info(
                "fastmcp-temporal: dropped a stale answer to %r of task %s (its round is over)",
                ref.key,
                ref.task_id,
            )
            return Response(status_code=202)
        if "error" in message:
            # The client refused or failed: no parked task is left, as where it was asked.
            logger.info("fastmcp-temporal: the client refused %r of task %s", ref.key, ref.task_id)
            await engine.cancel(ref.task_id, scope)
        else:
            await engine.update(ref.task_id, scope, {ref.key: message["result"]})
    except MCPError as err:
        return _error(400, err.error.code, err.error.message)
    except RPCError as err:
        logger.warning(
            "fastmcp-temporal: an answer to task %s did not reach Temporal: %s", ref.task_id, err
        )
        return _error(503, INTERNAL_ERROR, "Temporal is unavailable: send the answer again")
    return Response(status_code=202)


def _error(status: int, code: int, message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status)

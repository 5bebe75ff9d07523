"""The one activity: run one leg of a task's tool body.

The activity is *dynamic*: the workflow schedules it under the tool's name, so
the Temporal UI shows ``crunch`` rather than a generic ``run_tool``, and that
name is in every recorded history. One worker hosts every task tool of its
FastMCP server. Being the worker's catch-all, it also receives every activity
type the worker has no function for -- a workflow tool's own activity left out
of ``workflow_tool(..., activities=[...])``, say. Only a task workflow schedules
legs, so an activity of any other workflow is refused at once, as Temporal
refuses a type nobody registered (``NotFoundError``, naming the type and the
task queue; retryable, so a deploy that registers it finishes the work), never
read as a leg's input.

A leg runs the tool exactly as FastMCP's synchronous ``tools/call`` would --
the registered component with its calling convention, argument validation and
dependency injection -- but inside a ``TaskContext`` and with the creating
caller restored (access token, headers, session id). The outcome is a
``LegOutcome``; tool errors are *returned* (as ``isError`` results, masked per
the server's policy), never raised, so Temporal never retries a tool body that
failed on its own. Only infrastructure faults raise, and a worker that dies
mid-leg is detected by heartbeat timeout and the leg runs again elsewhere; a
worker that drains hands its running legs back at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, NotFoundError
from fastmcp.server.auth import AccessToken
from fastmcp.server.providers.fastmcp_provider import FastMCPProviderTool
from fastmcp.tools.base import InputRequiredToolResult, Tool, ToolResult
from fastmcp.utilities.exceptions import get_http_status_code, is_timeout_error
from fastmcp.utilities.types import get_cached_typeadapter
from fastmcp.utilities.versions import VersionSpec
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError
from temporalio import activity
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.input_capabilities import missing_capability_error, undeclared
from fastmcp_temporal.activities.leg_news import LegBegan, LegEnded, LegNews
from fastmcp_temporal.activities.progress import (
    LegProgress,
    ProgressSignals,
    current_leg_progress,
)
from fastmcp_temporal.activities.progress_dependency import routed_progress
from fastmcp_temporal.activities.steps import StepCheckpoint
from fastmcp_temporal.activities.stored_result import stored_if_big
from fastmcp_temporal.activities.task_context import TaskContext
from fastmcp_temporal.timing import TICK_S
from fastmcp_temporal.workflows.models import (
    DEFAULT_MAX_PAYLOAD_BYTES,
    UNDECRYPTABLE_ERROR_TYPE,
    WORKFLOW_TYPE,
    WORKFLOW_TYPE_PREFIX,
    BodyOutcome,
    CallerSnapshot,
    LegOutcome,
    LegRequest,
)

logger = logging.getLogger(__name__)

_WIRE_VERSION = MODERN_PROTOCOL_VERSIONS[-1]
_INPUT_RESPONSE = TypeAdapter(mcp_types.InputResponse)
_DEPENDENCY_FAILURE = "Failed to resolve dependency"
#: ``type`` of the failure a draining worker hands a running leg back with.
HANDED_BACK_ERROR_TYPE = "McpLegHandedBack"
#: ``type`` of the failure of an activity nobody registered (the SDK's own, for a worker without
#: a catch-all activity).
NOT_REGISTERED_ERROR_TYPE = "NotFoundError"
#: How soon a handed-back leg runs again (a zero delay is not sent: the SDK reads it as unset).
HAND_BACK_DELAY = timedelta(milliseconds=100)
#: Turns a leg's stored caller into one with its credentials in clear fields.
CallerOpener = Callable[[CallerSnapshot], Awaitable[CallerSnapshot]]


async def _unsealed_only(caller: CallerSnapshot) -> CallerSnapshot:
    """A worker that was given no opener: a sealed caller is for another worker."""
    if caller.sealed_credentials is not None:
        raise ApplicationError(
            "Cannot open the caller's sealed credentials: this worker has no credentials key",
            type=UNDECRYPTABLE_ERROR_TYPE,
        )
    return caller


class ToolLegActivity:
    """Runs task legs against one FastMCP server (the activity's owner)."""

    def __init__(
        self,
        server: FastMCP,
        *,
        heartbeat_interval_s: float = TICK_S,
        max_result_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        open_caller: CallerOpener | None = None,
        news: LegNews | None = None,
    ) -> None:
        """``open_caller``: gives a caller sealed by the front end its token and headers
        back (``server.core.credentials``); without one, a sealed caller's leg is
        handed back for a worker that has it. ``news``: where a leg tells the calls
        waiting on its task in this process what it does (a front end's own worker)."""
        self._server = server
        self._news = news
        self._heartbeat_interval_s = heartbeat_interval_s
        self._max_result_bytes = max_result_bytes
        self._open_caller = open_caller or _unsealed_only

    @activity.defn(dynamic=True)
    async def run_leg(self, args: Sequence[RawValue]) -> LegOutcome:
        info = activity.info()
        if not is_task_workflow(info.workflow_type):
            raise not_registered(info)
        request = activity.payload_converter().from_payload(args[0].payload, LegRequest)
        signals = (
            ProgressSignals(leg=f"{request.round}.{info.attempt}")
            if info.is_local and request.progress_signals
            else None
        )
        tell = functools.partial(self._news.tell, info.workflow_id) if self._news else None
        progress = LegProgress(heartbeats=not info.is_local, signals=signals, tell=tell)
        if tell is not None:
            tell(LegBegan())
        heartbeats = asyncio.create_task(progress.heartbeat_forever(self._heartbeat_interval_s))
        asking = False
        try:
            outcome = await self._run(request, progress)
            asking = outcome.kind == "input_required" and bool(outcome.input_requests)
            if signals is not None and (acknowledged := await signals.close()):
                outcome = outcome.model_copy(
                    update={"progress_leg": signals.leg, "progress_signals": acknowledged}
                )
            if outcome.kind == "result" and (final := progress.last_report()) is not None:
                outcome = outcome.model_copy(update={"final_progress": final})
            return outcome
        except asyncio.CancelledError:
            details = activity.cancellation_details()
            if details is not None and details.worker_shutdown:
                # Drained: fail this attempt retryably with almost no delay, so
                # the next worker takes the leg now, not after the retry
                # backoff, which grows with every attempt.
                raise ApplicationError(
                    "Worker is shutting down: the leg was handed back to run on another worker",
                    type=HANDED_BACK_ERROR_TYPE,
                    next_retry_delay=HAND_BACK_DELAY,
                ) from None
            raise
        finally:
            heartbeats.cancel()
            if signals is not None:
                signals.abandon()
            if tell is not None:
                tell(LegEnded(asking=asking))

    async def _run(self, request: LegRequest, progress: LegProgress) -> LegOutcome:
        component, owner, local_name = await self._resolve(request)
        if request.body_outcome is not None:
            return await self._finished(
                request, _body_result(component, owner, local_name, request.body_outcome)
            )
        _restore_caller(await self._open_caller(request.caller))
        current_leg_progress.set(progress)
        ctx = TaskContext(
            owner,
            task_id=request.task_id,
            caller=request.caller,
            progress=progress,
            input_responses=_typed_responses(request.input_responses),
            request_state=request.request_state,
            level_server=self._server,
        )
        async with ctx:
            try:
                result = await routed_progress(component).run(dict(request.arguments))
            except StepCheckpoint as checkpoint:
                return LegOutcome(kind="input_required", request_state=checkpoint.request_state)
            except MCPError as err:
                return _error_outcome(err.error.code, err.error.message, err.error.data)
            except FastMCPError as err:
                return _result_outcome(_error_result(str(err)))
            except PydanticValidationError:
                logger.exception("Tool %r raised a pydantic error", local_name)
                return _error_outcome(mcp_types.INTERNAL_ERROR, "Internal error")
            except Exception as err:
                if isinstance(err, RuntimeError) and str(err).startswith(_DEPENDENCY_FAILURE):
                    # The task could not be set up to run at all: a protocol fault.
                    logger.error("Task %s: %s", request.task_id, err)
                    return _error_outcome(mcp_types.INTERNAL_ERROR, str(err))
                return _result_outcome(_error_result(_masked_message(owner, local_name, err)))
        outcome = _outcome_from(result)
        caller = request.caller
        if caller.undeclared_input == "fail" and (
            missing := undeclared(outcome.input_requests or {}, caller.client_capabilities)
        ):
            return LegOutcome(kind="error", error=missing_capability_error(local_name, missing))
        return await self._finished(request, outcome)

    async def _finished(self, request: LegRequest, outcome: LegOutcome) -> LegOutcome:
        """The outcome to hand back: within the size limit, a big result stored once."""
        outcome = self._within_payload_limit(outcome)
        if request.store_big_result:
            return await stored_if_big(outcome)
        return outcome

    def _within_payload_limit(self, outcome: LegOutcome) -> LegOutcome:
        """Fail a too-large outcome now, once, instead of leg retries that cannot succeed."""
        size = activity.payload_converter().to_payloads([outcome])[0].ByteSize()
        if size <= self._max_result_bytes:
            return outcome
        return _error_outcome(
            mcp_types.INTERNAL_ERROR,
            f"The tool's result is too large for a durable task ({size} bytes; this server's "
            f"limit is {self._max_result_bytes} bytes). Return a reference to the data instead.",
        )

    async def _resolve(self, request: LegRequest) -> tuple[Tool, FastMCP, str]:
        """Find the tool version the client called: runnable component, owner, local name.

        A mounted tool resolves to a provider wrapper whose ``run`` would go back
        through the child server's full ``call_tool`` (and its own, non-task
        ``Context``); the component ``get_tasks()`` registers under the same key
        is the one to run, inside a context bound to the server that defines it.
        The synchronous call's error text is written by that server's
        ``call_tool`` (innermost mount), with its masking policy and its own name
        for the tool, so both are returned for ``_masked_message``.
        """
        server = self._server
        version = VersionSpec(eq=request.tool_version) if request.tool_version else None
        try:
            tool = await server.get_tool(request.tool_name, version)
        except NotFoundError:
            tool = None
        if tool is None:
            raise ApplicationError(
                f"Tool {request.tool_name!r} is not served by this worker",
                type="UnknownTool",
                non_retryable=False,
            )
        component = await registered_component(server, tool)
        owner, local_name = server, tool.name
        probe: Tool | None = tool
        while probe is not None and (origin := _compat.mounted_origin(probe)) is not None:
            owner, local_name = origin
            try:
                probe = await owner.get_tool(local_name, version)
            except NotFoundError:
                break
        return component, owner, local_name


def is_task_workflow(workflow_type: str) -> bool:
    """Whether a workflow of this type is a task's state machine (the only one that runs legs)."""
    return workflow_type == WORKFLOW_TYPE or workflow_type.startswith(WORKFLOW_TYPE_PREFIX)


def not_registered(info: activity.Info) -> ApplicationError:
    """What Temporal says of an activity type no worker function serves, where it says it."""
    return ApplicationError(
        f"Activity type {info.activity_type!r} is not registered on task queue "
        f"{info.task_queue!r} (scheduled by workflow {info.workflow_type!r}): register its "
        "function on a worker of that queue -- a workflow tool's activities go in "
        "workflow_tool(..., activities=[...])",
        type=NOT_REGISTERED_ERROR_TYPE,
    )


async def registered_component(server: FastMCP, tool: Tool) -> Tool:
    """The component ``get_tasks()`` registers for ``tool`` (unwraps mounted tools)."""
    if not isinstance(tool, FastMCPProviderTool):
        return tool
    for component in await server.get_tasks():
        if isinstance(component, Tool) and component.key == tool.key:
            return component
    return tool


def _body_result(component: Tool, owner: FastMCP, name: str, body: BodyOutcome) -> LegOutcome:
    """A workflow tool's return value (or failure) as its ``CallToolResult``.

    The value is converted exactly as a function tool's return value would be
    (its declared return type, output schema, content conversion); a failed
    workflow is an ``isError`` result, masked per the server's policy.
    """
    if body.error is not None:
        message = f"Error calling tool {name!r}"
        if not _compat.masks_error_details(owner):
            message += f": {body.error}"
        return _result_outcome(_error_result(message))
    value = body.value
    if component.return_type is not None:
        value = get_cached_typeadapter(component.return_type).validate_python(value)
    return _outcome_from(component.convert_result(value))


def _restore_caller(caller: CallerSnapshot) -> None:
    """Install the creating caller's identity in this leg's (private) context.

    The activity runs in its own asyncio task, so these context variables are
    the leg's alone. A token that expired while the task waited is not
    installed: a live request with it would be rejected, so the leg runs
    unauthenticated.
    """
    user: AuthenticatedUser | None = None
    if caller.access_token_json is not None:
        token = AccessToken.model_validate_json(caller.access_token_json)
        if token.expires_at is None or token.expires_at >= int(time.time()):
            user = AuthenticatedUser(token)
    _compat.restore_request_identity(user, caller.http_headers, caller.session_id)


def _typed_responses(raw: dict[str, Any] | None) -> mcp_types.InputResponses | None:
    if raw is None:
        return None
    return {key: _INPUT_RESPONSE.validate_python(value) for key, value in raw.items()}


def _masked_message(owner: FastMCP, tool_name: str, err: Exception) -> str:
    """The text the synchronous ``tools/call`` would show for an unexpected error."""
    logger.error("Error calling tool %r in a task", tool_name, exc_info=True)
    if get_http_status_code(err) == 429:
        return "Rate limited by upstream API, please retry later"
    if is_timeout_error(err):
        return "Upstream request timed out, please retry"
    if _compat.masks_error_details(owner):
        return f"Error calling tool {tool_name!r}"
    return f"Error calling tool {tool_name!r}: {err}"


def _error_result(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], is_error=True
    )


def _outcome_from(result: ToolResult) -> LegOutcome:
    if isinstance(result, InputRequiredToolResult):
        ask = result.input_required
        return LegOutcome(
            kind="input_required",
            input_requests={
                key: request.model_dump(by_alias=True, mode="json", exclude_none=True)
                for key, request in (ask.input_requests or {}).items()
            },
            request_state=ask.request_state,
        )
    raw = result.to_mcp_result()
    if isinstance(raw, mcp_types.CallToolResult):
        call_result = raw
    elif isinstance(raw, tuple):
        call_result = mcp_types.CallToolResult(content=raw[0], structured_content=raw[1])
    else:
        call_result = mcp_types.CallToolResult(content=raw)
    return _result_outcome(call_result)


def _result_outcome(result: mcp_types.CallToolResult) -> LegOutcome:
    """Dump the result exactly as the modern ``tools/call`` wire would."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return LegOutcome(
        kind="result", result=serialize_server_result("tools/call", _WIRE_VERSION, dumped)
    )


def _error_outcome(code: int, message: str, data: Any = None) -> LegOutcome:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return LegOutcome(kind="error", error=error)

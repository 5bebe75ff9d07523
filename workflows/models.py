"""The data that crosses the workflow boundary.

Everything the FastMCP front end hands to Temporal, and everything a task's
workflow hands back, is one of these models. They are plain pydantic models of
JSON values (no FastMCP or MCP SDK types), so the workflow sandbox never imports
the MCP stack and every payload is readable in the Temporal UI.

The lifecycle they describe (SEP-2663):

    working -> input_required -> working -> completed | failed | cancelled

A task runs its tool body in *legs*: one activity per leg. A leg ends with a
result, a protocol error, or an ask for client input (the guard pattern: the
tool returns an ``InputRequiredResult``). Answers arrive as signals and start
the next leg.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field
from temporalio.common import SearchAttributeKey

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: How a task treats input its creating client did not declare (``CallerSnapshot``).
UndeclaredInput = Literal["park", "fail"]

#: Name of the workflow type, the signal and the query. Stable strings: they are
#: recorded in the history of every task, so renaming them breaks running tasks.
WORKFLOW_TYPE = "McpTask"
#: New tasks start as ``McpTask:<tool>`` (one dynamic workflow serves them all),
#: so the Web UI's list shows the tool; ``McpTask`` stays registered for tasks
#: started before.
WORKFLOW_TYPE_PREFIX = f"{WORKFLOW_TYPE}:"
INPUT_SIGNAL = "mcp_input"
VIEW_QUERY = "mcp_task"
#: ``type`` of the failure raised when a payload cannot be decrypted
#: (``fastmcp_temporal.server.core.codec``): the task fails closed with its message.
UNDECRYPTABLE_ERROR_TYPE = "McpPayloadUndecryptable"
#: The largest argument, answer or result one task may carry (external storage
#: holds it; ``fastmcp_temporal.server.payloads.payload_store``).
DEFAULT_MAX_PAYLOAD_BYTES = 100 * 1024 * 1024

#: Custom search attributes (Keyword), so operators can filter tasks in the Web
#: UI and ``fastmcp-temporal tasks list``. Temporal stores them in clear, even
#: with encryption on: the tool name and the status, nothing else, ever.
TOOL_NAME_ATTRIBUTE = SearchAttributeKey.for_keyword("McpToolName")
TASK_STATUS_ATTRIBUTE = SearchAttributeKey.for_keyword("McpTaskStatus")
SEARCH_ATTRIBUTES = (TOOL_NAME_ATTRIBUTE, TASK_STATUS_ATTRIBUTE)


#: Workflow tools: the task workflow runs the tool's own workflow as a child,
#: which asks for input by signalling its task. (Progress was a signal too; the
#: task still takes it from children started before it moved to the memo.)
BODY_ASK_SIGNAL = "mcp_body_ask"
BODY_PROGRESS_SIGNAL = "mcp_body_progress"
BODY_ANSWER_SIGNAL = "mcp_body_answer"
CALLER_MEMO = "mcp_caller"
#: A workflow tool's latest progress (a ``BodyProgress``), in its own memo:
#: ``tasks/get`` reads it with ``describe``, so progress never reaches the
#: task workflow's history (once a signal per report, which capped a tool at
#: ~10k reports). Beside its fields: ``reported_at``, and (since the lines) ``seq``,
#: how many reports the run made, and ``lines``, ``[seq, message]`` of the last few
#: (``tool_helpers._ProgressBoard``), for a waiting call that missed some.
BODY_PROGRESS_MEMO = "mcp_progress"
#: A *local* leg's progress (a ``LocalLegProgress``): a local leg runs inside a
#: workflow task and has no heartbeat, so it signals its own workflow, which
#: puts the message in its memo (``LOCAL_LEG_PROGRESS`` in ``task_workflow``).
LOCAL_LEG_PROGRESS_SIGNAL = "mcp_leg_progress"
#: The input capabilities (elicitation, sampling, roots) the creating client
#: declared, set with the start (no workflow writes it): ``tasks/get`` names the
#: missing one in a parked task's ``statusMessage`` (``activities.input_capabilities``).
INPUT_CAPABILITIES_MEMO = "mcp_input_capabilities"


class Caller(BaseModel):
    """Who created a task, as a workflow tool sees it (``tool_helpers.caller()``)."""

    task_id: str
    scope: str | None = None
    client_id: str | None = None
    subject: str | None = None
    scopes: list[str] = Field(default_factory=list)


class WorkflowBody(BaseModel):
    """A workflow tool's body: which workflow to run as the task's child, with what."""

    workflow: str
    args: list[Any] = Field(default_factory=list)
    task_queue: str | None = None


class BodyAsk(BaseModel):
    """A workflow tool asks the client for input (child → task signal)."""

    ask_id: str
    key: str
    request: dict[str, Any]


class BodyProgress(BaseModel):
    """A workflow tool reports progress (child → task signal)."""

    message: str
    progress: float | None = None
    total: float | None = None


class LocalLegProgress(BaseModel):
    """A local leg's latest progress (leg → its own workflow, one signal).

    ``leg`` names the attempt (``<round>.<attempt>``) and ``seq`` numbers its
    signals from 1, so the workflow can wait for every signal an attempt says
    it sent before it ends the task (see ``LegOutcome.progress_signals``).
    """

    leg: str
    seq: int
    message: str | None = None
    progress: float | None = None
    total: float | None = None


class BodyOutcome(BaseModel):
    """How a workflow tool's workflow ended, for the leg that turns it into a result."""

    value: Any = None
    error: str | None = None


class CallerSnapshot(BaseModel):
    """What a leg must know about the caller who created the task.

    Captured once from the creating ``tools/call`` and restored for every leg,
    so the tool body sees the world it would have seen in the foreground.
    """

    #: The token and headers in clear: tasks created before sealing, or with
    #: ``FASTMCP_TEMPORAL_CREDENTIALS_IN_CLEAR`` (else the codec encrypts the
    #: whole payload, or these two are in ``sealed_credentials``).
    access_token_json: str | None = None
    http_headers: dict[str, str] | None = None
    #: Both of the above, sealed (``server.core.credentials``): opaque to the
    #: workflow, which only passes it on to each leg.
    sealed_credentials: str | None = None
    #: The token's OAuth scopes, which are no credential: a workflow tool's
    #: ``caller()`` reads them without the sealed token (``None``: not captured).
    token_scopes: list[str] | None = None
    session_id: str | None = None
    origin_request_id: str | None = None
    log_level_key: str | None = None
    log_level: str | None = None
    client_extensions: list[str] = Field(default_factory=list)
    #: The capabilities the creating request declared (``None``: not captured, for
    #: tasks created before they were); see ``activities.input_capabilities``.
    client_capabilities: dict[str, Any] | None = None
    #: What a leg does when the tool asks for input these capabilities lack:
    #: ``park`` (wait in ``input_required`` for any client of the caller to
    #: answer) or ``fail`` (``-32021`` at once). Chosen by the server when the task
    #: is created (``TemporalTasks(undeclared_input=...)``) and kept for its life;
    #: tasks created before the choice existed failed, and still do.
    undeclared_input: UndeclaredInput = "fail"
    #: The task's scope (FastMCP's principal of the token), ``None`` when anonymous.
    scope: str | None = None


class LegPolicy(BaseModel):
    """Timeouts and retries for one leg (one activity).

    A tool's own error never reaches Temporal's retry policy (it is an
    ``isError`` result or an ``MCPError`` outcome), so every failed attempt is
    infrastructure: a drained or lost worker, a worker that cannot decrypt the
    leg, a worker without the tool. Such a leg runs again, however many times,
    until the task's own deadline (``createdAt + ttlMs``); only that deadline
    fails the task (a local leg: see ``max_attempts``). Between attempts the
    wait doubles from 1 s up to ``max_retry_interval_s``, so a crash-looping
    fleet is not hammered; a leg handed back by a draining worker runs again
    at once.
    """

    heartbeat_timeout_s: float = 10.0
    start_to_close_timeout_s: float = 24 * 3600.0
    #: Attempts of a *local* leg (``local=True``), which only its own timeout
    #: (``local_timeout_s``) consumes: a lost or drained worker never counts
    #: for a leg that runs inside the workflow task. Activity legs retry until
    #: the task's deadline instead. (A workflow run that scheduled its first
    #: leg before this version keeps the old policy, this many attempts for
    #: every leg, until it ends or continues as new.)
    max_attempts: int = 3
    #: The longest wait between two attempts of a leg.
    max_retry_interval_s: float = 30.0
    task_queue: str | None = None
    #: Run legs as local activities (``ToolOptions(local_legs=...)``): no
    #: activity task round trip, for short legs only -- a local leg cannot
    #: heartbeat (its progress is a signal to its workflow; a lost worker is
    #: noticed at the workflow task timeout).
    local: bool = False
    local_timeout_s: float = 30.0


class ResumePoint(BaseModel):
    """Where a continued-as-new run picks up: the next round and what it gets."""

    round: int
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    last_updated_at: datetime


class TaskStart(BaseModel):
    """The workflow's input: one ``tools/call`` that became a task.

    ``input_responses`` / ``request_state`` seed the first leg (a task created
    after a synchronous MRTR exchange); ``resume`` is set only by
    continue-as-new.
    """

    task_id: str
    tool_name: str
    tool_version: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    ttl_ms: int
    poll_interval_ms: int
    caller: CallerSnapshot = Field(default_factory=CallerSnapshot)
    leg_policy: LegPolicy = Field(default_factory=LegPolicy)
    max_rounds: int = 1000
    rounds_per_run: int = 200
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    resume: ResumePoint | None = None
    #: A workflow tool: run this workflow as the task's body instead of legs.
    body: WorkflowBody | None = None
    #: The start carried the search attributes, so the namespace has them and
    #: the workflow may upsert ``McpTaskStatus`` (an unregistered one would fail
    #: its workflow task). False for tasks started before they existed.
    search_attributes: bool = False
    #: The ceiling for the task's leg inputs, chosen by the server that started
    #: it (tasks started before it existed get the default).
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    #: The patch level of the code that started the task: patches folded in at
    #: or below it take effect with no marker (``workflows.patches``); 0 for
    #: tasks started before levels existed, which ask every patch.
    patch_level: int = 0


class LegRequest(BaseModel):
    """The activity's input: run the tool body once."""

    task_id: str
    tool_name: str
    tool_version: str | None = None
    arguments: dict[str, Any]
    caller: CallerSnapshot
    round: int
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    #: Set for a workflow tool's final leg: convert this into the tool's result.
    body_outcome: BodyOutcome | None = None
    #: The workflow takes a big result as a ``StoredResult`` (``RESULT_STORED_ONCE``).
    store_big_result: bool = False
    #: A local leg reports progress by signalling its workflow (``LOCAL_LEG_PROGRESS``).
    progress_signals: bool = False


class StoredResult(BaseModel):
    """A big result the leg put in the payload store itself, by reference.

    The leg outcome and the task's final view both carry this small reference
    instead of the result, so the result is written once (not once per payload
    that contains it) and stays out of the workflow's memory.
    ``fastmcp_temporal.activities.stored_result`` writes and reads it, through
    the driver and codec of the worker's / front end's ``ExternalStorage``.
    """

    driver: str
    claim: dict[str, str]
    #: The stored payload's size (after the codec): what a read will load.
    size_bytes: int
    #: The result's ``isError``, so the workflow can describe it without reading it.
    is_error: bool = False


class ProgressReport(BaseModel):
    """A leg's last progress report, as ``notifications/progress`` carries it."""

    progress: float
    total: float | None = None
    message: str | None = None


class LegOutcome(BaseModel):
    """How a leg ended. Exactly one of the three shapes is set, by ``kind``.

    - ``result``: the wire ``CallToolResult`` (``isError`` included: a raised
      tool error is a completed task, not a failed one).
    - ``input_required``: the tool asked for input; ``input_requests`` are keyed
      by the tool's own keys, ``request_state`` is echoed into the next leg.
    - ``error``: a JSON-RPC error (``MCPError``) -- the task fails.
    """

    kind: Literal["result", "input_required", "error"]
    result: dict[str, Any] | None = None
    input_requests: dict[str, dict[str, Any]] | None = None
    request_state: str | None = None
    error: dict[str, Any] | None = None
    #: ``kind == "result"`` with a big result: the result is in the store, not in ``result``.
    stored_result: StoredResult | None = None
    #: A local leg's progress signals Temporal acknowledged: the ``leg`` they
    #: name and the highest ``seq``. The workflow receives them all before it
    #: ends the task (none of them may arrive during its closing workflow task).
    progress_leg: str | None = None
    progress_signals: int = 0
    #: ``kind == "result"``: the body's last progress report, if it made one. Its
    #: heartbeat ended with the leg, or its signal was dropped with it: a waiting
    #: synchronous call relays it from the task's end (``TaskView.final_progress``).
    final_progress: ProgressReport | None = None


class InputDelivery(BaseModel):
    """A ``tasks/update`` as the workflow receives it (one signal)."""

    responses: dict[str, dict[str, Any]]


class TaskView(BaseModel):
    """The detailed task, as ``tasks/get`` reports it (SEP-2663 ``DetailedTask``).

    Answered by the workflow's query while it is open, and returned by the
    workflow (or carried by its failure) once it is closed.
    """

    task_id: str
    status: TaskStatus
    created_at: datetime
    last_updated_at: datetime
    ttl_ms: int
    poll_interval_ms: int
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, dict[str, Any]] | None = None
    #: A completed task's big result, by reference (``result`` is then ``None``).
    stored_result: StoredResult | None = None
    #: A completed task's last progress report (its last leg's), for a waiting
    #: synchronous call; never in the memo, never on the wire.
    final_progress: ProgressReport | None = None

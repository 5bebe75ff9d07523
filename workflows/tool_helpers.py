"""Inside a workflow tool: ask the MCP client, report progress, know the caller.

A *workflow tool* is a Temporal workflow registered as an MCP task tool
(``fastmcp_temporal.workflow_tool``). Its task runs it as a child workflow;
these helpers talk to that task:

```python
from fastmcp_temporal.workflows import ask, caller, report_progress


@workflow.defn
class ResearchAgent:
    @workflow.run
    async def run(self, topic: str) -> Report:
        plan = await workflow.execute_activity(make_plan, topic, ...)
        await report_progress("plan ready")
        answer = await ask(ElicitRequest(params=ElicitRequestFormParams(...)))
        ...
```

``ask`` parks the task in ``input_required`` under a fresh key and returns the
client's typed answer (a signal to the task); ``report_progress`` becomes the
task's ``statusMessage`` (written to this workflow's memo, which ``tasks/get``
reads, so it never grows the task's history);
``caller`` tells who created the task; ``sample`` asks the client's model (see
its docstring). All are deterministic workflow code.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from typing import Any

import mcp_types
from pydantic import BaseModel, TypeAdapter
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from fastmcp_temporal.workflows.models import (
    BODY_ANSWER_SIGNAL,
    BODY_ASK_SIGNAL,
    BODY_PROGRESS_MEMO,
    BODY_PROGRESS_SIGNAL,
    CALLER_MEMO,
    BodyAsk,
    BodyProgress,
    Caller,
)

_INPUT_RESPONSE: TypeAdapter[Any] = TypeAdapter(mcp_types.InputResponse)
#: Patch id of "progress goes to this workflow's memo, not to a signal".
PROGRESS_IN_MEMO_PATCH = "fastmcp-temporal/progress-in-memo"
#: The memo's recent lines: how many, and how long each may be (the memo is
#: rewritten whole on every write, so both bound what a write adds to history).
RECENT_LINES = 8
LINE_CHARS = 200


class _Inbox:
    """Answers the task forwarded to this workflow, by ask id (one per run)."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, Any]] = {}

    def receive(self, answers: dict[str, dict[str, Any]]) -> None:
        self.answers.update(answers)


def _inbox() -> _Inbox:
    instance = workflow.instance()
    inbox = getattr(instance, "_fastmcp_temporal_inbox", None)
    if inbox is None:
        inbox = _Inbox()
        instance._fastmcp_temporal_inbox = inbox
        workflow.set_signal_handler(BODY_ANSWER_SIGNAL, inbox.receive)
    return inbox


def _task_workflow_id() -> str:
    parent = workflow.info().parent
    if parent is None:
        raise RuntimeError(
            "ask() and report_progress() work only in a workflow that runs as an MCP "
            "task (registered with fastmcp_temporal.workflow_tool)"
        )
    return parent.workflow_id


async def ask(
    request: mcp_types.ElicitRequest
    | mcp_types.CreateMessageRequest
    | mcp_types.ListRootsRequest
    | dict[str, Any],
    *,
    key: str = "input",
) -> mcp_types.ElicitResult | mcp_types.CreateMessageResult | mcp_types.ListRootsResult:
    """Ask the MCP client; the task reads ``input_required`` until it answers.

    ``key`` only labels the request (the task mints a key unique for its life).
    """
    inbox = _inbox()
    ask_id = str(workflow.uuid4())
    body = (
        request.model_dump(by_alias=True, mode="json", exclude_none=True)
        if isinstance(request, BaseModel)
        else dict(request)
    )
    task = workflow.get_external_workflow_handle(_task_workflow_id())
    await task.signal(BODY_ASK_SIGNAL, BodyAsk(ask_id=ask_id, key=key, request=body))
    await workflow.wait_condition(lambda: ask_id in inbox.answers)
    return _INPUT_RESPONSE.validate_python(inbox.answers.pop(ask_id))


async def report_progress(
    message: str, progress: float | None = None, total: float | None = None
) -> None:
    """Show ``message`` as the task's ``statusMessage``.

    The report goes to this workflow's own memo, where ``tasks/get`` reads it,
    not to the task workflow: call it as often as you like. It costs at most
    one memo write per workflow task (the latest report wins), so a tight loop
    of 20 000 reports is one history event.
    """
    task_workflow_id = _task_workflow_id()
    report = BodyProgress(message=message, progress=progress, total=total)
    if workflow.patched(PROGRESS_IN_MEMO_PATCH):
        _progress_board().publish(report)
        return
    # Histories recorded before the patch signalled the task on every report.
    task = workflow.get_external_workflow_handle(task_workflow_id)
    await task.signal(BODY_PROGRESS_SIGNAL, report)


class _ProgressBoard:
    """The latest report, written to the memo at most once per workflow task.

    The first report of a workflow task schedules the write for when the
    workflow next yields, so every report made until then is folded into it.
    A report made after that write, in the same workflow task, waits for the
    next workflow task that reports.

    Beside the latest report the memo carries the last ``RECENT_LINES`` lines,
    numbered by how many reports came before (``seq``): a reader that missed a
    write (a waiting call reads at most once a second) still relays every line
    since the one it saw last, coalesced into one notification. When to write
    is decided by the latest report alone, as before the lines existed: the
    lines change what a write holds, never which writes happen (the replay gate
    compares commands, not their arguments).
    """

    def __init__(self) -> None:
        self.latest: BodyProgress | None = None
        self.written: BodyProgress | None = None
        self.written_in: int | None = None
        self.write_scheduled = False
        self.reports = 0
        self.recent: deque[tuple[int, str]] = deque(maxlen=RECENT_LINES)

    def publish(self, report: BodyProgress) -> None:
        self.latest = report
        self.reports += 1
        if not self.recent or self.recent[-1][1] != report.message[:LINE_CHARS]:
            self.recent.append((self.reports, report.message[:LINE_CHARS]))
        if not self.write_scheduled:
            self.write_scheduled = True
            asyncio.get_running_loop().call_soon(self._write)

    def _write(self) -> None:
        self.write_scheduled = False
        workflow_task = workflow.info().get_current_history_length()
        if self.latest is None or self.latest == self.written or self.written_in == workflow_task:
            return
        # ``reported_at`` lets ``tasks/get`` move ``lastUpdatedAt`` with the message.
        published = {
            **self.latest.model_dump(mode="json"),
            "reported_at": workflow.now().isoformat(),
            "seq": self.reports,
            "lines": [list(line) for line in self.recent],
        }
        workflow.upsert_memo({BODY_PROGRESS_MEMO: published})
        self.written, self.written_in = self.latest, workflow_task


def _progress_board() -> _ProgressBoard:
    instance = workflow.instance()
    board = getattr(instance, "_fastmcp_temporal_progress", None)
    if board is None:
        board = _ProgressBoard()
        instance._fastmcp_temporal_progress = board
    return board


def caller() -> Caller:
    """Who created this task: their scope and identity, as the task recorded them."""
    return workflow.memo_value(CALLER_MEMO, type_hint=Caller)


# -- the client's model as a step ---------------------------------------------------

#: ``stopReason`` of a model that declined to answer (as Anthropic's API reports it).
REFUSAL_STOP_REASON = "refusal"


class SamplingError(ApplicationError):
    """The client answered a sampling request with something that is not a model's message."""

    def __init__(self, message: str, *, stop_reason: str | None = None) -> None:
        super().__init__(message, type=type(self).__name__, non_retryable=True)
        self.stop_reason = stop_reason


class SamplingRefused(SamplingError):
    """The client's model declined to answer (``stopReason: "refusal"``)."""


class SamplingResult(BaseModel):
    """What the client's model answered."""

    #: Every text block of the answer, joined by blank lines ("" when none).
    text: str
    #: The answer's content blocks as the client sent them.
    content: list[mcp_types.SamplingMessageContentBlock]
    #: The model the client chose (it may ignore the server's preferences).
    model: str
    #: ``endTurn``, ``stopSequence``, ``maxTokens``, ``toolUse``, or the client's own.
    stop_reason: str | None = None


async def sample(
    messages: str | Sequence[mcp_types.SamplingMessage | dict[str, Any]],
    *,
    system_prompt: str | None = None,
    max_tokens: int = 1024,
    temperature: float | None = None,
    stop_sequences: Sequence[str] | None = None,
    model_preferences: mcp_types.ModelPreferences | Sequence[str] | None = None,
    metadata: dict[str, Any] | None = None,
    key: str = "sample",
) -> SamplingResult:
    """Ask the model of the MCP client that created the task (``sampling/createMessage``).

    The task reads ``input_required`` until the client answers: the server
    holds no API key and picks no provider, the client's user does both. The
    answer is a signal in the task's history, so a replay reads it again
    instead of asking the model twice. Raises ``SamplingRefused`` when the
    model declined, ``SamplingError`` for an answer that is not a model's
    message; both are ``ApplicationError``s, so left uncaught they end the
    task ``isError`` like any raised error. A client that will not sample
    cannot say so on the wire (an input response has no error variant): the
    task waits until the client cancels it or its TTL ends it.

    ``messages``: a prompt (one user message) or the conversation so far.
    ``model_preferences``: ``ModelPreferences``, or model name hints in order
    (``["sonnet", "gpt"]``); advisory, as MCP says. ``key`` labels the request
    in the task's ``inputRequests`` (the task makes it unique).
    """
    params = mcp_types.CreateMessageRequestParams(
        messages=_messages(messages),
        system_prompt=system_prompt,
        max_tokens=max_tokens,
        temperature=temperature,
        stop_sequences=list(stop_sequences) if stop_sequences is not None else None,
        model_preferences=_preferences(model_preferences),
        metadata=metadata,
    )
    answer = await ask(mcp_types.CreateMessageRequest(params=params), key=key)
    if not isinstance(
        answer, mcp_types.CreateMessageResult | mcp_types.CreateMessageResultWithTools
    ):
        raise SamplingError(f"The client answered sampling with a {type(answer).__name__}")
    content = answer.content if isinstance(answer.content, list) else [answer.content]
    if answer.stop_reason == REFUSAL_STOP_REASON:
        raise SamplingRefused(
            f"The client's model {answer.model!r} declined: {_text(content) or 'no reason given'}",
            stop_reason=answer.stop_reason,
        )
    return SamplingResult(
        text=_text(content), content=content, model=answer.model, stop_reason=answer.stop_reason
    )


def _messages(
    messages: str | Sequence[mcp_types.SamplingMessage | dict[str, Any]],
) -> list[mcp_types.SamplingMessage]:
    if isinstance(messages, str):
        prompt = mcp_types.TextContent(type="text", text=messages)
        return [mcp_types.SamplingMessage(role="user", content=prompt)]
    return [mcp_types.SamplingMessage.model_validate(m) for m in messages]


def _preferences(
    preferences: mcp_types.ModelPreferences | Sequence[str] | None,
) -> mcp_types.ModelPreferences | None:
    if preferences is None or isinstance(preferences, mcp_types.ModelPreferences):
        return preferences
    return mcp_types.ModelPreferences(hints=[mcp_types.ModelHint(name=n) for n in preferences])


def _text(content: Sequence[mcp_types.SamplingMessageContentBlock]) -> str:
    return "\n\n".join(b.text for b in content if isinstance(b, mcp_types.TextContent))

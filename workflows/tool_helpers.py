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
``caller`` tells who created the task. All three are deterministic workflow code.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types
from pydantic import BaseModel, TypeAdapter
from temporalio import workflow

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
    """

    def __init__(self) -> None:
        self.latest: BodyProgress | None = None
        self.written: BodyProgress | None = None
        self.written_in: int | None = None
        self.write_scheduled = False

    def publish(self, report: BodyProgress) -> None:
        self.latest = report
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

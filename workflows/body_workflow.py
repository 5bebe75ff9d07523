"""The task side of a workflow tool: run the tool's workflow as a child.

For a workflow tool the task workflow runs no tool legs. It starts the tool's
own workflow as a child (id ``<task workflow id>-body``), turns the child's
``ask`` signals into outstanding input requests under keys it mints, forwards
``tasks/update`` answers back to the child, and -- once the child returns --
runs one final leg that converts the return value into the ``CallToolResult``
FastMCP would produce. The child's progress stays out of this history: the
child keeps it in its own memo and ``tasks/get`` reads it there (children
started before that still signal it, and the handler below still shows it).

Cancelling the task cancels the child (parent-close policy ``REQUEST_CANCEL``),
and through its heartbeats, the child's running activities.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

from fastmcp_temporal.workflows.models import (
    BODY_ANSWER_SIGNAL,
    BODY_ASK_SIGNAL,
    BODY_PROGRESS_SIGNAL,
    CALLER_MEMO,
    BodyAsk,
    BodyOutcome,
    BodyProgress,
    Caller,
    TaskStart,
)


class WorkflowBodyRunner:
    """Mixed into the task state machine; uses its ``_outstanding``/``_answers``."""

    _outstanding: dict[str, tuple[str, dict[str, Any]]]
    _answers: dict[str, dict[str, Any]]
    _status: str
    _status_message: str | None
    _body_asks: int = 0

    def _transition(self, status: Any) -> None:  # provided by the state machine
        raise NotImplementedError

    def _touch(self) -> None:  # provided by the state machine
        raise NotImplementedError

    @workflow.signal(name=BODY_ASK_SIGNAL)
    def _on_body_ask(self, ask: BodyAsk) -> None:
        self._body_asks += 1
        self._outstanding[f"{self._body_asks}.{ask.key}"] = (ask.ask_id, ask.request)
        if self._status == "input_required":
            self._touch()
        elif self._status == "working":
            self._transition("input_required")

    @workflow.signal(name=BODY_PROGRESS_SIGNAL)
    def _on_body_progress(self, progress: BodyProgress) -> None:
        if self._status in ("working", "input_required"):
            self._status_message = progress.message
            self._touch()

    async def _run_body(self, start: TaskStart) -> BodyOutcome:
        """Run the child to its end, relaying input both ways; return how it ended."""
        assert start.body is not None
        info = workflow.info()
        body_id = f"{info.workflow_id}-body"
        # The UI's current details (not a command): Temporal does not tell this workflow
        # when its child's workflow tasks or activities fail, so say where that shows.
        running = (
            f"Running workflow tool **{start.tool_name}** as the child workflow "
            f"`{body_id}`: its activities (attempts, last failure) and any failing "
            "workflow task are on that workflow's page; `tasks/get` and "
            "`fastmcp-temporal tasks show` say it in the task's status message."
        )
        workflow.set_current_details(running)
        child = await workflow.start_child_workflow(
            start.body.workflow,
            args=start.body.args,
            id=body_id,
            task_queue=start.body.task_queue or info.task_queue,
            memo={CALLER_MEMO: _caller(start).model_dump(mode="json")},
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"Workflow tool {start.tool_name} · task {start.task_id}",
        )
        while True:
            await workflow.wait_condition(lambda: child.done() or bool(self._answers))
            if self._answers:
                answers, self._answers = self._answers, {}
                if not self._outstanding and self._status == "input_required":
                    # Every question is answered: the task works again in this
                    # workflow task, not once the child has the answers (a later
                    # one) -- a poll in between would show answered questions.
                    self._transition("working")
                    workflow.set_current_details(running)
                await child.signal(BODY_ANSWER_SIGNAL, answers)
                continue
            break
        try:
            return BodyOutcome(value=await child)
        except ChildWorkflowError as err:
            cause = err.cause if err.cause is not None else err
            return BodyOutcome(error=str(cause) or type(cause).__name__)


def _caller(start: TaskStart) -> Caller:
    """The caller's identity, read without I/O and without the token when it is sealed.

    A task with the token in clear (created before sealing, or with credentials
    in clear) reads it as it always did; otherwise the client id and subject
    come from the scope (``[client_id, issuer, subject]``) and the scopes from
    ``token_scopes`` (the subject as the scope has it: the token's, else its ``sub``).
    """
    snapshot = start.caller
    if snapshot.access_token_json:
        token = json.loads(snapshot.access_token_json)
        claims = token.get("claims") or {}
        client_id, subject, scopes = token.get("client_id"), claims.get("sub"), token.get("scopes")
    else:
        client_id = subject = None
        if snapshot.scope is not None:
            client_id, _issuer, subject = json.loads(snapshot.scope)
        scopes = snapshot.token_scopes
    return Caller(
        task_id=start.task_id,
        scope=snapshot.scope,
        client_id=client_id,
        subject=subject,
        scopes=list(scopes or []),
    )

"""What the running body of a task last said: a leg's heartbeat, a workflow tool's memo.

A leg reports through its heartbeat details (message, numbers, the attempt they
belong to); a workflow tool through a memo entry of its own workflow, with its
last few lines numbered. Both read into one ``LegStatus`` -- the task's
``statusMessage``, a waiting call's progress -- and a leg run again after a
failure says "Retrying (attempt N): <why>" until that attempt reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
from temporalio.client import Client

from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.workflows.leg_retry import failure_reason
from fastmcp_temporal.workflows.models import BODY_PROGRESS_MEMO, ProgressReport


@dataclass(frozen=True)
class LegStatus:
    """What the running leg says: its message (the ``statusMessage``), and since when;
    ``report``: its last progress report, numbers included, when it has one (a leg's
    heartbeat, a workflow tool's memo)."""

    message: str | None
    changed_at: datetime | None
    report: ProgressReport | None = None
    #: A workflow tool's last few lines, ``(seq, message)``: its reports are numbered.
    lines: tuple[tuple[int, str], ...] | None = None


def _report(progress: Any, total: Any, message: Any) -> ProgressReport | None:
    """A report as a leg's heartbeat or a workflow tool's memo holds it (``None``: no number)."""
    numeric = (int, float)
    if not isinstance(progress, numeric) or isinstance(progress, bool):
        return None
    return ProgressReport(
        progress=progress,
        total=total if isinstance(total, numeric) and not isinstance(total, bool) else None,
        message=message if isinstance(message, str) else None,
    )


def _lines(lines: Any) -> tuple[tuple[int, str], ...] | None:
    """A body memo's ``lines`` (``None`` from a workflow that predates them)."""
    if not isinstance(lines, list):
        return None
    return tuple(
        (line[0], line[1])
        for line in lines
        if isinstance(line, list)
        and len(line) == 2
        and isinstance(line[0], int)
        and isinstance(line[1], str)
    )


def _reported_in(leg: PendingActivityInfo, details: dict[str, Any] | None) -> bool:
    """Whether the leg's current attempt has reported (a message or a number).

    Temporal carries an attempt's last heartbeat details into the next one, so they
    are the current attempt's only when they say so (``attempt``); a leg of an older
    worker, which does not, counts when its message changed after the last failure.
    """
    if details is None or (details.get("message") is None and details.get("progress") is None):
        return False
    attempt = details.get("attempt")
    if isinstance(attempt, int):
        return attempt == leg.attempt
    changed_at = details.get("message_at")
    return (
        isinstance(changed_at, str)
        and leg.HasField("last_attempt_complete_time")
        and datetime.fromisoformat(changed_at) > utc(leg.last_attempt_complete_time)
    )


def utc(timestamp: Timestamp) -> datetime:
    return timestamp.ToDatetime(tzinfo=UTC)


async def body_status(client: Client, body: DescribeWorkflowExecutionResponse) -> LegStatus | None:
    """What a workflow tool's workflow (``body``, described) last reported, from its memo."""
    fields = body.workflow_execution_info.memo.fields
    if BODY_PROGRESS_MEMO not in fields:
        return None
    (progress,) = await client.data_converter.decode([fields[BODY_PROGRESS_MEMO]], [dict])
    if not isinstance(progress, dict):
        return None
    message, reported_at = progress.get("message"), progress.get("reported_at")
    return LegStatus(
        message if isinstance(message, str) else None,
        datetime.fromisoformat(reported_at) if isinstance(reported_at, str) else None,
        _report(progress.get("progress"), progress.get("total"), message),
        _lines(progress.get("lines")),
    )


async def leg_status(client: Client, leg: PendingActivityInfo) -> LegStatus | None:
    """The running leg's latest progress message, from its heartbeat details.

    A leg run again after a failure (a lost worker, a raised error) says "Retrying
    (attempt N): <why>" until that attempt reports: Temporal keeps the last failure
    on the pending activity for the whole attempt, so it is news only until then.
    """
    retried = leg.attempt > 1 and leg.HasField("last_failure")
    try:
        details = await _heartbeat_details(client, leg)
    except PayloadDecryptionError:
        if not retried:
            raise
        details = None  # e.g. a worker without the key: the failure says so
    if retried and not _reported_in(leg, details):
        # Decoded: with encryption the message sits in encrypted attributes.
        try:
            failure = await client.data_converter.decode_failure(leg.last_failure)
            reason = failure_reason(failure)
        except PayloadDecryptionError as err:
            reason = err.message
        failed_at = (
            utc(leg.last_attempt_complete_time)
            if leg.HasField("last_attempt_complete_time")
            else None
        )
        return LegStatus(f"Retrying (attempt {leg.attempt}): {reason}", failed_at)
    if details is None:
        return None
    message = details.get("message")
    changed_at = details.get("message_at")  # absent from legs of older workers
    return LegStatus(
        message if isinstance(message, str) else None,
        datetime.fromisoformat(changed_at) if isinstance(changed_at, str) else None,
        _report(details.get("progress"), details.get("total"), message),
    )


async def _heartbeat_details(client: Client, leg: PendingActivityInfo) -> dict[str, Any] | None:
    if not leg.heartbeat_details.payloads:
        return None
    (details,) = await client.data_converter.decode(
        list(leg.heartbeat_details.payloads)[:1], [dict]
    )
    return details if isinstance(details, dict) else None

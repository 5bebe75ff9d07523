"""How a task retries its legs: until its own deadline, never a fixed count.

A tool's own error never reaches Temporal's retry policy -- the leg returns it
as an ``isError`` result or an ``MCPError`` outcome -- so every attempt the
policy sees fail is infrastructure: a drained or lost worker, a worker that
cannot decrypt the leg, a worker that does not serve the tool. Counting those
would let three rolling deploys fail a long task. A leg therefore runs again
until the task's deadline (``createdAt + ttlMs``): the activity's
schedule-to-close timeout. When that fires, the task fails with
``-32000``, naming the last failure.

A *local* leg is the exception: it runs inside a workflow task, so losing
its worker never counts as an attempt, and it keeps ``LegPolicy.max_attempts``
for its own timeouts (bounded by the deadline too).

This is workflow code: the policy is chosen behind a patch
(``patches.RETRY_UNTIL_DEADLINE_PATCH``), so a task that scheduled a leg under
the old policy (``LegPolicy.max_attempts``) replays it unchanged.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    FailureError,
    RetryState,
    TimeoutError,
    TimeoutType,
)

from fastmcp_temporal.workflows.models import UNDECRYPTABLE_ERROR_TYPE, TaskStart
from fastmcp_temporal.workflows.patches import RETRY_UNTIL_DEADLINE_PATCH, patched

_FIRST_RETRY = timedelta(seconds=1)
#: A leg scheduled at or after the deadline still gets this long (the
#: workflow's own execution timeout, one minute later, ends it otherwise).
_LAST_CHANCE = timedelta(seconds=1)


def leg_retry(start: TaskStart, *, local: bool) -> tuple[RetryPolicy, timedelta | None]:
    """The retry policy of the next leg (a local one if ``local``), and its schedule-to-close."""
    policy = start.leg_policy
    if not patched(start, RETRY_UNTIL_DEADLINE_PATCH):
        old = RetryPolicy(maximum_attempts=policy.max_attempts, initial_interval=_FIRST_RETRY)
        return old, None
    deadline = start.created_at + timedelta(milliseconds=start.ttl_ms)
    retry = RetryPolicy(
        initial_interval=_FIRST_RETRY,
        backoff_coefficient=2.0,
        maximum_interval=max(timedelta(seconds=policy.max_retry_interval_s), _FIRST_RETRY),
        # A local leg runs inside a workflow task: a lost or drained worker
        # never counts against it (the next workflow task starts it afresh),
        # only its own timeout does -- and the SDK does not end local retries at
        # the schedule-to-close deadline, so they keep a count.
        maximum_attempts=policy.max_attempts if local else 0,
    )
    return retry, max(deadline - workflow.now(), _LAST_CHANCE)


def expired_message(err: ActivityError, ttl_ms: int) -> str:
    """Why the task failed at its deadline, with the leg's last failure if one was recorded.

    No failure means the one attempt simply ran until the deadline.
    """
    message = f"Task expired: its tool leg did not finish within the task's TTL ({ttl_ms} ms)"
    cause = err.cause.__cause__ if err.cause and _is_deadline(err.cause) else err.cause
    return message if cause is None else f"{message}; last failure: {failure_reason(cause)}"


def deadline_passed(err: ActivityError) -> bool:
    """Whether a leg failed because the task's deadline ended its retries.

    Temporal says so two ways: an attempt failed and the next one would start
    after the deadline (retry state ``TIMEOUT``, the attempt's failure as
    cause), or the deadline passed while an attempt ran (a schedule-to-close
    timeout).
    """
    return err.retry_state == RetryState.TIMEOUT or _is_deadline(err.cause)


def ended_while_cancelling(err: ActivityError | TimeoutError, *, local: bool) -> bool:
    """Whether an activity leg failed or timed out after the task's cancellation was asked of it.

    A leg learns of a cancellation on its next heartbeat, and the task waits for
    it to stop (``WAIT_CANCELLATION_COMPLETED``). A worker that is alive but
    starved (a loaded machine) can miss its heartbeat timeout meanwhile: Temporal
    then ends the attempt timed out and retries no more (retry state
    ``CANCEL_REQUESTED``). The client asked for a cancellation, and the leg is
    stopped: the task ends ``cancelled``, not ``failed`` with a heartbeat timeout.
    Not a local leg: the SDK gives every local activity's timeout that retry state.
    """
    return (
        not local
        and isinstance(err, ActivityError)
        and err.retry_state == RetryState.CANCEL_REQUESTED
    )


def _is_deadline(error: BaseException | None) -> bool:
    return isinstance(error, TimeoutError) and error.type == TimeoutType.SCHEDULE_TO_CLOSE


def failure_reason(failure: BaseException) -> str:
    """What went wrong, as an operator needs it.

    A decryption failure is named wherever it sits in the chain (the SDK wraps
    it as "Failed decoding arguments"): it names the key id to deploy.
    """
    error: BaseException | None = failure
    while error is not None:
        if isinstance(error, ApplicationError) and error.type == UNDECRYPTABLE_ERROR_TYPE:
            return error.message
        error = error.__cause__
    if isinstance(failure, FailureError):
        return failure.message
    return str(failure) or type(failure).__name__

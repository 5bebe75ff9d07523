"""How a waiting call ends without its task's result: drained, stuck, or Temporal lost.

**Stuck** (``stuck_call_timeout_s``): a call whose reads have found the task's
body failing (``tasks.stuck_bodies``) for that long without a break ends with
``-32004``, naming the task and what fails, instead of waiting for the TTL: the
task goes on retrying, so a fix and a deploy finish it.

**Drained** (``call_waits.WaitingCalls.drain``): a front end being stopped takes
no new waiting call (``-32002``, retryable), lets those that wait end within a
grace period, then answers each one left with ``-32002``: its task goes on.

Each answer names the task, says that it goes on, and how to reach its result:
with the call's ``Idempotency-Key``, by the same call made again when it
attaches to its task (``reattach``), or by ``tasks/get`` of its id. Only a
call that reaches its task again is ``retryable``: otherwise a retry is a new
task, and the body would run twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from fastmcp_temporal.client_wire import SERVER_DRAINING, TASK_STUCK
from fastmcp_temporal.server.tasks.stuck_bodies import Stuck

logger = logging.getLogger(__name__)


class StuckClock:
    """How long every read of one call has found its task's body failing."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        #: Since when (loop time) every read found the task's body failing.
        self._since: float | None = None

    def too_long(self, stuck: Stuck | None, now: float) -> bool:
        """After a read that found ``stuck`` (``None``: the body is not failing) at ``now``."""
        if stuck is None:
            self._since = None
            return False
        if self._since is None:
            self._since = now
        return now - self._since >= self._timeout_s


@dataclass(frozen=True)
class CallAnswers:
    """The answers of one waiting call of ``task_id``."""

    task_id: str | None
    #: The call carries an idempotency key: a retry reattaches to its task.
    reattachable: bool
    #: The same call made again attaches to its task (``reattach``).
    attaches_again: bool

    def drained(self) -> MCPError:
        """The front end stops waiting for the call (``-32002``): its task goes on."""
        return MCPError(
            code=SERVER_DRAINING,
            message=(
                f"This server is shutting down; task {self.task_id} goes on without this "
                f"call. For its result, {self.how_to_reach()}"
            ),
            data={"taskId": self.task_id, "retryable": self.retryable},
        )

    def stuck(self, stuck: Stuck) -> MCPError:
        """The task's body kept failing (``-32004``): the task goes on retrying."""
        return MCPError(
            code=TASK_STUCK,
            message=(
                f"Task {self.task_id} is stuck: {stuck.message}. It keeps retrying, so a fix "
                f"and a deploy still finish it; for its result, {self.how_to_reach()}"
            ),
            data={"taskId": self.task_id, "retryable": self.retryable},
        )

    def lost(self, err: Exception) -> MCPError:
        """Temporal refused the wait's read for good (not a blip): the task goes on."""
        logger.warning("Waiting for task %s failed: %r", self.task_id, err)
        return MCPError(
            code=INTERNAL_ERROR,
            message=(
                f"Task {self.task_id} goes on, but this server cannot read it from Temporal "
                f"({type(err).__name__}); read it later with tasks/get {self.task_id}"
            ),
            data={"taskId": self.task_id, "retryable": False},
        )

    @property
    def retryable(self) -> bool:
        return self.reattachable or self.attaches_again

    def how_to_reach(self) -> str:
        if self.reattachable:
            return "call again with the same Idempotency-Key, or tasks/get it"
        if self.attaches_again:
            return "call again with the same arguments (the call attaches to it), or tasks/get it"
        return f"tasks/get {self.task_id} (calling again starts anew)"

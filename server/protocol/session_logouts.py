"""Logouts every front end of a deployment honours: a ``DELETE``d session id, told through Temporal.

A sealed session id (``session_seal``) is served by any front end of the deployment
without a store, so ``DELETE`` on one front end must reach the others some other
way. The store they already share is Temporal, and front ends may run without any
worker, so the logout cannot be a signal, a query or a memo (each needs a worker to
be read or written). It is a workflow of its own, which nothing ever runs:

- ``DELETE`` starts ``FastmcpTemporalSessionLogout`` with the id's nonce and expiry
  in its workflow id, on a task queue of this deployment's that no worker polls,
  with a start delay longer than its execution timeout, which ends at the id's own
  expiry. So no workflow task is ever scheduled (no worker is asked for, none is
  "stuck"); the workflow is ``Running`` while the logout matters and Temporal times
  it out when the id would have expired anyway, then forgets it at the namespace's
  retention. Its history is two events. Tasks listings never see it (they list
  ``McpTask`` types).
- Each front end lists that task queue's logouts through visibility (needs no
  worker): all running ones once, at start, then every ``POLL_S`` those started
  since its last read, with ``OVERLAP_S`` of overlap for visibility's delay and
  clocks. What it learns goes in the seal's local set, so an ordinary request
  checks a set, never Temporal.

The publishing and the reading run in the background (``running``): ``DELETE`` is
answered once the id is refused here, and a Temporal that is away delays the
other front ends' refusal, never a request. Both are bounded: the publishing queue
holds ``QUEUED_MAX`` logouts, each listing at most ``LISTED_MAX`` rows in pages with
an RPC timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

from temporalio.client import Client
from temporalio.exceptions import WorkflowAlreadyStartedError

from fastmcp_temporal.server.core import background

logger = logging.getLogger(__name__)

#: The workflow type of a logout: no worker registers it, none ever runs it.
LOGOUT_WORKFLOW = "FastmcpTemporalSessionLogout"
_ID_PREFIX = "fastmcp-temporal-logout"
#: How often a front end reads the logouts started since its last read.
POLL_S = 1.0
#: How far back each read reaches before the last one: visibility's delay and clocks.
OVERLAP_S = 10.0
#: Logouts waiting here to be told at most (Temporal away): the oldest told first.
QUEUED_MAX = 10_000
#: Rows one listing reads at most.
LISTED_MAX = 100_000
_PAGE_ROWS = 1000
_RPC_TIMEOUT = timedelta(seconds=5)
#: A logout of an id about to expire anyway is not told (a workflow lives at least 1 s).
_SHORTEST_S = 2.0
_RETRY_S = 2.0


class SharedLogouts:
    """Tells the deployment's other front ends of each logout here, and hears theirs."""

    def __init__(
        self,
        deployment_tag: str,
        hear: Callable[[bytes, float], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        #: Keeps deployments sharing a namespace apart (derived from the scope secret).
        self.task_queue = f"{_ID_PREFIX}s-{deployment_tag}"
        self._hear = hear
        self._clock = clock
        self._queue: asyncio.Queue[tuple[bytes, float]] | None = None
        self._telling = _Trouble("tell other front ends of session logouts")
        self._reading = _Trouble("read other front ends' session logouts")

    def publish(self, nonce: bytes, expires: float) -> None:
        """Tell the others (in the background) that the id ``nonce`` names is logged out."""
        if self._queue is None:
            return  # not running: a front end without a Temporal client refuses it alone
        if self._queue.full():
            logger.warning(
                "fastmcp-temporal: %d session logouts are waiting for Temporal; this one is "
                "refused by this front end only",
                QUEUED_MAX,
            )
            return
        self._queue.put_nowait((nonce, expires))

    @contextlib.asynccontextmanager
    async def running(self, client: Client) -> AsyncIterator[None]:
        """While inside: logouts here are told through ``client``, the others' heard."""
        self._queue = asyncio.Queue(QUEUED_MAX)
        try:
            async with background.running(self._tell(client, self._queue), self._listen(client)):
                yield
        finally:
            self._queue = None

    async def _tell(self, client: Client, queue: asyncio.Queue[tuple[bytes, float]]) -> None:
        while True:
            nonce, expires = await queue.get()
            while not await self._started(client, nonce, expires):
                await asyncio.sleep(_RETRY_S)

    async def _started(self, client: Client, nonce: bytes, expires: float) -> bool:
        """Whether the logout is told (or need not be): ``False`` to try again."""
        left_s = expires - self._clock()
        if left_s < _SHORTEST_S:
            return True
        until = datetime.fromtimestamp(expires, UTC).isoformat(timespec="seconds")
        try:
            await client.start_workflow(
                LOGOUT_WORKFLOW,
                id=logout_workflow_id(nonce, expires),
                task_queue=self.task_queue,
                execution_timeout=timedelta(seconds=left_s),
                # Longer than its life: no workflow task is ever scheduled.
                start_delay=timedelta(seconds=left_s + 60),
                static_summary=f"An MCP session logged out (its id expires {until})",
                rpc_timeout=_RPC_TIMEOUT,
            )
        except WorkflowAlreadyStartedError:
            pass  # told by another front end (or twice here)
        except Exception as err:  # Temporal away, or refusing: try again, never stop telling
            self._telling.failed(err)
            return False
        self._telling.worked()
        return True

    async def _listen(self, client: Client) -> None:
        since: float | None = None
        while True:
            started = self._clock()
            query = f"TaskQueue = '{self.task_queue}'"
            if since is None:
                query += " AND ExecutionStatus = 'Running'"
            else:
                moment = datetime.fromtimestamp(since - OVERLAP_S, UTC)
                query += f" AND StartTime >= '{moment.isoformat()}'"
            try:
                await self._read(client, query)
            except Exception as err:  # Temporal away, or refusing: read again, never stop
                self._reading.failed(err)
            else:
                self._reading.worked()
                since = started
            await asyncio.sleep(POLL_S)

    async def _read(self, client: Client, query: str) -> None:
        rows = client.list_workflows(
            query, limit=LISTED_MAX, page_size=_PAGE_ROWS, rpc_timeout=_RPC_TIMEOUT
        )
        async for execution in rows:
            heard = parse_logout_workflow_id(execution.id)
            if heard is not None:
                self._hear(*heard)


class _Trouble:
    """Logs a loop's failure once when it starts failing and once when it works again,
    not every second while Temporal is away."""

    def __init__(self, doing: str) -> None:
        self.doing = doing
        self.failing = False

    def failed(self, err: Exception) -> None:
        if not self.failing:
            logger.warning("fastmcp-temporal: could not %s (trying again): %s", self.doing, err)
        self.failing = True

    def worked(self) -> None:
        if self.failing:
            logger.info("fastmcp-temporal: can %s again", self.doing)
        self.failing = False


def logout_workflow_id(nonce: bytes, expires: float) -> str:
    """The logout's workflow id: the id's nonce (not the id: it is a bearer token) and expiry."""
    return f"{_ID_PREFIX}-{nonce.hex()}-{int(expires)}"


def parse_logout_workflow_id(workflow_id: str) -> tuple[bytes, float] | None:
    """The nonce and expiry ``logout_workflow_id`` wrote, else ``None``."""
    parts = workflow_id.removeprefix(_ID_PREFIX + "-").split("-")
    if len(parts) != 2 or not parts[1].isdigit():
        return None
    try:
        return bytes.fromhex(parts[0]), float(parts[1])
    except ValueError:
        return None

"""Calls that wait for their task: one bounded mechanism behind every durable plain call.

A plain ``tools/call`` of a task tool runs as the task workflow while its HTTP
request waits (``sync_calls``). How it learns what the task does is all here,
and what it costs Temporal does not grow with how many calls wait:

- **Its end**: one long poll for the run's close event (``task_watch.ended``,
  what ``result()`` reads). Temporal holds it until the run closes; it costs
  one request per long-poll window, not per second.
- **What a leg says when it runs here** (a worker in the front end: eager
  start and eager activity dispatch put a task's legs there): every report
  and log line, when it begins and ends, in-process (``activities.leg_news``).
  A leg that ends with a question is about to park the task: the call then
  follows the task's history until it has (``task_watch.watch``).
- **Everything else** -- a park decided by another worker, the progress of a
  leg another worker runs (its heartbeat) -- from one read loop per front end,
  its only periodic reader (``call_reads``). Every tick (``timing.TICK_S``) it
  reads the calls that waited at least that long and hear nothing from a leg
  here, least recently read first, at most ``reads_per_second`` a second
  (``tasks/get``'s read, one ``describe``). So N waiting calls cost Temporal at
  most that many reads a second, and in a crowd each is read less often.
- **What its client hears**: the newest report at most once a tick, the last
  one before the result, a keepalive through silence, every log line
  (``call_progress``). A workflow tool's last lines are in its workflow's memo,
  not in the task's end: the call reads them once more before it answers.

A call whose reads found its task's body failing for ``stuck_call_timeout_s``
ends stuck (``-32004``); a front end being stopped (``drain``) takes no new
waiting call and, after a grace, answers those left ``-32002``. Either way the
task goes on (``call_answers``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fastmcp.server.context import Context
from mcp.shared.exceptions import MCPError
from temporalio.service import RPCError

from fastmcp_temporal.activities.leg_news import (
    LegBegan,
    LegEnded,
    LegNews,
    LinesDropped,
    LogLine,
    NewsQueue,
)
from fastmcp_temporal.client_wire import SERVER_DRAINING
from fastmcp_temporal.server.core.codec import PayloadDecryptionError
from fastmcp_temporal.server.core.wire import TERMINAL_STATUSES, GetTaskResult
from fastmcp_temporal.server.protocol.call_answers import CallAnswers, StuckClock
from fastmcp_temporal.server.protocol.call_fates import CallFates
from fastmcp_temporal.server.protocol.call_progress import CallProgress
from fastmcp_temporal.server.protocol.call_reads import ReadLoop
from fastmcp_temporal.server.protocol.cancel_reasons import CancelReasons
from fastmcp_temporal.server.protocol.idempotency import requested_key
from fastmcp_temporal.server.protocol.live_calls import LiveCalls
from fastmcp_temporal.server.protocol.temporal_busy import is_transient
from fastmcp_temporal.server.tasks.engine import TaskEngine, TaskRead, workflow_id_for
from fastmcp_temporal.server.tasks.leg_status import LegStatus
from fastmcp_temporal.server.tasks.task_watch import ended, watch
from fastmcp_temporal.timing import TICK_S

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
#: After the grace, how long the calls still waiting get to take their ``-32002``.
_ANSWER_LEFT_TICKS = 5


class WaitingCalls:
    """The calls waiting on this front end, read within one budget, drained as one."""

    def __init__(
        self,
        engine: TaskEngine,
        leg_news: LegNews | None,
        *,
        keepalive_s: float,
        reads_per_second: int,
        tick_s: float = TICK_S,
        stuck_call_timeout_s: float = 30.0,
        on_wait: Callable[[], None] | None = None,
        calls: LiveCalls | None = None,
        host_limits: Mapping[str, float] | None = None,
    ) -> None:
        """``on_wait``: called as each call begins to wait (``extension.drain`` arms there);
        ``stuck_call_timeout_s``: how long a call waits on a body that keeps failing;
        ``calls``: this server's sessions and questions (``live_calls``), over HTTP;
        ``host_limits``: the server's overrides of the hosts' hard limits (``host_limits``);
        ``tick_s``: the read loop's pace (``call_reads``), ``reads_per_second`` its budget."""
        self.engine = engine
        self.stuck_call_timeout_s = stuck_call_timeout_s
        self.calls = calls
        #: A client's cancel reason, for the call it names (in the server's middleware).
        self.cancel_reasons = CancelReasons()
        self.host_limits: Mapping[str, float] = dict(host_limits or {})
        self._on_wait = on_wait
        self.leg_news = leg_news
        self.keepalive_s = keepalive_s
        self.tick_s = tick_s
        self._calls: set[CallWait] = set()
        self.read_loop = ReadLoop(self._calls, reads_per_second, tick_s=tick_s)
        self._emptied = asyncio.Event()
        self._draining = False
        #: Calls whose host just gave up, until their task's fate is decided (``call_fates``).
        self.fates = CallFates()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While inside, the read loop tends the waiting calls."""
        tending = asyncio.create_task(self.read_loop.run())
        try:
            yield
        finally:
            tending.cancel()
            for task in (tending, *self.read_loop.reads):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def wait_for(self, context: Context) -> CallWait:
        """A wait for one ``tools/call``; refused while this front end drains."""
        if self._draining:
            raise MCPError(
                code=SERVER_DRAINING,
                message="This server is shutting down and takes no new calls: call again, "
                "another server will take it",
                data={"retryable": True},
            )
        if self._on_wait is not None:
            self._on_wait()
        return CallWait(self, context)

    async def drain(self, grace_s: float) -> None:
        """Take no new call; give those that wait ``grace_s`` to end, then answer the rest."""
        self._draining = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                while self._calls:
                    self._emptied.clear()
                    await self._emptied.wait()
        for call in list(self._calls):
            call.stop_waiting()
        # Each answers at once, or at its next await of Temporal (a call still starting
        # its task: ``guard`` sees the stop as it begins to wait); bounded all the same.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_ANSWER_LEFT_TICKS * self.tick_s):
                while self._calls:
                    self._emptied.clear()
                    await self._emptied.wait()

    def _joined(self, call: CallWait) -> None:
        self._calls.add(call)

    def _left(self, call: CallWait) -> None:
        self._calls.discard(call)
        if not self._calls:
            self._emptied.set()


class CallWait:
    """One waiting call: its task, what it hears of it, what it tells its client."""

    def __init__(self, calls: WaitingCalls, context: Context) -> None:
        self._calls = calls
        self._engine = calls.engine
        loop = asyncio.get_running_loop()
        self._loop = loop
        self.relay = CallProgress(
            context, calls.keepalive_s, began=loop.time(), tick_s=calls.tick_s
        )
        self.task_id: str | None = None
        self._scope: str | None = None
        self._listening: tuple[str, NewsQueue, asyncio.Task[None]] | None = None
        self._leg_here = False
        #: A leg here ended with a question: the task parks (or has parked).
        self._asking = False
        self._following: asyncio.Task[None] | None = None
        self._reading = False
        self._last_read = loop.time()
        #: The task once it ends or asks, as a read or a follow found it (this round).
        self._found: asyncio.Future[GetTaskResult] | None = None
        self._stopped: asyncio.Future[None] = loop.create_future()
        self._stuck = StuckClock(calls.stuck_call_timeout_s)
        #: The call's tool is a workflow tool: its last lines are in its workflow's memo.
        self.workflow_tool = False
        #: A retry of this call reattaches to its task (it carries an idempotency key).
        self._reattachable = False
        with contextlib.suppress(MCPError):  # a malformed key: the create refuses it
            self._reattachable = requested_key(context) is not None
        #: The same call made again attaches to its task once nobody received its result
        #: (``reattach``; set by ``sync_calls``).
        self.attaches_again = False

    async def __aenter__(self) -> CallWait:
        self._calls._joined(self)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._calls._left(self)
        await self.relay.close()  # first: a read still under way says nothing after the answer
        self._stop_listening()
        await _cancelled(self._following)

    def listen(self, task_id: str, scope: str | None) -> None:
        """This call's task from now on: call before starting (or answering) it, so
        nothing its legs say here comes before the call listens."""
        self.task_id, self._scope = task_id, scope
        workflow_id = workflow_id_for(task_id, scope, self._engine.scope_secret)
        news = self._calls.leg_news
        if news is None or (self._listening and self._listening[0] == workflow_id):
            return
        self._stop_listening()
        queue = news.listen(workflow_id)
        self._listening = (workflow_id, queue, asyncio.create_task(self._hear(queue)))

    def stop_waiting(self) -> None:
        """The front end drains: answer ``-32002`` now, whatever the call awaits."""
        if not self._stopped.done():
            self._stopped.set_result(None)

    async def guard(self, waiting: Awaitable[_T]) -> _T:
        """``waiting``'s result, unless the front end stops this call first (``-32002``)."""
        task = asyncio.ensure_future(waiting)
        try:
            await asyncio.wait({task, self._stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped = not task.done()
            if stopped:
                await _cancelled(task)
        if stopped:
            raise self._answers().drained()
        return task.result()

    def _answers(self) -> CallAnswers:
        return CallAnswers(self.task_id, self._reattachable, self.attaches_again)

    async def until_answerable(self, run_id: str | None = None) -> GetTaskResult:
        """The task once it ended or asks, relaying what it says meanwhile.

        ``run_id``: the run this call started, so the long poll names it.
        A Temporal that is briefly away only delays it: the task runs on
        without this request (the client's own timeout or cancel bounds the wait).
        """
        assert self.task_id is not None, "listen() first"
        found = self._found = self._loop.create_future()
        self._last_read = self._loop.time()
        if self._asking:
            self._follow()
        try:
            while True:
                ending = asyncio.ensure_future(
                    ended(self._engine, self.task_id, self._scope, run_id=run_id)
                )
                try:
                    await self.guard(
                        asyncio.wait({ending, found}, return_when=asyncio.FIRST_COMPLETED)
                    )
                finally:
                    if not ending.done():
                        await _cancelled(ending)
                if found.done():
                    view = found.result()
                    break
                try:
                    view = ending.result()
                except RPCError as err:
                    if not is_transient(err):
                        raise self._answers().lost(err) from err
                    await self.guard(asyncio.sleep(self._calls.tick_s))
                    continue
                except PayloadDecryptionError as err:
                    raise self._answers().lost(err) from err
                if view is not None:
                    break
                run_id = None  # the window ended, or the run continued as new: the task's latest
        finally:
            self._found = None
        if self.workflow_tool and view.final_progress is None:
            await self._body_last_word()
        await self.relay.finish(view.final_progress)
        return view

    async def resuming(self) -> None:
        """This request answers the call's previous round (MRTR): the lines its workflow
        tool reported until then went to that round's request, not again to this one."""
        if self.workflow_tool and (body := await self._body()) is not None:
            self.relay.heard_before(body.report, body.lines)

    async def _body_last_word(self) -> None:
        """A workflow tool's lines the reads passed over, its last one included: the task's
        end does not carry them, its workflow's memo does (one ``describe``)."""
        if (body := await self._body()) is not None:
            await self.relay.heard(body.report, lines=body.lines)

    async def _body(self) -> LegStatus | None:
        """What the workflow tool's workflow last reported; ``None`` if Temporal will not say
        (the call's answer matters more than its last line)."""
        assert self.task_id is not None
        try:
            return await self._engine.body_progress(self.task_id, self._scope)
        except (RPCError, PayloadDecryptionError) as err:
            logger.debug("Reading the lines of task %s failed: %s", self.task_id, err)
            return None

    # -- what it hears ---------------------------------------------------------

    def read_due(self, now: float) -> bool:
        """Whether the read loop should ask Temporal about this call now."""
        return (
            self._found is not None
            and not self._found.done()
            and not self._reading
            and not self._leg_here
            and self._following is None
            and now - self._last_read >= self._calls.tick_s
        )

    def read_order(self) -> float:
        return self._last_read

    async def read(self) -> None:
        """One ``tasks/get`` read: a park, or what the running leg reports."""
        self._reading = True
        try:
            assert self.task_id is not None
            read = await self._engine.read(self.task_id, self._scope)
        except (RPCError, MCPError, PayloadDecryptionError) as err:  # the next read may work
            logger.debug("Reading task %s failed: %s", self.task_id, err)
            return
        finally:
            self._reading = False
            self._last_read = self._loop.time()
        task = read.task
        if task.status in TERMINAL_STATUSES:
            return  # a close comes with its last report
        await self.relay.heard(read.report, status=task.status_message, lines=read.lines)
        if task.status == "input_required" and task.input_requests:
            self._resolve(task)  # what the body said before it asked goes first
        else:
            self._until_stuck_too_long(read)

    def _until_stuck_too_long(self, read: TaskRead) -> None:
        """End the wait once every read for ``stuck_call_timeout_s`` found the body failing."""
        found = self._found
        if self._stuck.too_long(read.stuck, self._loop.time()) and found and not found.done():
            assert read.stuck is not None
            found.set_exception(self._answers().stuck(read.stuck))

    async def _hear(self, queue: NewsQueue) -> None:
        while True:
            news = await queue.get()
            if isinstance(news, LegBegan):
                self._leg_here, self._asking = True, False
            elif isinstance(news, LegEnded):
                self._leg_here, self._asking = False, news.asking
                if news.asking and self._found is not None:
                    self._follow()
            elif isinstance(news, LogLine):
                await self.relay.line(news)
            elif isinstance(news, LinesDropped):
                await self.relay.line(news.as_line())
            else:
                await self.relay.heard(news)

    def _follow(self) -> None:
        """Follow the history until the task has parked (or ended): it is about to."""
        if self._following is None:
            self._following = asyncio.create_task(self._until_parked())

    async def _until_parked(self) -> None:
        assert self.task_id is not None
        try:
            async with contextlib.aclosing(watch(self._engine, self.task_id, self._scope)) as views:
                async for view in views:
                    if view.status in TERMINAL_STATUSES:
                        return  # the close event's long poll answers with its last report
                    if view.status == "input_required" and view.input_requests:
                        self._resolve(view)
                        return
        except (RPCError, MCPError, PayloadDecryptionError) as err:
            logger.debug("Following task %s failed: %s", self.task_id, err)
        finally:
            self._following = None  # what is left is the read loop's

    def _resolve(self, view: GetTaskResult) -> None:
        if self._found is not None and not self._found.done():
            self._found.set_result(view)

    def _stop_listening(self) -> None:
        if self._listening is not None and self._calls.leg_news is not None:
            workflow_id, queue, hearing = self._listening
            self._calls.leg_news.stop(workflow_id, queue)
            hearing.cancel()
            self._listening = None


async def _cancelled(task: asyncio.Future[Any] | None) -> None:
    if task is None or task.done():
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, RPCError):
        await task

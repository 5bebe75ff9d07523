"""The read loop of the waiting calls: one periodic reader per front end, within a budget.

Every tick (``timing.TICK_S``) it looks at the calls that wait (``call_waits``)
and, spread over the tick so that neither Temporal nor the event loop sees a
burst: nudges each call whose client gave a ``progressToken`` (its due report,
or a keepalive), and reads those due a read (``CallWait.read_due``), least
recently read first, within ``reads_per_second``. The budget is a rate, not a
count per tick: a tick of half a second reads half as many each time, and a
budget below one read a tick carries over to the next (``ReadBudget``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Collection
from typing import Protocol

from fastmcp_temporal.server.protocol.call_progress import CallProgress
from fastmcp_temporal.timing import TICK_S


class Readable(Protocol):
    """What the loop needs of a waiting call (``call_waits.CallWait``)."""

    relay: CallProgress

    def read_due(self, now: float) -> bool: ...

    def read_order(self) -> float: ...

    async def read(self) -> None: ...


class ReadBudget:
    """How many reads a tick may start, so that they are ``reads_per_second`` whatever the tick.

    Each tick earns ``reads_per_second * tick_s`` reads; what a tick does not spend
    carries over, up to one read more than a tick earns (a fraction is spent on a
    later tick, a quiet spell earns no burst). Reads still under way count against
    the budget: a Temporal slow to answer is not asked more at once than a second's
    worth (or a tick's, if the tick is longer).
    """

    def __init__(self, reads_per_second: int, tick_s: float) -> None:
        self._per_tick = reads_per_second * tick_s
        self._most_under_way = max(reads_per_second, math.ceil(self._per_tick))
        self._credit = 0.0

    def this_tick(self, under_way: int) -> int:
        """The reads this tick may start, ``under_way`` reads not done yet."""
        self._credit = min(self._credit + self._per_tick, self._per_tick + 1)
        return max(min(math.floor(self._credit), self._most_under_way - under_way), 0)

    def spend(self, reads: int) -> None:
        self._credit -= reads


class ReadLoop:
    """Tends ``calls`` once a tick (see the module docstring)."""

    def __init__(
        self, calls: Collection[Readable], reads_per_second: int, *, tick_s: float = TICK_S
    ) -> None:
        self._calls = calls
        self.tick_s = tick_s
        self.budget = ReadBudget(reads_per_second, tick_s)
        self.reads: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.tick_s)
            self.tend(loop.time(), loop.call_later)

    def tend(self, now: float, at: Callable[..., object]) -> None:
        """Schedule this tick's nudges and reads with ``at(delay, callback, *args)``."""
        calls = list(self._calls)
        # A call without a progressToken has nothing to be nudged for: its client hears
        # its log lines as they come, and no progress or keepalive at all (as inline).
        talking = [call.relay for call in calls if call.relay.wanted]
        for index, relay in enumerate(talking):
            at(index / len(talking) * self.tick_s, relay.nudge)
        due = sorted((call for call in calls if call.read_due(now)), key=lambda c: c.read_order())
        room = min(self.budget.this_tick(len(self.reads)), len(due))
        self.budget.spend(room)
        for index, call in enumerate(due[:room]):
            at(index / room * self.tick_s, self._read, call)

    def _read(self, call: Readable) -> None:
        if call in self._calls and call.read_due(asyncio.get_running_loop().time()):
            read = asyncio.create_task(call.read())
            self.reads.add(read)
            read.add_done_callback(self.reads.discard)

"""``SharedTail``: one history long poll at a time for a durable sync call's wait and relay."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fastmcp_temporal.server.tasks.task_watch import SharedTail


class FakeTail:
    """Answers queued by the test; counts the reads."""

    def __init__(self) -> None:
        self.answers: asyncio.Queue[Any] = asyncio.Queue()
        self.reads = 0

    async def next_change(self) -> Any:
        self.reads += 1
        answer = await self.answers.get()
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_every_reader_gets_every_answer_from_one_read() -> None:
    fake = FakeTail()
    shared = SharedTail(fake)  # type: ignore[arg-type]
    first, second = shared.reader(), shared.reader()
    both = asyncio.gather(first.next_change(), second.next_change())
    await asyncio.sleep(0)
    fake.answers.put_nowait(["a"])
    assert await both == [["a"], ["a"]]
    assert fake.reads == 1
    # A reader that is behind still gets what was read while it was away.
    fake.answers.put_nowait(["b"])
    assert await first.next_change() == ["b"]
    assert await second.next_change() == ["b"]
    assert fake.reads == 2
    await shared.close()


async def test_a_failed_read_reaches_every_reader_and_the_next_reads_again() -> None:
    fake = FakeTail()
    shared = SharedTail(fake)  # type: ignore[arg-type]
    first, second = shared.reader(), shared.reader()
    fake.answers.put_nowait(RuntimeError("away"))
    with pytest.raises(RuntimeError):
        await first.next_change()
    with pytest.raises(RuntimeError):
        await second.next_change()
    fake.answers.put_nowait(None)
    assert await second.next_change() is None
    assert await first.next_change() is None
    await shared.close()


async def test_a_reader_that_stops_waiting_leaves_the_read_to_the_others() -> None:
    fake = FakeTail()
    shared = SharedTail(fake)  # type: ignore[arg-type]
    leaving, staying = shared.reader(), shared.reader()
    waiting = asyncio.ensure_future(leaving.next_change())
    await asyncio.sleep(0)
    waiting.cancel()
    shared.drop(leaving)
    staying_read = asyncio.ensure_future(staying.next_change())
    await asyncio.sleep(0)
    fake.answers.put_nowait(["c"])
    assert await staying_read == ["c"]
    assert fake.reads == 1
    # close() ends a read in flight.
    pending = asyncio.ensure_future(staying.next_change())
    await asyncio.sleep(0)
    await shared.close()
    with pytest.raises(asyncio.CancelledError):
        await pending

"""Calls whose host just gave up, until what becomes of their task is decided.

A host that timed out a plain call (its model is told "timed out") calls again at
once, often before the cancel's reason has arrived and the task has been recorded
undelivered (``reattach``, ``cancel_reasons``). While the first call decides, the
same call made again on this front end waits for that decision, instead of
starting the body again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

#: How long a call made again waits for a call of the same key to settle its task's fate
#: (a cancel's reason, ``cancel_reasons.REASON_WAIT_S``, then a Temporal write or two).
GIVING_UP_WAIT_S = 5.0


class CallFates:
    """The calls of this front end deciding their task's fate, by call key."""

    def __init__(self) -> None:
        self._giving_up: dict[str, asyncio.Event] = {}

    @contextlib.contextmanager
    def giving_up(self, call_key: str | None) -> Iterator[None]:
        """While inside, the call keyed ``call_key`` decides what becomes of its task.

        A host that timed out calls again at once (its model is told "timed out"),
        often before the cancel's reason has arrived and the task has been recorded
        undelivered; ``given_up`` lets that call wait for the decision here instead
        of starting the body again."""
        if call_key is None:
            yield
            return
        decided = self._giving_up[call_key] = asyncio.Event()
        try:
            yield
        finally:
            decided.set()
            if self._giving_up.get(call_key) is decided:
                del self._giving_up[call_key]

    async def given_up(self, call_key: str | None) -> None:
        """Return once no call of this front end is deciding the fate of ``call_key``'s task
        (at most ``GIVING_UP_WAIT_S``: past it the call looks on as if none were)."""
        decided = self._giving_up.get(call_key) if call_key is not None else None
        if decided is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(decided.wait(), GIVING_UP_WAIT_S)

"""Tests that must run with no other test of the run beside them, under ``pytest-xdist``.

The suite runs in parallel (``-n`` in ``pyproject.toml``): it mostly waits on
Temporal (heartbeat timeouts, retry backoff, worker start-ups), so several
pytest workers share the two cores well. A few tests load the session's shared
Temporal so hard (the 1000-task load test) that tests running beside them miss
their own short windows (a 1 s MRTR window, a 2 s ``tasks/get`` bound): those are
marked ``exclusive``.

A reader-writer lock over files in a directory of this checkout, shared by every
xdist worker of every run in it: each test holds it shared; an ``exclusive``
test holds it exclusively.
``flock`` does not queue a waiting writer ahead of new readers, so a turnstile
lock does: an exclusive test takes the turnstile first and keeps it while it
waits and runs, and every other test passes through the turnstile before
taking its shared lock. Without xdist the locks are never contended.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MARKER = "exclusive"


def lock_dir() -> Path:
    """One directory per checkout, shared by every run in it: CI runs the 4.1 and the 4.2
    suites side by side, and a test of one must not run beside the other's load test."""
    checkout = hashlib.sha256(str(Path(__file__).resolve().parent).encode()).hexdigest()[:12]
    directory = Path(tempfile.gettempdir()) / f"fastmcp-temporal-tests-{os.getuid()}-{checkout}"
    directory.mkdir(exist_ok=True)
    return directory


@contextmanager
def _flock(path: Path, operation: int) -> Iterator[None]:
    with path.open("a") as file:
        fcntl.flock(file, operation)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


@contextmanager
def turn(directory: Path, *, exclusive: bool) -> Iterator[None]:
    """Hold this test's turn: shared with other tests, or alone if ``exclusive``."""
    turnstile, tests = directory / "tests.turnstile", directory / "tests.lock"
    if exclusive:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(tests, fcntl.LOCK_EX):
            yield
        return
    with _flock(turnstile, fcntl.LOCK_EX):
        pass  # wait behind an exclusive test that is waiting or running
    with _flock(tests, fcntl.LOCK_SH):
        yield


def exclusive_first(items: list[pytest.Item]) -> None:
    """Collect ``exclusive`` tests first: at the start the other workers hold only their
    first tests, so the wait for the lock is short; late in the run it would wait for
    the longest tests (up to ~70 s) with every other worker queued behind it."""
    items.sort(key=lambda item: item.get_closest_marker(MARKER) is None)

"""Ports for the servers the tests start, chosen where the kernel never hands one out.

A test that picks a "free" port by binding port 0 and closing the socket gets
one from the kernel's ephemeral range, and so does everything that starts
meanwhile: an embedded Temporal dev server's gRPC, HTTP and internal service
ports, a subprocess's own ``free_port()``, a client's outgoing connection. In
the window before the test's server binds its port, any of them can take it.
CI saw exactly that: ``run_server_async`` picked a port, the server's lifespan
started the embedded Temporal, Temporal's gRPC listener got the same port, and
the MCP client's HTTP/1.1 request reached an HTTP/2 server ("illegal request
line").

So every port a test chooses comes from below the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``), where bind-to-0 never lands, in a
slice of its own for each pytest-xdist worker, handed out in turn so a process
does not reuse a port it gave out a moment ago. Each is checked free before it
is handed out (a server of another run may hold it).
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.utilities import tests as fastmcp_tests

#: Lowest port handed out (below it: well-known services people run locally).
FLOOR = 10_000
#: Slices of the pool: one per xdist worker (``gw0``..), more workers wrap around.
SLICES = 8


def _ephemeral_floor() -> int:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default, and what the test machines have


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    digits = worker.removeprefix("gw")
    return int(digits) if digits.isdigit() else 0


def _candidates() -> Iterator[int]:
    """This process's slice of the pool, from a random start, round and round."""
    ceiling = _ephemeral_floor()
    if ceiling - FLOOR < SLICES * 64:
        raise RuntimeError(
            f"the ephemeral port range starts at {ceiling}: no room below it for test ports"
        )
    size = (ceiling - FLOOR) // SLICES
    first = FLOOR + (_worker_index() % SLICES) * size
    start = random.randrange(size)
    return itertools.cycle([first + (start + step) % size for step in range(size)])


_ports = _candidates()


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port on 127.0.0.1 that nothing holds and nothing else will be given."""
    for port in _ports:
        if _is_free(port):
            return port
    raise AssertionError("unreachable: the cycle is endless")


@asynccontextmanager
async def run_server_async(server: FastMCP, **options: Any) -> AsyncIterator[str]:
    """FastMCP's ``run_server_async`` on a port of :func:`free_port` (its own default
    picks an ephemeral one, which the server's lifespan may give to Temporal)."""
    options.setdefault("port", free_port())
    async with fastmcp_tests.run_server_async(server, **options) as url:
        yield url

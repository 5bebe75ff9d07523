"""A pre-imported Python that forks the suite's Python processes (``tests.forks``).

Every Python process a test starts -- a worker, a front end, a remote MCP server,
the CLI -- spends 2-3 CPU-seconds importing FastMCP, the MCP types and temporalio
before it does anything; on two cores that was a third of the suite's CPU. This
process imports them once and forks a child per request, so a test's process
starts with them already in memory, like a preloading web server's workers.

The child is a real process: its own PID (and session, if asked), its own file
descriptors for stdin/stdout/stderr, the request's argv, environment, working
directory and ``sys.path`` (as a fresh interpreter would build it), a fresh random
seed; it runs the program as ``__main__`` and exits through the interpreter's normal
shutdown. Tests signal and kill it by PID as before. Only what this module imports
is shared, and nothing it imports reads the environment at import time except
FastMCP's settings, so ``tests.forks`` starts a real interpreter for a request that
changes ``FASTMCP_*`` variables.

Protocol, one Unix-socket connection per process: the client sends one JSON line
(``argv`` to run, ``env``, ``cwd``, ``new_session``) with three descriptors
(``socket.send_fds``), reads back ``{"pid": ...}``, and later ``{"status": ...}``
(``os.waitstatus_to_exitcode``) when the child has exited. This process stays single-
threaded (forking is only safe so) and exits when its parent (the pytest worker) does.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import runpy
import select
import socket
import sys
from dataclasses import dataclass
from typing import Any

#: What every test process imports first (``python -X importtime``: the MCP types'
#: pydantic models, FastMCP's context and settings, temporalio's bridge), and what
#: the forked children still imported for themselves (``py-spy record --subprocesses``
#: over the suite, a quarter of their samples): griffe, which FastMCP imports for the
#: first tool with a docstring, uvicorn's protocols and anyio's backend, which load
#: when a server starts serving, and the HTTP clients' transports. Not the peer
#: (``fastmcp_tasks``): importing it registers its client extension for every client.
PRELOAD = (
    "fastmcp",
    "fastmcp.server.context",
    "mcp",
    "temporalio.client",
    "temporalio.worker",
    "uvicorn",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
    "anyio._backends._asyncio",
    "griffe",
    "httpx",
    "httpcore",
    "httpcore2",
    "jsonschema",
    "fastmcp_temporal",
    "fastmcp_temporal.server.extension",
    "fastmcp_temporal.server.cli.main",
)


#: This process's environment before any request: the ``PYTHONPATH`` entries to
#: drop from ``sys.path`` when a request brings its own.
_ENVIRON_AT_START: dict[str, str] = {}


@dataclass
class Job:
    """What a forked child runs: ``kind`` is ``module`` (``-m``), ``path`` or ``code`` (``-c``)."""

    kind: str
    target: str
    argv: list[str]


def serve(socket_path: str) -> Job:
    """Answer requests until the parent exits; returns only in a forked child."""
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    print("zygote ready", flush=True)
    children: dict[int, socket.socket] = {}
    while os.getppid() == parent:
        readable, _, _ = select.select([listener], [], [], 0.05)
        if readable:
            connection, _ = listener.accept()
            job = _start(connection, listener, children)
            if job is not None:
                return job  # the child
        _reap(children)
    raise SystemExit(0)


def _start(
    connection: socket.socket, listener: socket.socket, children: dict[int, socket.socket]
) -> Job | None:
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request: dict[str, Any] = json.loads(message)
    set_up, child_set_up = os.pipe()
    pid = os.fork()
    if pid:
        os.close(child_set_up)
        os.read(set_up, 1)  # its session and descriptors are in place: the PID is usable
        os.close(set_up)
        for fd in fds:
            os.close(fd)
        children[pid] = connection
        connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        return None
    os.close(set_up)
    listener.close()
    for other in children.values():
        other.close()
    connection.close()
    if request["new_session"]:
        os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()
    os.write(child_set_up, b"1")
    os.close(child_set_up)
    return Job(**request["job"])


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is not None:
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):  # the test has let go of the process
                connection.sendall(json.dumps({"status": code}).encode() + b"\n")
            connection.close()


def run(job: Job) -> None:
    """Run the job as a fresh interpreter would run ``python <argv>``."""
    sys.argv = job.argv
    path0 = {"module": os.getcwd(), "path": os.path.dirname(os.path.abspath(job.target))}
    base = [entry for entry in sys.path[1:] if entry not in _pythonpath(_ENVIRON_AT_START)]
    sys.path[:] = [path0.get(job.kind, ""), *_pythonpath(os.environ), *base]
    try:
        if job.kind == "module":
            runpy.run_module(job.target, run_name="__main__", alter_sys=True)
        elif job.kind == "path":
            runpy.run_path(job.target, run_name="__main__")
        else:
            exec(compile(job.target, "<string>", "exec"), {"__name__": "__main__"})
    except Exception as error:  # as the interpreter reports it, without this module's frames
        traceback = error.__traceback__
        while traceback is not None and _ours(traceback.tb_frame.f_code.co_filename):
            traceback = traceback.tb_next
        sys.excepthook(type(error), error.with_traceback(traceback), traceback)
        raise SystemExit(1) from None


def _ours(filename: str) -> bool:
    return filename == __file__ or filename.startswith("<frozen runpy>")


def _pythonpath(environ: dict[str, str]) -> list[str]:
    return [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]


def memoize_default_build_id() -> None:
    """Compute temporalio's default worker build id now, memoized for every child.

    Without an explicit build id, a ``Worker`` hashes the code of every loaded module
    (about 0.3 CPU-seconds over FastMCP, the MCP SDK and temporalio), once per
    process: computed here before the forks, the children inherit the value instead
    of each hashing the same modules again. temporalio exports
    ``load_default_build_id`` only from its private ``_worker`` module (the package
    itself never needs it, so it is not in ``fastmcp_temporal._compat``). Delete when
    it is public, or when the zygote goes.
    """
    from temporalio.worker._worker import load_default_build_id

    load_default_build_id()


if __name__ == "__main__":
    _ENVIRON_AT_START.update(os.environ)
    for name in PRELOAD:
        with contextlib.suppress(ImportError):  # only a head start: a child imports it itself
            __import__(name)
    memoize_default_build_id()
    run(serve(sys.argv[1]))

"""``popen`` and ``run``: ``subprocess``'s, with Python processes forked pre-imported.

A test that starts ``python -m tests.processes.<x>``, a script, or one of this
venv's console scripts (``fastmcp-temporal worker``, ``fastmcp run``) gets a real
process forked from ``tests.processes.zygote``, which has FastMCP, the MCP types
and temporalio imported already: the 2-3 CPU-seconds each of those processes spent
importing them went to a third of the suite's CPU on two cores. Everything else
(the ``temporal`` binary, Chromium, compose) and every call these helpers cannot
reproduce exactly (a shell, ``preexec_fn``, an environment that changes what FastMCP
reads at import time) goes to ``subprocess`` unchanged.

The returned ``ForkedProcess`` has what the suite uses of ``subprocess.Popen``:
``pid``, ``args``, ``returncode``, ``stdin``/``stdout``/``stderr``, ``poll``,
``wait``, ``communicate``, ``send_signal``/``terminate``/``kill``, a ``with`` block.
Its exit status comes from the zygote (its parent), so ``poll`` and ``wait`` see
exit codes and signals as for a child of one's own.

``FASTMCP_TEMPORAL_TEST_FORKS=0`` starts every process as a fresh interpreter, the
way to check that a failure is not the forking's.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SWITCH = "FASTMCP_TEMPORAL_TEST_FORKS"

_lock = threading.Lock()
_zygote: _Zygote | None = None


def popen(args: Sequence[str], **options: Any) -> Child:
    """``subprocess.Popen(args, **options)``; a Python program is forked pre-imported."""
    job = _job(args, options)
    if job is None:
        return subprocess.Popen(args, **options)
    return _zygote_for_this_process().start(list(args), job, options)


def run(
    args: Sequence[str],
    *,
    input: str | bytes | None = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` through ``popen``."""
    if capture_output:
        options.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        options["stdin"] = subprocess.PIPE
    if _job(args, options) is None:
        return subprocess.run(args, input=input, timeout=timeout, check=check, **options)
    process = popen(args, **options)
    assert isinstance(process, ForkedProcess)
    with process:
        try:
            out, err = process.communicate(input, timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    if check and process.returncode:
        raise subprocess.CalledProcessError(process.returncode, args, out, err)
    return subprocess.CompletedProcess(list(args), process.returncode, out, err)


#: ``Popen`` options a forked process honours (others go to ``subprocess``).
_SUPPORTED = {"cwd", "env", "stdin", "stdout", "stderr", "start_new_session", "text", "encoding"}
#: Variables the zygote's imports read at import time (FastMCP's settings, and the
#: rich console its log handler creates): a request that changes one needs a fresh
#: interpreter.
_READ_AT_IMPORT = (
    "FASTMCP_",
    "COLUMNS",
    "LINES",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_",
    "JUPYTER_",
)
_LAZY = ("FASTMCP_TEMPORAL_",)


def _job(args: Sequence[str], options: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the zygote runs for ``args``, or ``None`` for ``subprocess``."""
    if os.environ.get(SWITCH) == "0" or isinstance(args, (str, bytes)) or not args:
        return None
    if set(options) - _SUPPORTED or not _same_imports(options.get("env")):
        return None
    program, *rest = (str(arg) for arg in args)
    if program == sys.executable:
        while rest and rest[0] == "-u":
            rest = rest[1:]
        if not rest:
            return None
        if rest[0] == "-m" and len(rest) > 1:
            return {"kind": "module", "target": rest[1], "argv": [rest[1], *rest[2:]]}
        if rest[0] == "-c" and len(rest) > 1:
            return {"kind": "code", "target": rest[1], "argv": ["-c", *rest[2:]]}
        if rest[0].startswith("-"):
            return None
        return {"kind": "path", "target": rest[0], "argv": rest}
    if Path(program).parent == BIN and _is_our_python_script(Path(program)):
        return {"kind": "path", "target": program, "argv": [program, *rest]}
    return None


def _is_our_python_script(path: Path) -> bool:
    try:
        with open(path, "rb") as script:
            return script.readline().strip() == f"#!{sys.executable}".encode()
    except OSError:
        return False


def _same_imports(env: Mapping[str, str] | None) -> bool:
    if env is None:
        return True
    started = _zygote.environ if _zygote is not None else os.environ

    def read_at_import(environ: Mapping[str, str]) -> dict[str, str]:
        return {
            name: value
            for name, value in environ.items()
            if name.startswith(_READ_AT_IMPORT) and not name.startswith(_LAZY)
        }

    return read_at_import(env) == read_at_import(started)


def _zygote_for_this_process() -> _Zygote:
    global _zygote
    with _lock:
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = _Zygote()
            atexit.register(_zygote.stop)
        return _zygote


class _Zygote:
    """This process's ``tests.processes.zygote``, started on first use."""

    def __init__(self) -> None:
        self.environ = dict(os.environ)
        self.socket_path = os.path.join(tempfile.mkdtemp(prefix="zygote-"), "socket")
        self.log = open(self.socket_path + ".log", "wb")  # noqa: SIM115 (open while it runs)
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-m", "tests.processes.zygote", self.socket_path],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        assert ready == b"zygote ready\n", Path(self.socket_path + ".log").read_text()

    def start(self, args: list[str], job: dict[str, Any], options: dict[str, Any]) -> ForkedProcess:
        child_fds, ours = _descriptors(options)
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(self.socket_path)
        env = options.get("env")
        request = {
            "job": job,
            "env": dict(os.environ if env is None else env),
            "cwd": str(options.get("cwd") or os.getcwd()),
            "new_session": bool(options.get("start_new_session")),
        }
        socket.send_fds(channel, [json.dumps(request).encode()], child_fds)
        for fd in set(child_fds) - {0, 1, 2}:
            if fd not in ours.passed_through:
                os.close(fd)
        process = ForkedProcess(args, channel, ours, options)
        return process

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
        self.log.close()


class _ParentEnds:
    def __init__(self) -> None:
        self.stdin: int | None = None
        self.stdout: int | None = None
        self.stderr: int | None = None
        self.passed_through: set[int] = set()


def _descriptors(options: Mapping[str, Any]) -> tuple[list[int], _ParentEnds]:
    """The child's fds 0-2 (to send) and our ends of its pipes."""
    ours = _ParentEnds()
    child: list[int] = []
    for index, name in enumerate(("stdin", "stdout", "stderr")):
        spec = options.get(name)
        if spec is None:
            child.append(index)
            ours.passed_through.add(index)
        elif spec == subprocess.DEVNULL:
            child.append(os.open(os.devnull, os.O_RDWR))
        elif spec == subprocess.PIPE:
            read, write = os.pipe()
            child.append(read if index == 0 else write)
            setattr(ours, name, write if index == 0 else read)
        elif spec == subprocess.STDOUT and index == 2:
            child.append(os.dup(child[1]))
        else:
            fd = spec if isinstance(spec, int) else spec.fileno()
            child.append(fd)
            ours.passed_through.add(fd)
    return child, ours


class ForkedProcess:
    """A process the zygote forked: the parts of ``subprocess.Popen`` the suite uses."""

    def __init__(
        self, args: list[str], channel: socket.socket, ends: _ParentEnds, options: dict[str, Any]
    ) -> None:
        self.args = args
        self.returncode: int | None = None
        self._channel = channel
        self._buffer = b""
        text = bool(options.get("text") or options.get("encoding"))
        self.stdin = _wrap(ends.stdin, "wb", text, options.get("encoding"))
        self.stdout = _wrap(ends.stdout, "rb", text, options.get("encoding"))
        self.stderr = _wrap(ends.stderr, "rb", text, options.get("encoding"))
        message = self._message(timeout=60)
        assert message is not None and "pid" in message, "the zygote did not fork"
        self.pid: int = message["pid"]

    def _message(self, timeout: float | None) -> dict[str, Any] | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self._channel], [], [], wait)
            if not readable:
                return None
            chunk = self._channel.recv(4096)
            if not chunk:  # the zygote is gone: the exit status with it
                return {"status": -signal.SIGKILL}
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def poll(self) -> int | None:
        return self.wait(timeout=0, raising=False)

    def wait(self, timeout: float | None = None, *, raising: bool = True) -> int | None:
        if self.returncode is None:
            message = self._message(timeout)
            if message is None:
                if raising:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
                return None
            self.returncode = message["status"]
            self._channel.close()
        return self.returncode

    def communicate(
        self, input: str | bytes | None = None, timeout: float | None = None
    ) -> tuple[Any, Any]:
        outputs: dict[str, Any] = {}
        readers = [
            threading.Thread(target=lambda n=name, s=stream: outputs.__setitem__(n, s.read()))
            for name, stream in (("out", self.stdout), ("err", self.stderr))
            if stream is not None
        ]
        for reader in readers:
            reader.daemon = True
            reader.start()
        if self.stdin is not None:
            if input:
                self.stdin.write(input)
            self.stdin.close()
        deadline = None if timeout is None else time.monotonic() + timeout
        for reader in readers:
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.wait(remaining)
        return outputs.get("out"), outputs.get("err")

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> ForkedProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()


def _wrap(fd: int | None, mode: str, text: bool, encoding: str | None) -> IO[Any] | None:
    if fd is None:
        return None
    raw = open(fd, mode)  # noqa: SIM115 (the caller closes it)
    if not text:
        return raw
    return io.TextIOWrapper(raw, encoding=encoding, write_through=mode == "wb")


#: What ``popen`` returns: a forked Python program, or ``subprocess``'s.
Child = subprocess.Popen[Any] | ForkedProcess

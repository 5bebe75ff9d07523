"""The keeper: owns a data directory's embedded Temporal while anyone uses it.

    python -P keeper.py <data dir> --namespace NS --address A --http-url H [--ui-url U]
                        [--linger S] -- <temporal server start-dev ...>

Started by the first process that joins (see ``embedded``), in its own session
so the terminal's Ctrl-C and the death of that process do not reach it. It is a
standard-library-only script, run by path: importing the package (FastMCP,
temporalio) would add seconds to every cold start. It

1. takes ``embedded.keeper`` exclusively (its proof of life) -- a second keeper
   for the same directory exits at once;
2. runs the ``temporal`` command it was given; the kernel SIGTERMs that process
   if the keeper dies, even by ``kill -9`` (``PR_SET_PDEATHSIG``);
3. writes ``embedded.json`` once the frontend (its HTTP API) and the Web UI
   answer for the namespace;
4. polls, every 0.2 s, whether it can take ``embedded.users`` exclusively and
   ``embedded.lock`` too (nobody uses the server and nobody is joining); when
   that still holds after the linger, it removes the record, stops Temporal and
   exits. It also exits if Temporal dies, or on SIGTERM/SIGINT.

Being the standard-library-only module of the embedded server, it also holds the
one way both launchers start and stop a ``temporal`` process (``start_group``,
``stop_group``): this keeper, and ``DevServer`` (``devserver``), which runs one
for its own lifetime.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

JOIN_LOCK = "embedded.lock"
USERS_LOCK = "embedded.users"
KEEPER_LOCK = "embedded.keeper"
RECORD = "embedded.json"
TEMPORAL_LOG = "temporal-dev-server.log"
#: Exit codes the joiner tells apart: another keeper runs; Temporal did not come up.
ANOTHER_KEEPER, TEMPORAL_FAILED = 3, 4
_IDLE_POLL_S = 0.2
_READY_TIMEOUT_S = 60.0


def _try_lock(file: IO[bytes]) -> bool:
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _die_with_parent() -> None:
    """In the child, before it runs: ask Linux to SIGTERM it when its parent dies."""
    with contextlib.suppress(Exception):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def start_group(command: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start ``command`` writing to ``log``, in a session of its own, bound to this process.

    Its own session (and process group), so a terminal's Ctrl-C meant for this
    process does not reach it and ``stop_group`` reaches all of it; bound to this
    process by ``PR_SET_PDEATHSIG``, so the kernel SIGTERMs it when this process
    dies, even by ``kill -9``.
    """
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )


def stop_group(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """SIGTERM the process group ``start_group`` made, SIGKILL after ``timeout_s``; wait."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _answers(url: str) -> bool:
    """HTTP 200 (the UI's API answers 503 until its first dial to the frontend works)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


class Keeper:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.stopping = False
        self._users = open(directory / USERS_LOCK, "ab")  # noqa: SIM115
        self._join = open(directory / JOIN_LOCK, "ab")  # noqa: SIM115

    def idle(self) -> bool:
        """Nobody holds a share and nobody is joining; keeps both locks when true."""
        if not _try_lock(self._users):
            return False
        if _try_lock(self._join):
            return True
        fcntl.flock(self._users, fcntl.LOCK_UN)
        return False

    def release(self) -> None:
        fcntl.flock(self._join, fcntl.LOCK_UN)
        fcntl.flock(self._users, fcntl.LOCK_UN)

    def wait_until_ready(self, temporal: subprocess.Popen[bytes], urls: list[str]) -> bool:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        pending = list(urls)
        while pending and time.monotonic() < deadline and not self.stopping:
            if temporal.poll() is not None:
                return False
            if _answers(pending[0]):
                pending.pop(0)
            else:
                time.sleep(0.05)
        return not pending

    def wait_until_unused(self, linger_s: float, temporal: subprocess.Popen[bytes]) -> None:
        """Return once idle for ``linger_s`` (holding both locks), Temporal died, or told to."""
        while not self.stopping:
            time.sleep(_IDLE_POLL_S)
            if temporal.poll() is not None:
                print(f"temporal exited with {temporal.returncode}", file=sys.stderr)
                return
            if not self.idle():
                continue
            if linger_s <= 0:
                return
            self.release()
            time.sleep(linger_s)
            if self.idle():
                return


def keep(args: argparse.Namespace) -> int:
    directory: Path = args.data_dir.resolve()
    proof = open(directory / KEEPER_LOCK, "ab")  # noqa: SIM115  (held until exit)
    if not _try_lock(proof):
        print(f"another keeper owns {directory}", file=sys.stderr)
        return ANOTHER_KEEPER
    keeper = Keeper(directory)

    def on_signal(signum: int, frame: object) -> None:
        keeper.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with open(directory / TEMPORAL_LOG, "ab") as log:
        temporal = start_group(args.command, log)
    try:
        namespace_path = f"/api/v1/namespaces/{args.namespace}"
        urls = [args.http_url + namespace_path]
        urls += [args.ui_url + namespace_path] if args.ui_url else []
        if not keeper.wait_until_ready(temporal, urls):
            print(f"temporal did not come up; see {directory / TEMPORAL_LOG}", file=sys.stderr)
            return TEMPORAL_FAILED
        record = {
            "address": args.address,
            "ui_url": args.ui_url,
            "namespace": args.namespace,
            "data_dir": str(directory),
            "temporal_pid": temporal.pid,
            "keeper_pid": os.getpid(),
        }
        partial = directory / f"{RECORD}.partial"
        partial.write_text(json.dumps(record))
        partial.replace(directory / RECORD)  # atomic: a joiner never reads half a record
        keeper.wait_until_unused(args.linger, temporal)
        with contextlib.suppress(FileNotFoundError):
            (directory / RECORD).unlink()
    finally:
        stop_group(temporal)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="keeper")
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--http-url", required=True)
    parser.add_argument("--ui-url")
    parser.add_argument("--linger", type=float, default=0.0)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.command = argv[split + 1 :]
    if not args.command:
        parser.error("no temporal command after --")
    raise SystemExit(keep(args))


if __name__ == "__main__":
    main()

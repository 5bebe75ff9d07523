"""The ``fastmcp-temporal`` command.

    fastmcp-temporal codec-server [--port 8081] decrypted payloads for the Temporal UI/CLI
    fastmcp-temporal worker server.py[:mcp]   a worker process for a server's task tools
    fastmcp-temporal tasks list|show|cancel   operate tasks over Temporal visibility

Each subcommand lives in the module of its concern and registers itself here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence

from temporalio.exceptions import ApplicationError

from fastmcp_temporal.server.cli import codec_server, operations, worker
from fastmcp_temporal.server.core.settings import SettingsError, load_settings
from fastmcp_temporal.server.embedded.shared import NoEmbeddedServer
from fastmcp_temporal.server.temporal.connection import TemporalUnreachable, exit_now
from fastmcp_temporal.server.temporal.sandbox_errors import WorkflowSandboxError, causes

Handler = Callable[[argparse.Namespace], int]
#: Errors whose message says it all (no type name in front).
_SELF_EXPLAINING = (
    NoEmbeddedServer,
    TemporalUnreachable,
    WorkflowSandboxError,
    ApplicationError,
    ValueError,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastmcp-temporal", description="Durable MCP tasks for FastMCP, on Temporal."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    codec_server.register(commands)
    worker.register(commands)
    operations.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand; what goes wrong is one line on stderr and exit 1, never a traceback.

    ``FASTMCP_TEMPORAL_DEBUG=1`` re-raises instead, for bug reports.
    """
    given = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(operations.dashed_task_id_last(given))
    handler: Handler = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        return exit_now(130)
    except BrokenPipeError:
        # The reader went away (`... | head`): stop writing to it, say so once.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _fail(args, "output closed early (broken pipe)")
    except Exception as err:
        if _debugging():
            raise
        return _fail(args, one_line(err))


def one_line(err: BaseException) -> str:
    """What went wrong, as one line: the error and its innermost cause.

    An exception group stands for its first leaf. The cause is followed through
    ``__cause__`` and the context it was raised in (not a context its author
    suppressed with ``from None``), so ``RuntimeError: Failed validating workflow
    X`` is printed with what failed inside it. An error of ours whose message
    already says it all (``_SELF_EXPLAINING``) ends the walk: it was written with
    its cause in mind.
    """
    chain = list(causes(err))
    for link in chain:
        if isinstance(link, _SELF_EXPLAINING):
            return _text(link)
    outer, innermost = chain[0], chain[-1]
    described = f"{type(outer).__name__}: {_text(outer)}"
    if innermost is outer:
        return described
    return f"{described} (cause: {type(innermost).__name__}: {_text(innermost)})"


def _text(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _debugging() -> bool:
    """``FASTMCP_TEMPORAL_DEBUG``; a bad setting (maybe the error at hand) is no debugging."""
    try:
        return load_settings().debug
    except SettingsError:
        return False


def _fail(args: argparse.Namespace, message: str) -> int:
    with contextlib.suppress(OSError):
        print(f"fastmcp-temporal {args.command}: {message}", file=sys.stderr)
    return exit_now(1)


if __name__ == "__main__":
    sys.exit(main())

"""The ``fastmcp-temporal`` command.

    fastmcp-temporal codec-server [--port 8081] decrypted payloads for the Temporal UI/CLI
    fastmcp-temporal worker server.py[:mcp]   a worker process for a server's task tools
    fastmcp-temporal tasks list|show|cancel   operate tasks over Temporal visibility

Each subcommand lives in the module of its concern and registers itself here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from fastmcp_temporal.server import codec_server, operations, worker

Handler = Callable[[argparse.Namespace], int]


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
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())

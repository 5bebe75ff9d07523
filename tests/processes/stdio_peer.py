"""The remote MCP server of the stdio remote-call tests: ``remote_peer``'s tools over stdio.

    python -m tests.processes.stdio_peer --kind ours|peer --tag T [--address A --task-queue Q]

Started by the orchestrating worker itself (``RemoteServer.stdio``), which speaks
MCP over this process's stdin and stdout: nothing else may print to stdout. No
token (a stdio server is the worker's own child). ``--tag`` only marks the command
line, so a test can find its own process (``pgrep -f``) after the worker stopped.
"""

from __future__ import annotations

import argparse

from tests.processes.remote_peer import build


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["ours", "peer"], required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--address")
    parser.add_argument("--task-queue")
    args = parser.parse_args()
    build(args.kind, None, args.address, args.task_queue, name="stdio").run(
        transport="stdio", show_banner=False
    )


if __name__ == "__main__":
    main()

"""``python -m fastmcp_temporal.server.cli``: the ``fastmcp-temporal`` command, scriptless."""

import sys

from fastmcp_temporal.server.cli.main import main

if __name__ == "__main__":  # importing it (as install-check does) runs nothing
    sys.exit(main())

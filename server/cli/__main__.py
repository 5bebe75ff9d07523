"""``python -m fastmcp_temporal.server.cli``: the ``fastmcp-temporal`` command, scriptless."""

import sys

from fastmcp_temporal.server.cli.main import main

sys.exit(main())

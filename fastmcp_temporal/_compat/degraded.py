"""The degraded path every touchpoint of ``_compat`` shares: said once, in a warning.

When a private name a touchpoint reads is gone from the installed release, what
it served stops working and the process goes on; the first use logs one warning
naming the missing name, what stops working and where the tested releases are
listed. Kept in one place so every library's module says it the same way.
"""

from __future__ import annotations

import logging

#: The package's logger (``fastmcp_temporal._compat``), whichever module warns.
logger = logging.getLogger(__package__)

_warned: set[str] = set()


def _warn_once(message: str) -> None:
    """A degraded path, said once per process: what stops working, and why."""
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


def _degraded(missing: str, consequence: str) -> None:
    _warn_once(
        f"fastmcp-temporal: this FastMCP / MCP SDK has no {missing}: {consequence} "
        "(pyproject.toml bounds the releases tested; see docs/reference/compatibility.md)"
    )

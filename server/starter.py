"""Deprecated path (0.1): ``ToolOptions`` is ``from fastmcp_temporal import ToolOptions``.

The 0.1 docs imported ``ToolOptions`` from here; the module moved to
``fastmcp_temporal.server.tasks.starter``. Every name read from this module
warns ``DeprecationWarning`` with the import to use; removed no earlier than
0.2.0 (``fastmcp_temporal._surface``).
"""

from fastmcp_temporal._surface import moved

__getattr__ = moved(__name__)

"""Deprecated path (0.1): ``task_data_converter`` is ``from fastmcp_temporal import ...``.

The 0.1 encryption guide imported ``task_data_converter`` from here; the module
moved to ``fastmcp_temporal.server.core.codec``. Every name read from this
module warns ``DeprecationWarning`` with the import to use; removed no earlier
than 0.2.0 (``fastmcp_temporal._surface``).
"""

from fastmcp_temporal._surface import moved

__getattr__ = moved(__name__)

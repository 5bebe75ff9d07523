"""Deprecated path (0.1): ``DevServer`` is ``from fastmcp_temporal import DevServer``.

A 0.1 example imported ``free_port`` from here (it is not public: bind a socket
to port 0); the module moved to ``fastmcp_temporal.server.embedded.devserver``.
Every name read from this module warns ``DeprecationWarning`` with the import to
use; removed no earlier than 0.2.0 (``fastmcp_temporal._surface``).
"""

from fastmcp_temporal._surface import moved

__getattr__ = moved(__name__)

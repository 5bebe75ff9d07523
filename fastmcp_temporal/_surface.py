"""The public surface: which modules users import from, and old paths kept for a while.

Users import from four modules only -- ``fastmcp_temporal``, ``.workflows``,
``.client`` and ``.testing`` -- each with an ``__all__``; everything else is
internal and moves when the code does (``tests/test_public_api.py`` pins each
``__all__`` and checks that every doc and example imports from these alone).

The 0.1 docs told users to import a few names from internal modules that have
since moved (``server/`` was grouped by concern). Those paths keep working as
small modules under ``server/`` whose every attribute read goes through
``moved``: it returns the very object from its new home and warns
``DeprecationWarning`` with the import to write instead. They are removed no
earlier than ``REMOVED_IN``, the first minor release after 0.1.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable

PUBLIC_MODULES = (
    "fastmcp_temporal",
    "fastmcp_temporal.workflows",
    "fastmcp_temporal.client",
    "fastmcp_temporal.testing",
)
#: The first release that may drop the paths in ``MOVED``.
REMOVED_IN = "0.2.0"
#: Each old module a 0.1 doc imported from -> the module its names moved to.
MOVED: dict[str, str] = {
    "fastmcp_temporal.server.codec": "fastmcp_temporal.server.core.codec",
    "fastmcp_temporal.server.devserver": "fastmcp_temporal.server.embedded.devserver",
    "fastmcp_temporal.server.starter": "fastmcp_temporal.server.tasks.starter",
}


def moved(old: str) -> Callable[[str], object]:
    """The module ``__getattr__`` of the shim at ``old`` (PEP 562): forward, and warn."""
    new = MOVED[old]

    def __getattr__(name: str) -> object:
        if name.startswith("__"):  # import machinery probing (__path__, __wrapped__ ...)
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        try:
            value = getattr(importlib.import_module(new), name)
        except AttributeError:
            raise AttributeError(f"module {old!r} has no attribute {name!r}") from None
        warnings.warn(
            f"{old}.{name} is deprecated: use {replacement(name, value, new)}; "
            f"the old path is removed in {REMOVED_IN} at the earliest",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__


def replacement(name: str, value: object, new: str) -> str:
    """The import to write instead: a public module's, else (not public) the new internal one."""
    for public in PUBLIC_MODULES:
        try:
            module = importlib.import_module(public)
        except ImportError:  # fastmcp_temporal.testing needs pytest, not in a plain install
            continue
        if name in getattr(module, "__all__", ()) and getattr(module, name) is value:
            return f"`from {public} import {name}`"
    return f"`from {new} import {name}` (internal: not public API, it may move again)"

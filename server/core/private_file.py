"""A secret a data directory keeps for every process that uses it: created once, owner-only.

The embedded default needs secrets nobody configured -- the scope secret that
keys workflow ids (``scope``) and the key that seals callers' credentials
(``credentials``). Each lives in a file of the embedded Temporal's data
directory, so every process of that directory (front ends, ``fastmcp-temporal
worker``) finds the same one, and it lives exactly as long as the tasks stored
next to it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def read_or_create(path: Path, generate: Callable[[], str]) -> tuple[str, bool]:
    """The file's text, else ``generate()`` written there (mode 0600); and whether it was new.

    Written under a private name, then linked into place: a process starting
    on the same data dir sees no file or a whole one, never a partial one, and
    of two processes creating it at once both end up with the first one's value.
    """
    try:
        return path.read_text(), False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    value = generate()
    draft = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(value + "\n")
    try:
        os.link(draft, path)
    except FileExistsError:  # another process was first: use its value
        return path.read_text(), False
    finally:
        draft.unlink()
    return value + "\n", True

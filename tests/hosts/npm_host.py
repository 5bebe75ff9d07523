"""The hosts ``./dev`` installs with npm into ``.hosts/``: where each one is, and whether it runs.

Each has its own npm prefix under ``.hosts/`` (``.hosts/<name>/``), so one host's
dependencies never move another's; a failed install leaves its npm output in
``.hosts/<name>-install.log``, which the tests that need that host quote as they skip.
(Codex, the first, keeps the shared prefix ``.hosts/`` it has always had: ``codex.py``.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hosts import fails_to_start

#: Where ``./dev hosts`` installs them.
HOSTS_DIR = Path(__file__).resolve().parent.parent.parent / ".hosts"


@dataclass(frozen=True)
class NpmHost:
    """One host from npm: what the tests call it, its prefix's name, its command's name."""

    title: str
    name: str
    command: str

    @property
    def prefix(self) -> Path:
        return HOSTS_DIR / self.name

    @property
    def install_log(self) -> Path:
        return HOSTS_DIR / f"{self.name}-install.log"

    @property
    def binary(self) -> Path:
        return self.prefix / "node_modules" / ".bin" / self.command


@functools.cache
def installed(host: NpmHost) -> Path:
    """The host's binary, checked to start; the calling test skips, saying why, if it does not."""
    if not host.binary.exists():
        why = (
            f"its install failed: {host.install_log.read_text().strip()[-500:]}"
            if host.install_log.exists()
            else f"nothing at {host.binary}; ./dev test installs it with npm"
        )
        pytest.skip(f"the {host.title} is not installed: {why}")
    if (why := fails_to_start(host.binary)) is not None:
        pytest.skip(f"the {host.title} does not start here: {why}")
    return host.binary

"""The README's Layout section names every module, so a newcomer finds each one there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# server/ is one folder per part (see tests/test_layering.py): each is its own table.
FOLDERS = (
    "workflows",
    "activities",
    "server",
    *sorted(str(p.parent.relative_to(ROOT)) for p in ROOT.glob("server/*/__init__.py")),
    "fastmcp_temporal",
)


def test_the_layout_lists_every_module_and_no_other() -> None:
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout\n") : readme.index("## Changing workflow code")]
    listed: dict[str, set[str]] = {}
    folder = None
    for line in layout.splitlines():
        if heading := re.fullmatch(r"\| `([\w/]+)/` \| \|", line):
            folder = heading.group(1)
            listed[folder] = set()
        elif folder and (row := re.match(r"\| `(\w+)` \|", line)):
            listed[folder].add(row.group(1))
    on_disk = {
        name: {p.stem for p in (ROOT / name).glob("*.py") if p.name != "__init__.py"}
        for name in FOLDERS
    }
    assert listed == on_disk

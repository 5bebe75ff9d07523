"""``server/`` is a stack of parts: each imports only the parts below it.

The order, top first, is the architecture in one list: the ``fastmcp-temporal``
command drives the extension; the extension wires the MCP side and the payload
store onto the task engine and the Temporal plumbing; those reach Temporal,
embedded or not; and everything speaks ``core``'s vocabulary. Parts on one
floor are peers and do not import each other, so each can be read, changed or
replaced on its own. A new module joins the part whose folder it is in; an
import that would point upward or sideways fails here, read from the source
(no module is imported to check).

Workflow code replays recorded histories (the task workflows outside Temporal's
sandbox, users' workflow tools inside it), so ``workflows/`` and ``activities/``
import nothing of ``server/``. And no two modules of the package import each
other, however indirectly (a type-only import counts): a loop means neither can
be read, or changed, without the other.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

from fastmcp_temporal._surface import MOVED

ROOT = Path(__file__).resolve().parent.parent
SERVER = "fastmcp_temporal.server"

#: The deprecated 0.1 paths (``server/codec.py`` ...): shims that forward to the
#: moved modules, so above every part; ``fastmcp_temporal._surface`` lists them.
SHIMS = tuple(sorted(old.rpartition(".")[2] for old in MOVED))
#: Top floor first; a part may import the parts on the floors below its own.
LAYERS: list[tuple[str, ...]] = [
    SHIMS,
    ("cli",),  # the fastmcp-temporal command: worker, tasks, codec-server
    ("extension",),  # TemporalTasks: wires the parts below into FastMCP
    ("protocol", "payloads"),  # MCP requests -> tasks; payloads stored outside Temporal
    ("tasks", "temporal"),  # SEP-2663 operations as Temporal calls; reaching Temporal, the worker
    ("embedded",),  # the embedded dev server and its keeper
    ("core",),  # the shared vocabulary: wire, scope, visibility, codec, settings, metrics
]
FLOOR = {part: floor for floor, parts in enumerate(LAYERS) for part in parts}

#: Source folder -> the import package it installs as (pyproject's package-dir).
FOLDERS = {
    "server": SERVER,
    "workflows": "fastmcp_temporal.workflows",
    "activities": "fastmcp_temporal.activities",
    "fastmcp_temporal": "fastmcp_temporal",
}


def module_name(path: Path) -> str:
    folder, *rest = path.relative_to(ROOT).with_suffix("").parts
    if rest[-1] == "__init__":
        rest = rest[:-1]
    return ".".join([FOLDERS[folder], *rest])


def sources() -> dict[str, Path]:
    return {module_name(p): p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")}


MODULES = sources()


def imported(name: str, path: Path) -> Iterator[tuple[int, str]]:
    """Every module of this package that ``name`` imports (at any depth, lazily or not)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # ``from pkg import mod`` imports the module; ``from pkg import Name`` the package.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target.startswith("fastmcp_temporal"):
                yield node.lineno, target


def part_of(module: str) -> str | None:
    """The part a module of ``server`` belongs to; ``None`` for the package face itself."""
    if module == SERVER:
        return None
    return module.removeprefix(SERVER + ".").split(".")[0]


def test_every_folder_of_server_is_a_part_of_the_stack() -> None:
    on_disk = {p.parent.name for p in (ROOT / "server").glob("*/__init__.py")}
    on_disk |= {p.stem for p in (ROOT / "server").glob("*.py") if p.stem != "__init__"}
    assert on_disk == set(FLOOR), "a new part (folder or top module) needs its floor in LAYERS"


def test_no_import_in_server_points_upward_or_sideways() -> None:
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith(SERVER + ".") or (own := part_of(name)) is None:
            continue
        for line, target in imported(name, path):
            if target != SERVER and not target.startswith(SERVER + "."):
                continue  # workflows, activities, the client side: below all of server
            other = part_of(target)
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if other is None:
                wrong.append(f"{where}: the package face (it imports the extension)")
            elif other != own and FLOOR[other] <= FLOOR[own]:
                way = "sideways" if FLOOR[other] == FLOOR[own] else "upward"
                wrong.append(f"{where}: {way}, {own} -> {other}")
    assert wrong == []


def test_workflow_code_imports_nothing_of_server() -> None:
    wrong = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, path in MODULES.items()
        if name.startswith(("fastmcp_temporal.workflows", "fastmcp_temporal.activities"))
        for line, target in imported(name, path)
        # the top package's face re-exports the server: importing a name from it is importing it
        if target.startswith(SERVER) or target == "fastmcp_temporal"
    ]
    assert wrong == []


def test_every_part_is_installed_by_a_plain_install() -> None:
    """``packages`` is a list (package-dir maps folders): a package left out is not installed."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    packages = {module_name(p) for folder in FOLDERS for p in (ROOT / folder).rglob("__init__.py")}
    assert packages <= set(listed)


COMPAT = "fastmcp_temporal._compat"


def test_only_compat_reaches_into_compat() -> None:
    """Other modules use the names ``_compat`` re-exports, never one of its modules.

    So ``_compat/__init__.py`` (its ``__all__``) is the whole list of what the rest
    of the package takes from other libraries' internals, one module per library
    behind it.
    """
    wrong = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, path in MODULES.items()
        if name != COMPAT and not name.startswith(COMPAT + ".")
        for line, target in imported(name, path)
        if target.startswith(COMPAT + ".")
    ]
    assert wrong == []


def import_loop(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path of imports from ``start`` back to ``start``, if there is one."""
    seen: set[str] = set()
    path = [start]

    def back_to_start(module: str) -> bool:
        for target in sorted(graph[module]):
            if target == start:
                path.append(target)
                return True
            if target not in seen:
                seen.add(target)
                path.append(target)
                if back_to_start(target):
                    return True
                path.pop()
        return False

    return path if back_to_start(start) else None


def test_no_modules_import_each_other() -> None:
    graph = {
        name: {target for _, target in imported(name, path) if target in MODULES}
        for name, path in MODULES.items()
    }
    loops = [" -> ".join(loop) for name in MODULES if (loop := import_loop(name, graph))]
    assert loops == []

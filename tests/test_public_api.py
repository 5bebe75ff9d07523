"""The public surface holds still: four modules, their ``__all__``, and old paths that warn.

- Each public module's ``__all__`` equals the committed snapshot
  (``tests/public_api.json``): adding, renaming or dropping a public name is a
  deliberate diff of that file, reviewed as an API change, never a side effect.
- Every import in the docs (pages, and the files they include with ``--8<--``),
  ``docs/snippets/``, ``examples/`` and the README names a public module and a
  name in its ``__all__``: what users copy must not pin an internal path.
- The paths the 0.1 docs imported from still give the same objects, with a
  ``DeprecationWarning`` naming the import to use (``fastmcp_temporal._surface``).
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastmcp_temporal._surface import MOVED, PUBLIC_MODULES, REMOVED_IN

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = Path(__file__).with_name("public_api.json")
#: Imports in Markdown and in included sections (text, not always whole Python files).
TEXT_IMPORT = re.compile(
    r"^\s*(?:from\s+(fastmcp_temporal[\w.]*)\s+import\s+(?:\(([\w\s,]+)\)|([\w ,]+))"
    r"|import\s+(fastmcp_temporal[\w.]*))",
    re.MULTILINE,
)
INCLUDE = re.compile(r'--8<-- "([^":]+)(?::([\w-]+))?"')
#: What each deprecated module was imported for in the 0.1 docs and examples.
DOCUMENTED = {
    "fastmcp_temporal.server.codec": {"task_data_converter": "fastmcp_temporal"},
    "fastmcp_temporal.server.starter": {"ToolOptions": "fastmcp_temporal"},
    "fastmcp_temporal.server.devserver": {
        "DevServer": "fastmcp_temporal",
        "free_port": "fastmcp_temporal.server.embedded.devserver",
    },
}


def public_all() -> dict[str, list[str]]:
    return {name: list(importlib.import_module(name).__all__) for name in PUBLIC_MODULES}


def test_each_public_modules_all_is_the_snapshot() -> None:
    current = public_all()
    assert current == json.loads(SNAPSHOT.read_text()), (
        "the public API changed: if that is deliberate, update tests/public_api.json "
        "(and docs/reference/api.md) in the same commit"
    )


def test_every_public_name_resolves_and_is_listed_once() -> None:
    for module, names in public_all().items():
        assert len(names) == len(set(names)), f"{module}.__all__ lists a name twice"
        loaded = importlib.import_module(module)
        missing = [name for name in names if not hasattr(loaded, name)]
        assert missing == [], f"{module}.__all__ names what it does not define: {missing}"


def python_imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of each ``fastmcp_temporal`` import in a Python file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastmcp_temporal"):
            yield node.lineno, node.module or "", [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("fastmcp_temporal"):
                    yield node.lineno, alias.name, []


def text_imports(text: str) -> Iterator[tuple[int, str, list[str]]]:
    for match in TEXT_IMPORT.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match.group(1):
            listed = (match.group(2) or match.group(3)).split(",")
            yield line, match.group(1), [name.split()[0] for name in listed if name.strip()]
        else:
            yield line, match.group(4), []


def included(page: Path) -> Iterator[tuple[str, str]]:
    """``(where, text)`` of each ``--8<--`` include of a page: the section, or the whole file."""
    for match in INCLUDE.finditer(page.read_text()):
        path, section = match.group(1), match.group(2)
        text = (ROOT / path).read_text()
        if section is not None:
            start, end = f"--8<-- [start:{section}]", f"--8<-- [end:{section}]"
            assert start in text and end in text, f"{page}: {path} has no section {section}"
            text = text.split(start, 1)[1].split(end, 1)[0]
        yield f"{path}:{section or ''}", text


def user_facing_imports() -> Iterator[tuple[str, str, list[str]]]:
    """Every import a user may copy: pages (and what they include), snippets, examples."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        where = page.relative_to(ROOT)
        for line, module, names in text_imports(page.read_text()):
            yield f"{where}:{line}", module, names
        for source, text in included(page):
            for line, module, names in text_imports(text):
                yield f"{source} (in {where}) +{line}", module, names
    for folder in ("docs/snippets", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, module, names in python_imports(path):
                yield f"{path.relative_to(ROOT)}:{line}", module, names


def test_docs_and_examples_import_only_public_names() -> None:
    exported = public_all()
    seen, wrong = 0, []
    for where, module, names in user_facing_imports():
        seen += 1
        if module not in exported:
            wrong.append(f"{where}: imports from {module}, not a public module")
            continue
        hidden = [name for name in names if name not in exported[module]]
        if hidden:
            wrong.append(f"{where}: {hidden} not in {module}.__all__")
    assert wrong == []
    assert seen > 30, "the scan found almost no imports: it is not reading the docs"


def test_the_scan_catches_an_internal_import() -> None:
    """The checks above would see the mistakes they exist for."""
    starter = "fastmcp_temporal.server.tasks.starter"
    page = f"```python\nfrom {starter} import (\n    ToolOptions,\n)\n```"
    assert list(text_imports(page)) == [(2, starter, ["ToolOptions"])]
    assert list(text_imports("import fastmcp_temporal.server.core.codec")) == [
        (1, "fastmcp_temporal.server.core.codec", [])
    ]


@pytest.mark.parametrize(
    ("old", "name"),
    [(old, name) for old, names in DOCUMENTED.items() for name in names],
)
def test_a_deprecated_path_gives_the_same_object_and_names_the_new_import(
    old: str, name: str
) -> None:
    home = DOCUMENTED[old][name]
    with pytest.warns(DeprecationWarning) as caught:
        namespace: dict[str, object] = {}
        exec(f"from {old} import {name}", namespace)  # what a user's code does
    assert namespace[name] is getattr(importlib.import_module(home), name)
    (warning,) = caught
    message = str(warning.message)
    assert f"{old}.{name} is deprecated" in message, message
    if home in PUBLIC_MODULES:
        assert f"`from {home} import {name}`" in message, message
    else:
        assert f"`from {MOVED[old]} import {name}` (internal" in message, message
    assert REMOVED_IN in message, message
    assert warning.filename == "<string>", "the warning points at the importing line"


def test_every_deprecated_module_is_covered_and_imports_without_a_warning() -> None:
    assert set(DOCUMENTED) == set(MOVED)
    for old in MOVED:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            module = importlib.import_module(old)  # importing it alone reads no name
            with pytest.raises(AttributeError, match=f"module '{old}' has no attribute 'nope'"):
                module.nope  # noqa: B018

"""Pages generated at build time from the code itself, so they cannot drift from it.

A page asks for a generated part with a marker line, replaced on every build:

- ``<!-- generated: settings -->``: every ``TemporalTasks`` keyword (its variable
  from the settings model, its default from the signature, its meaning from the
  docstring), then every variable the settings model reads
  (``server.core.settings_reference``);
- ``<!-- generated: cli -->``: ``fastmcp-temporal --help`` and every
  subcommand's help, from the command's own argparse parser, built in process;
- ``<!-- generated: code-layout -->``: every module of the package with the
  first paragraph of its docstring (its summary), found through pyproject's package-dir mapping.

A generator that cannot produce its part raises, and ``mkdocs build --strict``
fails with it: a module without a docstring is a build error, not a blank row.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import io
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
#: argparse wraps help at the terminal's width: a fixed one keeps the page stable.
HELP_COLUMNS = "100"


#: The import package as it installs, copied: mkdocstrings reads sources
#: statically and cannot follow pyproject's package-dir mapping by itself (nor
#: symlinks: it resolves them back to the folders it cannot place).
PACKAGE_TREE = ROOT / "build" / "docs-packages"


@event_priority(100)  # before mkdocstrings reads its `paths`: it drops ones that do not exist
def on_config(config: Any, **_: Any) -> Any:
    """mkdocs hook: lay out ``PACKAGE_TREE`` before any page asks for the API."""
    package_tree()
    return config


def package_tree() -> None:
    if PACKAGE_TREE.exists():
        shutil.rmtree(PACKAGE_TREE)
    ignore = shutil.ignore_patterns("__pycache__")
    # Shorter names first: a package's folder exists before its subpackages go into it.
    for package, folder in sorted(package_folders().items(), key=lambda item: len(item[0])):
        target = PACKAGE_TREE.joinpath(*package.split("."))
        shutil.copytree(ROOT / folder, target, ignore=ignore, dirs_exist_ok=True)


def package_folders() -> dict[str, str]:
    """pyproject's ``[tool.setuptools.package-dir]``: import package -> source folder."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return pyproject["tool"]["setuptools"]["package-dir"]


def on_page_markdown(markdown: str, **_: Any) -> str:
    """mkdocs hook: replace each marker line with its generated Markdown."""
    return MARKER.sub(lambda match: GENERATORS[match.group(1)](), markdown)


# -- settings ------------------------------------------------------------------


def settings_reference() -> str:
    """Every ``TemporalTasks`` keyword, then every variable: both from the one settings model."""
    from fastmcp_temporal.server.core.settings_reference import settings_reference_markdown

    return (
        keyword_reference()
        + "\n### Environment variables\n\nEvery variable the settings model reads "
        "(a keyword given to `TemporalTasks(...)` wins over its variable):\n\n"
        + settings_reference_markdown()
    )


def keyword_reference() -> str:
    """One row per ``TemporalTasks`` keyword: its variable (from the settings model), its
    default from the signature, its meaning from the class docstring's ``Args:`` (a
    shared entry such as ``api_key, tls, profile`` covers each name)."""
    from fastmcp_temporal import TemporalTasks
    from fastmcp_temporal.server.core.settings import TemporalTasksSettings, env_var

    meanings = docstring_args(inspect.getdoc(TemporalTasks) or "")
    parameters = inspect.signature(TemporalTasks.__init__).parameters
    rows = ["| `TemporalTasks(...)` | variable | default | meaning |", "|---|---|---|---|"]
    for name, parameter in parameters.items():
        if name == "self":
            continue
        variable = f"`{env_var(name)}`" if name in TemporalTasksSettings.model_fields else "—"
        default = "—" if parameter.default is None else f"`{shown(parameter.default)}`"
        meaning = cell(meanings.get(name, "*(not described in the docstring)*"))
        rows.append(f"| `{name}` | {variable} | {default} | {meaning} |")
    return "\n".join(rows) + "\n"


def docstring_args(docstring: str) -> dict[str, str]:
    """``Args:`` entries of a Google-style docstring: name(s) -> text, joined into one line."""
    entries: dict[str, str] = {}
    names: list[str] = []
    in_args = False
    for line in docstring.splitlines():
        if line.strip() == "Args:":
            in_args = True
            continue
        if not in_args:
            continue
        if line and not line.startswith(" "):
            break  # the next section
        if entry := re.match(r"^    (\w+(?:, \w+)*): (.*)$", line):
            names = entry.group(1).split(", ")
            for name in names:
                entries[name] = entry.group(2)
        elif line.strip():
            for name in names:
                entries[name] += " " + line.strip()
    return entries


def shown(value: object) -> str:
    """A default as a reader would write it."""
    from datetime import timedelta

    if isinstance(value, timedelta):
        return f"timedelta(seconds={value.total_seconds():g})"
    return repr(value)


def cell(text: str) -> str:
    """Markdown for a table cell: reStructuredText's double backticks become code."""
    return text.replace("``", "`").replace("|", "\\|")


# -- CLI -----------------------------------------------------------------------


def cli_reference() -> str:
    """The help of ``fastmcp-temporal`` and of each subcommand, in the order they nest."""
    (script,) = entry_points(group="console_scripts", name="fastmcp-temporal")
    main = script.load()
    parser: argparse.ArgumentParser = sys.modules[main.__module__].build_parser()
    sections = []
    for command, sub in walk_parsers(parser):
        level = "#" * min(2 + command.count(" "), 4)
        sections.append(f"{level} `{command}`\n\n```text\n{help_of(sub)}```\n")
    return "\n".join(sections)


def walk_parsers(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield parser.prog, parser
    # argparse has no public accessor for subcommands: its sub-parsers action
    # is how documentation tools (sphinx-argparse) find them too.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for sub in action.choices.values():
                if id(sub) not in seen:  # aliases share a parser
                    seen.add(id(sub))
                    yield from walk_parsers(sub)


def help_of(parser: argparse.ArgumentParser) -> str:
    with columns(HELP_COLUMNS):
        out = io.StringIO()
        parser.print_help(out)
    return out.getvalue()


@contextlib.contextmanager
def columns(width: str) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


# -- code layout ---------------------------------------------------------------


def code_layout() -> str:
    """Per package, each module and the first line of its docstring (parsed, not imported)."""
    folders = package_folders()
    modules: dict[Path, str] = {}
    # The most specific mapping names a file: longer package names last, so they win.
    for package, folder in sorted(folders.items(), key=lambda item: len(item[0])):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            modules[path] = ".".join([package, *parts])
    by_package: dict[str, list[tuple[str, Path]]] = {}
    for path, module in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        by_package.setdefault(package, []).append((module, path))
    sections = []
    for package in sorted(by_package):
        rows = sorted(by_package[package], key=lambda row: (row[1].name != "__init__.py", row[0]))
        lines = [f"## `{package}`\n", "| module | file | what it is |", "|---|---|---|"]
        for module, path in rows:
            name = module if path.name == "__init__.py" else module.rpartition(".")[2]
            where = path.relative_to(ROOT).as_posix()
            lines.append(f"| `{name}` | `{where}` | {cell(first_line(path))} |")
        sections.append("\n".join(lines) + "\n")
    return "\n".join(sections)


def first_line(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(), str(path)))
    if not docstring:
        raise ValueError(f"{path.relative_to(ROOT)} has no docstring: say what it is for")
    first_paragraph = docstring.strip().split("\n\n")[0]
    return " ".join(first_paragraph.split())


GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_reference,
    "cli": cli_reference,
    "code-layout": code_layout,
}

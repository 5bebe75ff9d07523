"""The list of modules that run on every FastMCP line names real test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lines import CORE, CORE_MARKER, EVERY_LINE, MARKER


def test_every_listed_module_exists() -> None:
    here = Path(__file__).resolve().parent
    modules = {name.partition("::")[0] for name in CORE}
    listed = EVERY_LINE.keys() | modules
    assert sorted(name for name in listed if not (here / f"{name}.py").exists()) == []
    for name in CORE:
        module, _, test = name.partition("::")
        assert not test or f"def {test}(" in (here / f"{module}.py").read_text(), name


def test_the_core_runs_on_every_line_too() -> None:
    assert {name.partition("::")[0] for name in CORE} <= EVERY_LINE.keys()


def test_this_module_is_marked_for_every_line(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker(MARKER) is not None
    assert request.node.get_closest_marker(CORE_MARKER) is not None

"""The settings reference (docs/reference/settings.md), generated from the model.

One row per ``FASTMCP_TEMPORAL_*`` variable: its name, the type as an operator
writes it, its default and the field's own description, so the documentation
cannot drift from what the model reads.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import SecretStr

from fastmcp_temporal.server.core.settings import TemporalTasksSettings, env_var


def settings_reference_markdown() -> str:
    """Every setting as a Markdown table: variable, type, default, description."""
    rows = [
        "| Environment variable | Type | Default | Description |",
        "|---|---|---|---|",
    ]
    for name, field in TemporalTasksSettings.model_fields.items():
        default = "unset" if field.default is None else f"`{_shown(field.default)}`"
        description = (field.description or "").replace("|", "\\|")
        kind = type_name(field.annotation)
        rows.append(f"| `{env_var(name)}` | {kind} | {default} | {description} |")
    return "\n".join(rows) + "\n"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def type_name(annotation: Any) -> str:
    """``SecretStr | None`` -> ``secret``: the type as an operator writes the value."""
    if get_origin(annotation) in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{value}`" for value in get_args(annotation))
    if get_origin(annotation) is dict:
        return "JSON object"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "path"}
    return names.get(annotation, "secret" if annotation is SecretStr else str(annotation))

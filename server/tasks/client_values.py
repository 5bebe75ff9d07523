"""Saying exactly what is wrong with a value a client sent.

A client's bad value is the client's error (``-32602``), and the message must
let its author fix it: which field, and what is wrong there. Two kinds:

- values that do not validate (an answer that is not a valid ``ElicitResult``):
  pydantic knows the field and the problem, but its ``str()`` spans lines,
  echoes the input and links to its docs;
- values that validate but cannot be stored: a lone UTF-16 surrogate
  (``"\\ud800"`` in JSON) is a valid Python string and no valid UTF-8, so the
  task's payload cannot be encoded -- found here before anything is started,
  instead of surfacing as an internal error from the encoder.

And ``accepted_answers``: which answers of a ``tasks/update`` are kept, each
valid for what it answers.

Paths are rendered with JSON escapes, so a bad key is named without being
repeated (a message holding a lone surrogate could not be sent either).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import mcp_types
from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json
from temporalio.converter import PayloadConverter

from fastmcp_temporal.server.core.wire import invalid_params

#: Errors named in one message; the rest are counted.
_SHOWN_ERRORS = 3


def field_path(root: str, loc: Sequence[str | int]) -> str:
    """``root.name[0]["odd key"]``: dotted where readable, JSON-escaped elsewhere."""
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.isidentifier() and part.isascii():
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path


def validation_problems(error: ValidationError, root: str) -> str:
    """``root.action: Input should be 'accept', 'decline' or 'cancel'`` (no input echoed)."""
    problems = [
        f"{field_path(root, detail['loc'])}: {detail['msg']}"
        for detail in error.errors(include_url=False, include_input=False)
    ]
    text = "; ".join(problems[:_SHOWN_ERRORS])
    if len(problems) > _SHOWN_ERRORS:
        text += f" (and {len(problems) - _SHOWN_ERRORS} more)"
    return text


def unstorable_field(value: Any, root: str) -> str | None:
    """The first field of ``value`` that cannot be encoded as JSON, with the reason; else None."""
    return _first_unstorable(value, root, [])


def _first_unstorable(value: Any, root: str, loc: list[str | int]) -> str | None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _encodable(key):
                return f"{field_path(root, loc)}: a key contains a lone UTF-16 surrogate"
            found = _first_unstorable(item, root, [*loc, key])
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _first_unstorable(item, root, [*loc, index])
            if found is not None:
                return found
        return None
    if isinstance(value, str):
        if _encodable(value):
            return None
        return f"{field_path(root, loc)}: contains a lone UTF-16 surrogate (not valid Unicode)"
    try:
        to_json(value)
    except PydanticSerializationError:
        return f"{field_path(root, loc)}: a {type(value).__name__} cannot be stored as JSON"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


#: What an answer to each kind of request a task may ask must validate as.
_RESPONSE_FOR_METHOD: dict[str, TypeAdapter[Any]] = {
    "elicitation/create": TypeAdapter(mcp_types.ElicitResult),
    "sampling/createMessage": TypeAdapter(
        mcp_types.CreateMessageResult | mcp_types.CreateMessageResultWithTools
    ),
    "roots/list": TypeAdapter(mcp_types.ListRootsResult),
}


def accepted_answers(
    responses: dict[str, Any], outstanding: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The answers of ``tasks/update`` to keep: those of outstanding requests, each valid
    for its request's method; an invalid one is ``-32602`` naming it (nothing is kept),
    an answer to anything else is dropped, as the workflow would drop it."""
    accepted: dict[str, dict[str, Any]] = {}
    for key, value in responses.items():
        request = outstanding.get(key)
        if request is None:
            continue
        adapter = _RESPONSE_FOR_METHOD.get(str(request.get("method")))
        field = f"inputResponses[{json.dumps(key)}]"
        if adapter is None or not isinstance(value, dict):
            raise invalid_params(f"Invalid input response: {field}: expected an object")
        try:
            adapter.validate_python(value)
        except ValidationError as err:
            problems = validation_problems(err, field)
            raise invalid_params(f"Invalid input response: {problems}") from None
        accepted[key] = value
    return accepted


def encoded_size(converter: PayloadConverter, value: Any, client_part: Any, root: str) -> int:
    """``value``'s encoded size; what the client sent (``client_part``, at ``root``) that
    cannot be encoded is ``-32602`` naming the field."""
    try:
        (payload,) = converter.to_payloads([value])
    except PydanticSerializationError:
        problem = unstorable_field(client_part, root)
        if problem is None:
            raise  # not the client's value: an internal error
        raise invalid_params(f"Invalid params: {problem}") from None
    return payload.ByteSize()

"""What happens between "this call becomes a task" and ``start_workflow``.

Three things must be settled while the creating request is still here, because
a leg runs later and elsewhere:

- the arguments are validated and coerced exactly as the synchronous
  ``tools/call`` would (strict mode included), so a bad call is an error now and
  no workflow is ever started for it;
- the caller is captured (token, headers, session, log level, declared
  extensions) so every leg can restore it;
- the caller's *scope* is computed (``scope.task_scope``): tasks belong to
  the token's principal, anonymous tasks to their own scope.
"""

from __future__ import annotations

import functools
import inspect
import logging
import typing
from collections.abc import Callable, Mapping
from typing import Any

from fastmcp.exceptions import ValidationError
from fastmcp.server.context import Context
from fastmcp.server.dependencies import (
    get_access_token,
    get_http_headers,
    without_injected_parameters,
)
from fastmcp.tools.base import Tool
from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities.types import get_cached_typeadapter
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import to_json, to_jsonable_python

from fastmcp_temporal import _compat
from fastmcp_temporal.activities.tool_leg import registered_component
from fastmcp_temporal.server.core.scope import task_scope
from fastmcp_temporal.server.core.wire import CreateTaskResult
from fastmcp_temporal.server.protocol.create_guards import start_guarded
from fastmcp_temporal.server.tasks.engine import TaskEngine
from fastmcp_temporal.server.temporal.workflow_tools import spec_for
from fastmcp_temporal.workflows.models import CallerSnapshot, UndeclaredInput, WorkflowBody

#: Headers that carry credentials. The caller's token travels as the access
#: token itself (sealed, see ``server.core.credentials``); raw credentials are
#: not copied into the task's history at all.
_SECRET_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


def validate_arguments(
    component: Tool, arguments: dict[str, Any], *, strict: bool = False
) -> dict[str, Any] | None:
    """Reject arguments the synchronous path would reject; nothing is run.

    A ``FunctionTool`` validates by *calling* a pydantic-wrapped function, so we
    build a probe with the identical signature, defaults and resolved hints that
    only returns what it was given, and validate against that. Returns every
    parameter's validated value (defaults filled in). Other tool kinds validate
    inside their own ``run`` and are checked when the leg runs (``None``).
    ``strict``: the serving server's ``strict_input_validation``.
    """
    if not isinstance(component, FunctionTool):
        return None
    adapter, signature = _probe_for(component.fn, component.run_in_thread)
    try:
        validated = validate_as_function_tool(adapter, arguments, strict=strict)
    except PydanticValidationError as err:
        raise ValidationError(str(err), log_level=logging.WARNING) from err
    bound = signature.bind_partial(**validated)
    bound.apply_defaults()
    return dict(bound.arguments)


def validate_as_function_tool(
    adapter: TypeAdapter[Any], arguments: dict[str, Any], *, strict: bool
) -> Any:
    """Validate ``arguments`` as ``FunctionTool.run`` does, with the server's strictness.

    FastMCP documents ``strict_input_validation`` as validating tool input
    strictly against its JSON schema. For JSON data (what a ``tools/call``
    carries) FastMCP does that in pydantic's strict JSON mode, which accepts the
    JSON spellings the schema asks for (an enum's value, an ISO datetime) and
    still rejects lax coercions (``"10"`` for an ``int``); Python objects validate
    as Python. Lax is pydantic's default (``strict=None``, so strictness a
    parameter declares still holds). Done here with pydantic's public API rather
    than through FastMCP's private helper; ``tests/test_compat.py`` checks the two
    agree on each line.
    """
    if not strict or not _is_json_data(arguments):
        return adapter.validate_python(arguments, strict=True if strict else None)
    return adapter.validate_json(to_json(arguments), strict=True)


def _is_json_data(value: Any) -> bool:
    """Whether ``value`` is built only from what a JSON parser produces."""
    if value is None or isinstance(value, str | int | float):
        return True
    if isinstance(value, list):
        return all(_is_json_data(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json_data(item) for key, item in value.items())
    return False


@functools.lru_cache(maxsize=1024)
def _probe_for(
    fn: Callable[..., Any], run_in_thread: bool
) -> tuple[TypeAdapter[Any], inspect.Signature]:
    """The probe's validator, built once per tool function.

    Building a pydantic validator costs ~0.2 ms against ~0.01 ms to use one
    (``bench/investigations/2026-11-30-ab-changes``), and every fresh probe would
    take a slot of ``get_cached_typeadapter``, pushing FastMCP's own validators out.
    """
    callable_fn = without_injected_parameters(fn, run_in_thread=run_in_thread)
    probe = _signature_probe(callable_fn)
    return get_cached_typeadapter(probe), inspect.signature(callable_fn)


def _signature_probe(fn: Callable[..., Any]) -> Callable[..., dict[str, Any]]:
    def probe(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(kwargs)

    hints = _param_hints(fn)
    signature = inspect.signature(fn)
    # Pydantic names the function in its errors ("validation error for call[<name>]"):
    # the probe answers under the tool function's name, as the synchronous call does.
    probe.__name__ = getattr(fn, "__name__", probe.__name__)
    probe.__qualname__ = getattr(fn, "__qualname__", probe.__qualname__)
    probe.__signature__ = signature  # type: ignore[attr-defined]
    probe.__annotations__ = {
        name: hints.get(name, parameter.annotation)
        for name, parameter in signature.parameters.items()
        if name in hints or parameter.annotation is not inspect.Parameter.empty
    }
    return probe


def _param_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s resolved parameter hints; for a ``functools.partial``, its function's,
    for the parameters the partial leaves open (what ``FunctionTool`` validates)."""
    target = fn
    while isinstance(target, functools.partial):
        target = target.func
    try:
        resolved = typing.get_type_hints(target, include_extras=True)
    except TypeError:
        return {}
    if target is fn:
        return resolved
    return {name: resolved[name] for name in inspect.signature(fn).parameters if name in resolved}


def capture_caller(
    context: Context, *, undeclared_input: UndeclaredInput = "park"
) -> CallerSnapshot:
    """Everything a leg needs to see the creating caller's world (and the server's
    rule for input that caller cannot answer, frozen with it)."""
    token = get_access_token()
    headers = {
        name: value
        for name, value in get_http_headers(include_all=True).items()
        if name.lower() not in _SECRET_HEADERS
    }
    request_context = context.request_context
    try:
        session_id: str | None = context.session_id
    except RuntimeError:
        session_id = None
    log_level_key, log_level = _compat.session_log_level(context)
    capabilities = declared_capabilities(context)
    extensions = capabilities.get("extensions")
    return CallerSnapshot(
        access_token_json=token.model_dump_json() if token is not None else None,
        token_scopes=list(token.scopes) if token is not None else None,
        http_headers=headers or None,
        session_id=session_id,
        origin_request_id=(
            str(request_context.request_id) if request_context is not None else None
        ),
        log_level_key=log_level_key,
        log_level=log_level,
        client_extensions=sorted(extensions) if isinstance(extensions, dict) else [],
        client_capabilities=capabilities,
        undeclared_input=undeclared_input,
        scope=task_scope(),
    )


def declared_capabilities(context: Context) -> dict[str, Any]:
    """What the client declared: per request on 2026-07-28, else at initialize."""
    request_context = context.request_context
    meta = request_context.meta if request_context is not None else None
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY) if meta else None
    if isinstance(capabilities, dict):
        return capabilities
    try:
        declared = context.session.client_params.capabilities  # type: ignore[union-attr]
    except (RuntimeError, AttributeError):
        return {}
    return declared.model_dump(by_alias=True, mode="json", exclude_none=True)


async def create_task(
    engine: TaskEngine,
    tool: Tool,
    arguments: dict[str, Any],
    context: Context,
    *,
    session_bound_keys: bool = True,
    before_start: Callable[[str], None] | None = None,
    task_id: str | None = None,
    memo: Mapping[str, Any] | None = None,
) -> CreateTaskResult:
    """Validate, capture the caller, and start the task's workflow (past its guards).

    ``session_bound_keys=False`` (durable sync calls): an anonymous caller's
    idempotency key does not belong to its session (``idempotency``).
    ``before_start``: told the task id just before its workflow is started (a waiting
    call listens to its legs from then on). ``task_id``: the id of a call without an
    idempotency key, instead of a fresh one (``sync_calls``). ``memo``: entries for
    the task's memo (a plain call's key, ``reattach``)."""
    component = await registered_component(context.fastmcp, tool)
    validated = validate_arguments(
        component, arguments, strict=context.fastmcp.strict_input_validation
    )
    body: WorkflowBody | None = None
    if (spec := spec_for(component)) is not None and validated is not None:
        body = WorkflowBody(
            workflow=spec.workflow_name,
            args=[to_jsonable_python(validated[name]) for name in spec.parameters],
            task_queue=spec.task_queue,
        )
    caller = capture_caller(context, undeclared_input=engine.undeclared_input)

    async def start(*, task_id: str, **guarded: Any) -> CreateTaskResult:
        if before_start is not None:
            before_start(task_id)
        return await engine.start(
            scope=caller.scope,
            tool_name=tool.name,
            tool_version=tool.version,
            arguments=arguments,
            poll_interval_ms=int(tool.task_config.poll_interval.total_seconds() * 1000),
            caller=caller,
            body=body,
            tool_timeout_s=component.timeout,
            task_id=task_id,
            **guarded,
        )

    # An idempotency key's existing task, else the caller's quota (``create_guards``).
    return await start_guarded(
        engine,
        context,
        scope=caller.scope,
        tool_name=tool.name,
        tool_version=tool.version,
        arguments=arguments,
        start=start,
        session_bound_keys=session_bound_keys,
        unkeyed_task_id=task_id,
        memo=memo,
    )

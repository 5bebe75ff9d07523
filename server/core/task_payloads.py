"""The task's payload converter beside an agent framework's: each payload to its own converter.

```python
client = await Client.connect(address, plugins=[OpenAIAgentsPlugin(), McpTasksPlugin(mcp)])
mcp.add_extension(TemporalTasks(plugins=[OpenAIAgentsPlugin()]))  # composes the same converter
```

A task's own payloads (the models of ``fastmcp_temporal``: its start, its legs'
inputs and outcomes, its signals) are written by temporalio's pydantic JSON,
which every front end and worker of every release reads the same way: a field
left at its default is written out, so a worker whose defaults changed still
reads the policy the task started with. An agent framework's plugin may need a
converter of its own for *its* payloads: the OpenAI Agents SDK's
``OpenAIPayloadConverter`` leaves unset fields out (the OpenAI API tells an unset
field from a null one) and reads a model response that drifted from the SDK's
types leniently. ``TaskPayloadConverter`` gives each payload its own: the
values of the OpenAI SDKs' types (``_FRAMEWORK_TYPES``) to the OpenAI converter,
everything else -- task models, LangGraph's messages, users' models -- to
pydantic JSON; chosen by the value's type when written (a container by what it
holds, at any depth: only OpenAI values and plain data go to the OpenAI converter,
since it would drop a LangChain message's ``type``) and by the expected type when
read (at any depth of the hint: ``list[Annotated[Union[...]]]`` of the plugin's
stream events too). An outer converter we know nothing of (pydantic-ai's, a user's)
takes every value that is not a task model. Codec (encryption), failure
converter and payload store belong to the ``DataConverter`` around it, so they
apply to every payload alike.

Which framework needs an outer converter is its plugin's to say
(``outer_converter_for``): pydantic-ai's plugin keeps any pydantic converter,
ours included, so it needs none; the OpenAI plugin refuses every converter but
the SDK's default one -- its own too, since temporalio 1.35 wraps each payload
converter in a transfer-type converter that its ``isinstance`` check does not
see through -- so it needs its own, the one it picks for a client with none.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
import warnings
from collections.abc import Sequence
from itertools import zip_longest
from typing import Any, ClassVar

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import (
    DataConverter,
    DefaultPayloadConverter,
    PayloadConverter,
    SerializationContext,
    WithSerializationContext,
)
from temporalio.plugin import SimplePlugin

#: Where the task's own models are defined (``workflows.models`` and its peers).
_TASK_PACKAGE = "fastmcp_temporal."
#: Payload converter classes that are ours already, in effect: the SDK's default
#: (which a plugin's converter step upgrades) and plain pydantic JSON.
_PLAIN = (DefaultPayloadConverter, PydanticPayloadConverter)
#: A framework converter that is for its framework's payloads only, by the package
#: it is defined in: the modules of the types it is for. On a worker that runs
#: other frameworks too (LangGraph's messages, pydantic-ai's), the OpenAI one must
#: not take theirs: it leaves their unset fields out, and a LangChain message
#: without its ``type`` cannot be read back.
_FRAMEWORK_TYPES: dict[str, tuple[str, ...]] = {
    "temporalio.openai_agents.": ("agents.", "openai.", "temporalio.openai_agents."),
}


def _is_of(type_: object, packages: tuple[str, ...]) -> bool:
    """Whether ``type_``, or a type anywhere in a hint like ``list[Annotated[X | Y, ...]]``,
    is from ``packages``."""
    if isinstance(type_, type) and type_.__module__.startswith(packages):
        return True
    return any(_is_of(arg, packages) for arg in typing.get_args(type_))


def _holds(value: object, packages: tuple[str, ...]) -> bool:
    """Whether ``value`` is of a type from ``packages``, or a container that holds such
    values and, besides them, plain data only (no model of another package, which the
    outer converter would write without its unset fields)."""
    return _kinds(value, packages) == {"framework"}


def _kinds(value: object, packages: tuple[str, ...]) -> set[str]:
    """What ``value`` holds at any depth: ``framework`` (a type from ``packages``),
    ``other`` (anything but those and plain data); plain data adds nothing."""
    if _is_of(type(value), packages):
        return {"framework"}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*(_kinds(item, packages) for item in value))
    return set() if isinstance(value, str | int | float | bool | type(None)) else {"other"}


class TaskPayloadConverter(PydanticPayloadConverter):
    """pydantic JSON for the task's models; ``outer_class`` for a framework's payloads.

    With ``outer_types`` (module prefixes), the outer converter writes the values
    of those modules' types (or holding them one level down) and reads into
    them; without, every value that is not a task model.
    """

    outer_class: ClassVar[type[PayloadConverter]] = PydanticPayloadConverter
    outer_types: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self.outer = self.outer_class()

    def _outer_writes(self, value: object) -> bool:
        if self.outer_types:
            return _holds(value, self.outer_types)
        return not _is_of(type(value), (_TASK_PACKAGE,))

    def _outer_reads(self, hint: object) -> bool:
        if self.outer_types:
            return _is_of(hint, self.outer_types)
        return not _is_of(hint, (_TASK_PACKAGE,))

    def to_payloads(self, values: Sequence[Any]) -> list[Payload]:
        payloads: list[Payload] = []
        for value in values:
            if self._outer_writes(value):
                payloads.extend(self.outer.to_payloads([value]))
            else:
                payloads.extend(super().to_payloads([value]))
        return payloads

    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[Any]:
        values: list[Any] = []
        for payload, hint in zip_longest(payloads, type_hints or []):
            hints = None if hint is None else [hint]
            if hint is not None and self._outer_reads(hint):
                values.extend(self.outer.from_payloads([payload], hints))
            else:
                values.extend(super().from_payloads([payload], hints))
        return values

    def with_context(self, context: SerializationContext) -> TaskPayloadConverter:
        """The outer converter may use the context (ours does not)."""
        if not isinstance(self.outer, WithSerializationContext):
            return self
        outer = self.outer.with_context(context)
        if outer is self.outer:
            return self
        twin = copy.copy(self)
        twin.outer = outer
        return twin


@functools.cache
def payload_converter_for(outer: type[PayloadConverter] | None) -> type[PayloadConverter]:
    """The task's payload converter class with ``outer`` for a framework's payloads.

    ``None`` or a plain one (the SDK default, pydantic JSON): pydantic JSON for
    everything, as before any framework came along. A ``TaskPayloadConverter``
    already: itself (a plugin applied twice composes once).
    """
    if outer is None or outer in _PLAIN:
        return PydanticPayloadConverter
    if issubclass(outer, TaskPayloadConverter):
        return outer
    # By the package of the class or a base: a user's subclass of the OpenAI converter
    # is for the OpenAI types too.
    packages = [
        types
        for home, types in _FRAMEWORK_TYPES.items()
        if any(base.__module__.startswith(home) for base in outer.__mro__)
    ]
    return type(
        f"TaskPayloadConverter[{outer.__name__}]",
        (TaskPayloadConverter,),
        {
            "outer_class": outer,
            "outer_types": packages[0] if packages else (),
            "__module__": __name__,
            "__doc__": TaskPayloadConverter.__doc__,
        },
    )


def converter_step(plugin: SimplePlugin, converter: DataConverter | None) -> DataConverter | None:
    """What ``plugin`` does to a client's ``converter`` (``SimplePlugin.configure_client``)."""
    step = plugin.data_converter
    if callable(step):
        return step(converter)
    return step or converter


def outer_converter_for(plugins: Sequence[object]) -> type[PayloadConverter] | None:
    """The payload converter class a plugin among ``plugins`` needs for its payloads, if any.

    Each plugin's converter step is shown the task converter: a plugin that keeps
    it needs nothing; one that refuses or replaces it needs the converter it
    picks for a client with none. Two plugins that each need another one cannot
    share a client: that is a ``ValueError`` naming them.
    """
    probe = DataConverter(payload_converter_class=TaskPayloadConverter)
    needed: dict[str, type[PayloadConverter]] = {}
    for plugin in plugins:
        if not isinstance(plugin, SimplePlugin) or plugin.data_converter is None:
            continue
        alone = converter_step(plugin, None)
        if alone is None or alone.payload_converter_class in _PLAIN:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a probe, not the client's converter
            try:
                kept = converter_step(plugin, probe) is probe
            except ValueError:  # the OpenAI plugin's refusal
                kept = False
        if not kept:
            needed[plugin.name()] = alone.payload_converter_class
    if len(set(needed.values())) > 1:
        raise ValueError(
            f"The plugins {', '.join(sorted(needed))} each need a payload converter of their "
            "own; they cannot share one Temporal client"
        )
    return next(iter(needed.values()), None)


def with_plugin_payloads(client: Client, plugins: Sequence[object]) -> Client:
    """``client`` itself, or a twin (same connection) whose converter serves ``plugins`` too.

    Only a client on the task converter (plain pydantic JSON) changes: one the
    caller set up with a converter of their own keeps it. The twin has no plugins
    (``client``'s are applied already, in its config): its workers need them passed.
    """
    outer = outer_converter_for(plugins)
    converter = client.data_converter
    if outer is None or converter.payload_converter_class not in _PLAIN:
        return client
    config = client.config(active_config=True)
    config["data_converter"] = dataclasses.replace(
        converter, payload_converter_class=payload_converter_for(outer)
    )
    config["plugins"] = []  # already applied: their interceptors are in the active config
    return Client(**config)

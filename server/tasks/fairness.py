"""Fairness between callers: one caller's backlog must not hold up everyone else's tasks.

All tasks share one task queue, and a queue is first in, first out: a caller
who creates 1 000 slow tasks would make every other caller's next task wait
behind all of them. Temporal's task-queue fairness (Server >= 1.29) dispatches
a backlog round-robin between *fairness keys*, in proportion to their weights.
Each task's workflow starts with its caller's key, and its legs (activities)
and a workflow tool's child workflow inherit it from the workflow, so both the
state machine and the tool bodies are shared fairly:

```python
TemporalTasks()                                  # on: one key per caller scope, weight 1
TemporalTasks(fairness=False)                    # off (or FASTMCP_TEMPORAL_FAIRNESS=false)
TemporalTasks(fairness=lambda caller: (caller.client_id or "anon", 2.0 if paying(caller) else 1.0))
```

The default key is the scope's tag in the workflow id (``scope.scope_tag``):
an HMAC of the caller's principal, so the key shown in the Web UI and in
``describe`` names no one. A hook returns ``(key, weight)``, or ``None`` for
that default. Anonymous callers share one scope, and so one key.

The server must have fairness on: the embedded dev server starts with it (see
``devserver.FAIRNESS_DYNAMIC_CONFIG``); a self-hosted cluster needs
``matching.enableFairness`` (and one write partition per task queue for exact
ordering), Temporal Cloud the namespace's Fairness switch. A server without it
accepts the key and dispatches first in, first out, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from temporalio.common import Priority

from fastmcp_temporal.server.core.scope import scope_tag
from fastmcp_temporal.server.core.settings import env_var, load_settings
from fastmcp_temporal.workflows.models import CallerSnapshot

FAIRNESS_ENV = env_var("fairness")
#: Temporal's limit on a fairness key.
MAX_KEY_BYTES = 64
#: Temporal clamps weights to this range.
MIN_WEIGHT, MAX_WEIGHT = 0.001, 1000.0


@dataclass(frozen=True)
class FairnessCaller:
    """Who creates a task, as a fairness hook sees it.

    ``scope`` is the caller's principal as ``scope.task_scope`` encodes it
    (``None``: anonymous); ``client_id``/``subject`` are its parts. The hook
    runs in the creating ``tools/call``, so FastMCP's ``get_access_token()``
    works in it too.
    """

    tool_name: str
    scope: str | None
    client_id: str | None
    subject: str | None
    http_headers: Mapping[str, str] = field(default_factory=dict)


FairnessHook = Callable[[FairnessCaller], "tuple[str, float] | None"]


class Fairness:
    """The ``Priority`` each new task's workflow starts with (``None``: fairness off)."""

    def __init__(self, hook: FairnessHook | None, *, scope_secret: bytes | None) -> None:
        self.hook = hook
        self.scope_secret = scope_secret

    @classmethod
    def resolve(
        cls, setting: bool | FairnessHook | None, *, scope_secret: bytes | None
    ) -> Fairness | None:
        """The constructor's ``fairness`` setting, else ``FASTMCP_TEMPORAL_FAIRNESS`` (on)."""
        if setting is None:
            setting = load_settings().fairness
        if setting is False:
            return None
        return cls(None if setting is True else setting, scope_secret=scope_secret)

    def priority(self, tool_name: str, caller: CallerSnapshot) -> Priority:
        key = scope_tag(caller.scope, self.scope_secret)
        weight = 1.0
        if self.hook is not None:
            chosen = self.hook(_fairness_caller(tool_name, caller))
            if chosen is not None:
                key, weight = chosen
                _check(key, weight)
        return Priority(fairness_key=key, fairness_weight=weight)


def _fairness_caller(tool_name: str, caller: CallerSnapshot) -> FairnessCaller:
    client_id = subject = None
    if caller.scope is not None:
        client_id, _issuer, subject = json.loads(caller.scope)
    return FairnessCaller(
        tool_name=tool_name,
        scope=caller.scope,
        client_id=client_id,
        subject=subject,
        http_headers=dict(caller.http_headers or {}),
    )


def _check(key: str, weight: float) -> None:
    """A hook's answer Temporal would refuse or silently change is a server bug: say so."""
    if not isinstance(key, str) or not key or len(key.encode()) > MAX_KEY_BYTES:
        raise ValueError(
            f"The fairness hook returned key {key!r}: a non-empty string of at most "
            f"{MAX_KEY_BYTES} bytes (hash longer ones)"
        )
    if not MIN_WEIGHT <= weight <= MAX_WEIGHT:
        raise ValueError(
            f"The fairness hook returned weight {weight!r} for {key!r}: "
            f"between {MIN_WEIGHT} and {MAX_WEIGHT}"
        )

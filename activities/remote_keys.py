"""The idempotency key of a remote create: one per call, the same on every retry of it.

A create whose answer was lost (our worker died after the remote created the
task, before the activity's completion or heartbeat reached Temporal) is run
again. With the same key a remote that honours keys (ours:
``server.protocol.idempotency``) answers with the task the first attempt
created, instead of creating a second one; a remote that does not know the key
ignores it (``_meta`` is open by the spec). The key is derived on the worker
from what Temporal tells the running activity, never put in workflow inputs, so
recorded histories replay unchanged.
"""

from __future__ import annotations

import hashlib
import json

from temporalio import activity


def create_key() -> str:
    """The key of the running create activity (``remote(...).call_tool``).

    Temporal keeps an activity's id across its retries, and the id is the
    schedule's sequence number in its run: one per ``call_tool``, ``gather``
    fan-out included. So (namespace, workflow, run, activity id) names one call.
    """
    info = activity.info()
    run = info.workflow_run_id or info.activity_run_id or ""
    return _key("activity", info.namespace, info.workflow_id or "", run, info.activity_id)


def step_key(step: str) -> str | None:
    """The key of ``remote_step``'s create in a function tool's leg; ``None`` outside a task.

    Named by the step, which is what stays the same wherever the body runs again
    until the step is recorded (a retried leg, a local leg run again after its
    workflow task was lost); ``Steps`` runs a name once per call, and a task's run
    continues as new only between legs, after a checkpoint -- so (workflow, run,
    step) names one create. Outside a task (no leg) the body runs once: no key.
    """
    if not activity.in_activity():
        return None
    info = activity.info()
    run = info.workflow_run_id or ""
    return _key("step", info.namespace, info.workflow_id or "", run, step)


def _key(*identity: str) -> str:
    """A digest: short and printable whatever the ids hold, and the remote learns
    nothing of our workflow ids."""
    digest = hashlib.sha256(json.dumps(identity).encode()).hexdigest()
    return f"fastmcp-temporal-{digest}"

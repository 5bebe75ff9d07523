"""OpenTelemetry: one trace from ``tools/call`` through the task's workflow into its legs.

```python
mcp.add_extension(TemporalTasks(tracing=True))   # pip install "fastmcp-temporal[otel]"
```

FastMCP opens a span for each request it serves; ``TemporalTasks(tracing=True)``
connects its client with Temporal's ``TracingInterceptor``
(``temporalio.contrib.opentelemetry``), which carries the current trace in the
headers of what it starts and signals. A ``tools/call`` that becomes a task
therefore owns ``StartWorkflow:McpTask:<tool>``, and the worker's
``RunWorkflow`` / ``StartActivity`` / ``RunActivity:<tool>`` spans join the same
trace (an in-process worker inherits the client's interceptors; a worker
process gets them from ``fastmcp-temporal worker`` when the server asks for
tracing).

``tasks/get`` polls must not flood the trace store: the query behind each one is
left untraced here (no ``QueryWorkflow`` span, no header, hence no
``HandleQuery`` span on the worker), and ``describe`` is never traced. A
``tasks/update`` (a signal) and ``tasks/cancel`` are actions and keep theirs.

The interceptor uses the global tracer provider: configure OpenTelemetry (an
exporter, a ``TracerProvider``) before the server starts, as for FastMCP.
"""

from __future__ import annotations

from typing import Any

import temporalio.client
from temporalio.plugin import SimplePlugin

PLUGIN_NAME = "fastmcp_temporal.Tracing"


class _UntracedQueries(temporalio.client.OutboundInterceptor):
    """Everything through the tracing interceptor, except queries (the polls)."""

    def __init__(
        self,
        traced: temporalio.client.OutboundInterceptor,
        untraced: temporalio.client.OutboundInterceptor,
    ) -> None:
        super().__init__(traced)
        self._untraced = untraced

    async def query_workflow(self, input: temporalio.client.QueryWorkflowInput) -> Any:
        return await self._untraced.query_workflow(input)


def interceptor() -> Any:
    """Temporal's ``TracingInterceptor``, with queries left untraced.

    Imported lazily: ``temporalio.contrib.opentelemetry`` needs the SDK (the
    ``otel`` extra), which a server without tracing does not.
    """
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            'TemporalTasks(tracing=True) needs OpenTelemetry: pip install "fastmcp-temporal[otel]"'
        ) from err

    class QuietTracingInterceptor(TracingInterceptor):
        def intercept_client(
            self, next: temporalio.client.OutboundInterceptor
        ) -> temporalio.client.OutboundInterceptor:
            return _UntracedQueries(super().intercept_client(next), next)

    return QuietTracingInterceptor()


def plugins() -> list[SimplePlugin]:
    """For ``Client.connect(plugins=...)``: its workers inherit the interceptor."""
    return [SimplePlugin(PLUGIN_NAME, interceptors=[interceptor()])]

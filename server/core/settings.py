"""Every environment variable fastmcp-temporal reads, in one model.

```python
from fastmcp_temporal import TemporalTasksSettings

TemporalTasksSettings().data_dir        # $FASTMCP_TEMPORAL_DATA_DIR, else .fastmcp-temporal
```

Each part reads the environment through ``load_settings()`` when it needs a
value, never at import, so a variable set after ``import fastmcp_temporal``
(a test's ``monkeypatch``, a launcher) still counts. ``TemporalTasks(...)``'s
arguments go through this same model (``ExtensionOptions``, in
``server.extension.options``, adds the arguments that have no variable): a
value given wins over its variable, which is then not even read, and every
value is checked once, by its field here. A ``fastmcp-temporal`` option
overrides its variable in the command that takes it. A value that does not
validate fails at once with the argument's or the variable's name, not
somewhere later.

Where Temporal is (``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
``TEMPORAL_API_KEY``, TLS, ``temporal.toml`` profiles) is not here:
``temporalio.envconfig`` reads those the way every Temporal SDK and the
``temporal`` CLI do (see ``temporal.connection``).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from fastmcp_temporal.workflows.models import DEFAULT_MAX_PAYLOAD_BYTES

PREFIX = "FASTMCP_TEMPORAL_"
#: Payloads at least this big leave the history for the store
#: (``bench/investigations/2026-11-30-payload-threshold``).
DEFAULT_PAYLOAD_THRESHOLD = 256 * 1024
#: How long the keeper keeps an embedded Temporal nobody uses any more (a restart rejoins it).
DEFAULT_EMBEDDED_LINGER_S = 3.0
#: The bound on each Temporal call of a ``tasks/*`` request (``server.protocol.temporal_busy``).
DEFAULT_QUERY_TIMEOUT_S = 2.0
#: A waiting plain call's client hears at least this often (``server.protocol.call_waits``):
#: well under the hosts' idle limits (Claude Code aborts a tool silent for 300 s).
DEFAULT_KEEPALIVE_S = 15.0
#: What the waiting calls of one front end may ask Temporal, in reads a second.
DEFAULT_WAIT_READS_PER_SECOND = 50
#: How long a front end being stopped lets its waiting calls finish: Kubernetes'
#: default ``terminationGracePeriodSeconds``.
DEFAULT_DRAIN_GRACE_S = 30.0
#: How long a waiting plain call stays on a task whose body keeps failing
#: (``server.tasks.stuck_bodies``): well under a minute, and under the hosts' own limits.
DEFAULT_STUCK_CALL_TIMEOUT_S = 30.0
#: How long a 2025-xx session id opens on any front end (``server.protocol.sessions``):
#: a working day and night of one host; the SDK's idle timeout ends it sooner per process.
DEFAULT_SESSION_MAX_AGE_S = 86_400.0


class TemporalTasksSettings(BaseSettings):
    """fastmcp-temporal's configuration from ``FASTMCP_TEMPORAL_*`` environment variables."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        # An empty variable is an unset one, as the hand-read variables always were.
        env_ignore_empty=True,
        extra="ignore",
        frozen=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Values given to the model (``TemporalTasks``'s arguments), then the environment."""
        given = init_settings.init_kwargs if isinstance(init_settings, InitSettingsSource) else {}
        return init_settings, _VariablesNotGiven(settings_cls, given=given)

    run_worker: Annotated[
        bool,
        Field(
            description="Run a worker in the MCP server's process. `false` makes the server a "
            "stateless front end that only starts and reads tasks; `fastmcp-temporal worker` "
            "processes then run the legs. `TemporalTasks(run_worker=...)` overrides it."
        ),
    ] = True
    data_dir: Annotated[
        Path,
        Field(
            description="Directory of the embedded Temporal (its SQLite database, keeper, scope "
            "secret, credentials key) and of the default payload store. Used when no Temporal "
            "address is configured. `TemporalTasks(data_dir=...)` and `--data-dir` override it."
        ),
    ] = Path(".fastmcp-temporal")
    encryption_key: Annotated[
        SecretStr | None,
        Field(
            description="AES-GCM keys that seal every payload a task writes to Temporal: one "
            "key (base64 or hex of 32 bytes) or `id:key,id2:key2`, where the first encrypts and "
            "every listed key decrypts. Unset: payloads are written in clear (an encrypted one "
            "is refused). `TemporalTasks(encryption_key=...)` overrides it."
        ),
    ] = None
    credentials_in_clear: Annotated[
        bool,
        Field(
            description="Store the caller's access token and request headers in clear in each "
            "task's inputs, as earlier releases did. Unset: they are encrypted with the "
            "rest (an encryption key), sealed under the embedded Temporal's generated "
            "`credentials-key`, or, with a Temporal address and no key, an authenticating "
            "server refuses to start."
        ),
    ] = False
    credentials_key_dir: Annotated[
        Path | None,
        Field(
            description="With a Temporal address and no encryption key, seal callers' access "
            "tokens and headers under the `credentials-key` of this directory (created there "
            "on first use), as the embedded default does in its data directory, instead of "
            "refusing to start: for a Temporal that is an embedded dev server started "
            "elsewhere, such as the pytest plugin's session server. Every front end and worker "
            "of those tasks names the same directory (a worker with `--data-dir` of that "
            "embedded server finds it there). An embedded server of this process uses its own "
            "data directory. `TemporalTasks(credentials_key_dir=...)` overrides it."
        ),
    ] = None
    scope_secret: Annotated[
        SecretStr | None,
        Field(
            description="Secret (at least 16 bytes; the same on every front end) that keys the "
            "caller's tag in workflow ids, so nobody finds a user's tasks in Temporal from their "
            "client id and subject. Unset: the embedded server's own generated secret, or with "
            "an address an unkeyed tag (a server with auth warns). "
            "`TemporalTasks(scope_secret=...)` overrides it."
        ),
    ] = None
    payload_store: Annotated[
        str | None,
        Field(
            description="Where payloads past the threshold go: a directory, `file://...` or "
            "`s3://<bucket>[/prefix]` (the `s3` extra). Unset: `<data dir>/payloads` on local "
            "disk. `TemporalTasks(payload_store=...)` and `--payload-store` override it."
        ),
    ] = None
    payload_threshold: Annotated[
        int,
        Field(
            ge=0,
            description="Size in bytes from which a payload goes to the payload store instead "
            "of into Temporal's history. `TemporalTasks(payload_threshold=...)` overrides it.",
        ),
    ] = DEFAULT_PAYLOAD_THRESHOLD
    max_payload_bytes: Annotated[
        int,
        Field(
            gt=0,
            description="Largest argument, answer or result in bytes: a bigger argument or "
            "answer is refused (`-32602`), a bigger result fails its task. "
            "`TemporalTasks(max_payload_bytes=...)` overrides it.",
        ),
    ] = DEFAULT_MAX_PAYLOAD_BYTES
    embedded_linger: Annotated[
        float,
        Field(
            ge=0,
            description="Seconds the embedded Temporal keeps running after its last user "
            "left, so a quick restart joins it instead of starting a new one; `0` stops it at "
            "once.",
        ),
    ] = DEFAULT_EMBEDDED_LINGER_S
    query_timeout: Annotated[
        float,
        Field(
            gt=0,
            description="Seconds each Temporal call of a `tasks/*` request may take; past it "
            "the request answers the retryable `-32001` instead of waiting on. Raise it where "
            "Temporal answers slowly (a loaded dev server, a far cluster). "
            "`TemporalTasks(query_timeout=...)` overrides it.",
        ),
    ] = DEFAULT_QUERY_TIMEOUT_S
    keepalive_s: Annotated[
        float,
        Field(
            gt=0,
            description="While a plain `tools/call` waits for its task and its client sent a "
            "`progressToken`, the client hears a progress notification at least this often "
            "(seconds), saying what the task does, even when its body reports nothing or its "
            "worker is being replaced: hosts that abort a silent tool (Claude Code after 300 s) "
            "keep waiting. `TemporalTasks(keepalive_s=...)` overrides it.",
        ),
    ] = DEFAULT_KEEPALIVE_S
    wait_reads_per_second: Annotated[
        int,
        Field(
            gt=0,
            description="The most Temporal reads a second this front end makes for its "
            "waiting plain calls (a task parked by another worker, the progress of a leg "
            "another worker runs): each is read at most once a second, and in a crowd less "
            "often. `TemporalTasks(wait_reads_per_second=...)` overrides it.",
        ),
    ] = DEFAULT_WAIT_READS_PER_SECOND
    drain_grace_s: Annotated[
        float,
        Field(
            ge=0,
            description="On SIGTERM an HTTP front end takes no new waiting calls and gives "
            "those that wait this long (seconds) to end; it then answers each one left with "
            "`-32002` (its task goes on; a retry with the same `Idempotency-Key` gets the "
            "result) and exits 0. Keep it below Kubernetes' `terminationGracePeriodSeconds` "
            "minus the preStop sleep. `TemporalTasks(drain_grace_s=...)` overrides it.",
        ),
    ] = DEFAULT_DRAIN_GRACE_S
    stuck_call_timeout_s: Annotated[
        float,
        Field(
            gt=0,
            description="A plain `tools/call` waiting on a task whose body keeps failing (a "
            "workflow task failing again and again, an activity retrying, an activity type or "
            "a task queue no worker serves) for this long (seconds) ends with `-32004`, which "
            "names the task and the cause; the task keeps retrying, so a fix and a deploy "
            "still finish it, and `tasks/get` or a retry with the same `Idempotency-Key` "
            "reaches it. `TemporalTasks(stuck_call_timeout_s=...)` overrides it.",
        ),
    ] = DEFAULT_STUCK_CALL_TIMEOUT_S
    session_max_age_s: Annotated[
        float,
        Field(
            gt=0,
            description="How long (seconds) a 2025-xx MCP session id minted by a front end "
            "is served by any front end of the deployment; past it the id answers `404` and "
            "the client initializes again. The id carries its session (no store), so this "
            "bounds what a leaked id is worth; it carries this limit too, and every front "
            "end applies the limit an id was minted under. "
            "`TemporalTasks(session_max_age_s=...)` overrides it.",
        ),
    ] = DEFAULT_SESSION_MAX_AGE_S
    on_host_timeout: Annotated[
        Literal["detach", "cancel"],
        Field(
            description="What a host's timeout does to the task of a plain `tools/call`: a "
            '`notifications/cancelled` whose reason says the request timed out ("Request timed '
            "out\", as Gemini CLI, Qwen Code, opencode, Cline and Continue send it; Codex's "
            '"MCP request cancelled by caller") `detach`es '
            "the task -- it runs on, and the same call made again attaches to it and gets its "
            "result -- or `cancel`s it, as a cancel without a reason (a person's) always does. "
            "`TemporalTasks(on_host_timeout=...)` overrides it.",
        ),
    ] = "detach"
    host_limits: Annotated[
        dict[str, float],
        Field(
            description="Hard limits of hosts on one tool call, in seconds, by `clientInfo` "
            "name prefix (`*`: any other client; `0`: none), as JSON, e.g. "
            '`{"gemini-cli": 1800, "codex-mcp-client": 120}`. They override and extend the '
            "built-in table (Cline, Continue: 60; Gemini CLI, Qwen Code: 600). A plain call "
            "from such a host is answered a little before its limit, saying the work goes on "
            "and that calling again with the same arguments returns its result. "
            "`TemporalTasks(host_limits=...)` overrides it.",
        ),
    ] = {}
    codec_token: Annotated[
        SecretStr | None,
        Field(
            description="Bearer token `fastmcp-temporal codec-server` requires on every "
            "request. Unset: no token is asked for. `--token` overrides it."
        ),
    ] = None
    debug: Annotated[
        bool,
        Field(
            description="`fastmcp-temporal` re-raises an error with its traceback instead of "
            "printing one line, for bug reports."
        ),
    ] = False
    test_data_dir: Annotated[
        Path | None,
        Field(
            description="Data directory of the Temporal the pytest plugin "
            "(`fastmcp_temporal.testing`) starts for a test session. Unset: a fresh temporary "
            "directory."
        ),
    ] = None
    fairness: Annotated[
        bool,
        Field(
            description="Give each caller's tasks their own Temporal fairness key, so one "
            "caller's backlog does not delay the others' (Server >= 1.29 with fairness on and "
            "one write partition per task queue; the embedded server has both). "
            "`TemporalTasks(fairness=...)` overrides it, with `False` or a hook choosing key "
            "and weight."
        ),
    ] = True
    durable_sync_calls: Annotated[
        bool,
        Field(
            description="Run a `tools/call` of a `task=True` tool from a client that did not "
            "opt in to the tasks extension as a task's workflow and answer it when the task "
            "ends (`false`: inline in the front end, as `fastmcp-tasks` does). "
            "`TemporalTasks(durable_sync_calls=...)` and `ToolOptions(durable_sync_calls=...)` "
            "override it."
        ),
    ] = True
    max_open_tasks_per_caller: Annotated[
        int | None,
        Field(
            gt=0,
            description="At most this many open tasks per caller (its principal; anonymous "
            "callers share one), counted across front ends; over it `tools/call` answers the "
            "retryable `-32001`. Unset: no limit. `TemporalTasks(max_open_tasks_per_caller=...)` "
            "overrides it, `ToolOptions(max_open_tasks_per_caller=...)` per tool.",
        ),
    ] = None
    metrics_port: Annotated[
        int | None,
        Field(
            ge=0,
            le=65535,
            description="Serve Prometheus metrics (Temporal's SDK metrics and the MCP ones) on "
            "this port at `/metrics`. Unset: no endpoint. `TemporalTasks(metrics_port=...)` "
            "overrides it.",
        ),
    ] = None
    metrics_host: Annotated[
        str,
        Field(
            description="Address the metrics endpoint binds to (`0.0.0.0` in a container). "
            "`TemporalTasks(metrics_host=...)` overrides it."
        ),
    ] = "127.0.0.1"
    deployment_name: Annotated[
        str | None,
        Field(
            validation_alias="TEMPORAL_DEPLOYMENT_NAME",
            description="Worker Deployment of this process's worker, as the Temporal Worker "
            "Controller sets it (with `TEMPORAL_WORKER_BUILD_ID`). Unset with the build id: the "
            "worker is unversioned. `TemporalTasks(versioning=...)` and `--deployment-name` "
            "override it.",
        ),
    ] = None
    worker_build_id: Annotated[
        str | None,
        Field(
            validation_alias="TEMPORAL_WORKER_BUILD_ID",
            description="Build id of this process's worker within its Worker Deployment, as the "
            "Temporal Worker Controller sets it. `--build-id` overrides it.",
        ),
    ] = None


class _VariablesNotGiven(EnvSettingsSource):
    """The environment, for the fields that have a variable and whose value was not given.

    A given value wins without its variable being parsed (a malformed
    ``FASTMCP_TEMPORAL_HOST_LIMITS`` does not stop ``TemporalTasks(host_limits=...)``),
    and a field a subclass adds (``ExtensionOptions``: an argument only) reads none.
    """

    def __init__(self, settings_cls: type[BaseSettings], *, given: Collection[str]) -> None:
        super().__init__(settings_cls)
        self._read = set(TemporalTasksSettings.model_fields) - set(given)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        if field_name not in self._read:
            return None, field_name, False
        return super().get_field_value(field, field_name)

    def prepare_field_value(
        self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool
    ) -> Any:
        """A JSON variable that does not parse goes to validation as it is, so its error
        names the variable like any other (pydantic-settings' own names only the field)."""
        try:
            return super().prepare_field_value(field_name, field, value, value_is_complex)
        except ValueError:
            return value


def env_var(field: str) -> str:
    """The environment variable that sets ``field``."""
    alias = TemporalTasksSettings.model_fields[field].validation_alias
    return alias if isinstance(alias, str) else PREFIX + field.upper()


def revealed(secret: SecretStr | None) -> str | None:
    """A secret setting's value, for the one call that needs it in clear."""
    return secret.get_secret_value() if secret is not None else None


class SettingsError(ValueError):
    """A setting that does not validate; the message names its argument or variable."""


def load_settings() -> TemporalTasksSettings:
    """The environment as it is now; a bad value is a ``SettingsError`` naming its variable."""
    try:
        return TemporalTasksSettings()
    except ValidationError as err:
        raise SettingsError(problems(err)) from None


def problems(
    err: ValidationError,
    *,
    model: type[BaseSettings] = TemporalTasksSettings,
    arguments: Collection[str] = (),
) -> str:
    """Each error of ``model`` as ``name='value': what is wrong``: ``name`` is the argument
    when the value was one of ``arguments``, else its variable; a secret is not shown."""
    said = []
    for error in err.errors():
        where = str(error["loc"][0]) if error["loc"] else ""
        field = model.model_fields.get(where)
        if field is None:  # an aliased field's location is its variable already
            said.append(f"{where}: {error['msg']}")
            continue
        has_variable = where in TemporalTasksSettings.model_fields
        name = env_var(where) if has_variable and where not in arguments else where
        shown = "" if _is_secret(field.annotation) else f"={error['input']!r}"
        said.append(f"{name}{shown}: {error['msg']}")
    return "; ".join(said)


def _is_secret(annotation: Any) -> bool:
    return annotation is SecretStr or SecretStr in get_args(annotation)

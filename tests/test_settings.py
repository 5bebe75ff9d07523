"""One settings model: every variable reaches the part that uses it, and an argument wins.

Each test sets a variable the way an operator does (in the environment, after
``fastmcp_temporal`` is imported) and asks the part that uses it, not the model:
a part that ignores its variable, or reads it once at import, fails here. A
variable read by hand instead of through the model fails the last test.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.common import VersioningBehavior

from fastmcp_temporal import TemporalTasks, TemporalTasksSettings, WorkerVersioning
from fastmcp_temporal.server.cli import codec_server
from fastmcp_temporal.server.core.codec import codec_from_config
from fastmcp_temporal.server.core.settings import SettingsError, env_var, load_settings
from fastmcp_temporal.server.core.settings_reference import settings_reference_markdown
from fastmcp_temporal.server.embedded import shared
from fastmcp_temporal.server.payloads.payload_store import PayloadStoreSettings
from fastmcp_temporal.testing import session_data_dir
from tests.test_cli import run as run_command

ROOT = Path(__file__).resolve().parent.parent
KEY = "k1:" + "A" * 43 + "="
OTHER_KEY = "k2:" + "B" * 43 + "="
SECRET = "s" * 40
OTHER_SECRET = "t" * 40


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting of the session leaks in: each test sets only what it means."""
    for field in TemporalTasksSettings.model_fields:
        monkeypatch.delenv(env_var(field), raising=False)


def test_run_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TemporalTasks()._options.run_worker is True
    monkeypatch.setenv("FASTMCP_TEMPORAL_RUN_WORKER", "false")
    assert TemporalTasks()._options.run_worker is False
    assert TemporalTasks(run_worker=True)._options.run_worker is True


def test_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert shared.data_directory(None) == tmp_path / ".fastmcp-temporal"
    monkeypatch.setenv("FASTMCP_TEMPORAL_DATA_DIR", str(tmp_path / "from-env"))
    assert shared.data_directory(None) == tmp_path / "from-env"
    assert shared.data_directory(tmp_path / "given") == tmp_path / "given"
    payloads = PayloadStoreSettings.resolve(None, data_dir=load_settings().data_dir)
    assert payloads.disk_root == tmp_path / "from-env" / "payloads"


def test_encryption_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert codec_from_config().key_ids == []
    monkeypatch.setenv("FASTMCP_TEMPORAL_ENCRYPTION_KEY", KEY)
    assert codec_from_config().key_ids == ["k1"]
    assert codec_from_config(OTHER_KEY).key_ids == ["k2"]


def test_scope_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TemporalTasks()._options.scope_key() is None
    monkeypatch.setenv("FASTMCP_TEMPORAL_SCOPE_SECRET", SECRET)
    assert TemporalTasks()._options.scope_key() == SECRET.encode()
    assert TemporalTasks(scope_secret=OTHER_SECRET)._options.scope_key() == OTHER_SECRET.encode()


def test_payload_store_threshold_and_ceiling(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FASTMCP_TEMPORAL_PAYLOAD_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("FASTMCP_TEMPORAL_PAYLOAD_THRESHOLD", "1000")
    monkeypatch.setenv("FASTMCP_TEMPORAL_MAX_PAYLOAD_BYTES", "5000")
    from_env = PayloadStoreSettings.resolve(None, data_dir=tmp_path)
    assert (from_env.disk_root, from_env.threshold, from_env.max_payload_bytes) == (
        tmp_path / "store",
        1000,
        5000,
    )
    given = PayloadStoreSettings.resolve(
        str(tmp_path / "given"), data_dir=tmp_path, threshold=10, max_payload_bytes=20
    )
    assert (given.disk_root, given.threshold, given.max_payload_bytes) == (
        tmp_path / "given",
        10,
        20,
    )


def test_embedded_linger(monkeypatch: pytest.MonkeyPatch) -> None:
    assert shared.linger_s() == 3.0
    monkeypatch.setenv("FASTMCP_TEMPORAL_EMBEDDED_LINGER", "0.5")
    assert shared.linger_s() == 0.5


def test_query_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    assert TemporalTasks()._options.query_timeout == 2
    monkeypatch.setenv("FASTMCP_TEMPORAL_QUERY_TIMEOUT", "7.5")
    assert TemporalTasks()._options.query_timeout == 7.5
    assert TemporalTasks(query_timeout=timedelta(seconds=1))._options.query_timeout == 1


def test_codec_token(monkeypatch: pytest.MonkeyPatch) -> None:
    def token(*argv: str) -> str | None:
        parser = argparse.ArgumentParser()
        codec_server.register(parser.add_subparsers())
        return codec_server.bearer_token(parser.parse_args(["codec-server", *argv]))

    assert token() is None
    monkeypatch.setenv("FASTMCP_TEMPORAL_CODEC_TOKEN", "from-env")
    assert token() == "from-env"
    assert token("--token", "given") == "given"


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    tasks_list = ("tasks", "list", "--address", "127.0.0.1:1")
    quiet = run_command(*tasks_list, cwd=tmp_path)
    assert quiet.returncode == 1 and "Traceback" not in quiet.stderr, quiet.stderr
    loud = run_command(*tasks_list, cwd=tmp_path, FASTMCP_TEMPORAL_DEBUG="1")
    assert loud.returncode != 0 and "Traceback" in loud.stderr, loud.stderr


def test_test_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    monkeypatch.setenv("FASTMCP_TEMPORAL_TEST_DATA_DIR", "/srv/temporal-for-tests")
    assert session_data_dir(tmp_path_factory) == Path("/srv/temporal-for-tests")


def test_worker_versioning(monkeypatch: pytest.MonkeyPatch) -> None:
    assert WorkerVersioning.resolve() is None
    monkeypatch.setenv("TEMPORAL_DEPLOYMENT_NAME", "mcp")
    monkeypatch.setenv("TEMPORAL_WORKER_BUILD_ID", "sha1")
    assert WorkerVersioning.resolve() == WorkerVersioning("mcp", "sha1")
    assert WorkerVersioning.resolve(build_id="sha2") == WorkerVersioning(
        "mcp", "sha2", VersioningBehavior.PINNED
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FASTMCP_TEMPORAL_RUN_WORKER", "maybe"),
        ("FASTMCP_TEMPORAL_PAYLOAD_THRESHOLD", "256k"),
        ("FASTMCP_TEMPORAL_MAX_PAYLOAD_BYTES", "0"),
        ("FASTMCP_TEMPORAL_EMBEDDED_LINGER", "soon"),
        ("FASTMCP_TEMPORAL_QUERY_TIMEOUT", "0"),
    ],
)
def test_a_bad_value_is_an_error_that_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=rf"^{variable}='{value}': "):
        TemporalTasks()


def test_a_bad_secret_is_named_but_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FASTMCP_TEMPORAL_SCOPE_SECRET", "too-short")
    with pytest.raises(ValueError, match="FASTMCP_TEMPORAL_SCOPE_SECRET") as raised:
        TemporalTasks()
    assert "too-short" not in str(raised.value)


def test_the_reference_lists_every_variable_once() -> None:
    table = settings_reference_markdown()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [
        env_var(field) for field in TemporalTasksSettings.model_fields
    ]
    assert all(field.description for field in TemporalTasksSettings.model_fields.values())
    secret = next(row for row in rows if "ENCRYPTION_KEY" in row)
    assert "| secret | unset |" in secret


def test_no_part_reads_the_environment_by_hand() -> None:
    """Only the model reads our variables; what else touches the environment is named here."""
    allowed = {
        "server/cli/codec_server.py": "os.environ.get(args.env)",  # `codec-server --env NAME`
        "server/core/codec.py": 'os.environ["TASKS_KEY"]',  # a usage example in its docstring
        "fastmcp_temporal/testing.py": 'os.environ.get("PYTEST_XDIST_WORKER")',  # xdist's own
        "activities/remote_mcp.py": 'os.environ["TOKEN"]',  # a usage example in its docstring
    }
    by_hand = [
        f"{where}: {line.strip()}"
        for folder in ("server", "fastmcp_temporal", "activities", "workflows")
        for path in (ROOT / folder).rglob("*.py")
        if (where := str(path.relative_to(ROOT)))
        for line in path.read_text().splitlines()
        if re.search(r"os\.environ|getenv\(", line) and allowed.get(where, "\0") not in line
    ]
    assert by_hand == []


def test_an_argument_wins_over_its_variable_without_parsing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model reads a variable only for what no argument gave: a malformed one does
    not stop a server that does not use it, and where it is used, it is named."""
    monkeypatch.setenv("FASTMCP_TEMPORAL_HOST_LIMITS", "{not json")
    monkeypatch.setenv("FASTMCP_TEMPORAL_KEEPALIVE_S", "soon")
    options = TemporalTasks(host_limits={"cline": 90}, keepalive_s=5)._options
    assert (options.host_limits, options.keepalive_s) == ({"cline": 90.0}, 5)
    with pytest.raises(SettingsError) as raised:
        TemporalTasks()
    assert sorted(str(raised.value).split("; ")) == [
        "FASTMCP_TEMPORAL_HOST_LIMITS='{not json': Input should be a valid dictionary",
        "FASTMCP_TEMPORAL_KEEPALIVE_S='soon': Input should be a valid number, unable to "
        "parse string as a number",
    ]


def test_a_bad_argument_is_named_as_the_argument() -> None:
    with pytest.raises(SettingsError, match=r"^ttl_ms=0: Input should be greater than 0$"):
        TemporalTasks(ttl_ms=0)
    with pytest.raises(SettingsError, match=r"^api_key: ") as raised:
        TemporalTasks(api_key=["not", "a", "string"])  # type: ignore[arg-type]
    assert "not" not in str(raised.value).split(":", 1)[0]


def test_a_variable_set_after_the_extension_is_made_counts_when_it_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    extension = TemporalTasks(keepalive_s=4)
    monkeypatch.setenv("FASTMCP_TEMPORAL_CREDENTIALS_KEY_DIR", str(tmp_path))
    monkeypatch.setenv("FASTMCP_TEMPORAL_KEEPALIVE_S", "9")
    started = extension._options.at_start()
    assert (started.credentials_key_dir, started.keepalive_s) == (tmp_path, 4)

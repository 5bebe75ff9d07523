"""The default disk payload store on a configured Temporal: said at start-up, and on a miss.

With an explicit address and no payload store, big payloads go to the data
directory's ``payloads/`` on local disk: right on one host, wrong for workers
on other hosts. Real parts: the session's Temporal, a ``fastmcp-temporal
worker`` process with its own data directory ("host A") and a front end here
with another ("host B"): both say where big payloads go at start-up, and the
front end's read of a result the worker stored names the setting.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastmcp import Client
from mcp.shared.exceptions import MCPError

from fastmcp_temporal import DevServer, TemporalTasks
from fastmcp_temporal.client import call_tool_task
from fastmcp_temporal.server.cli.worker import READY_LINE
from fastmcp_temporal.server.payloads import payload_store
from fastmcp_temporal.server.payloads.payload_store import STORE_ENV
from tests.processes.big_server import build
from tests.processes.running import BIN, Process

MIB = 1024 * 1024


def notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == payload_store.__name__]


async def test_hosts_with_their_own_default_store_say_so_and_a_miss_names_the_setting(
    temporal_server: DevServer, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host_a, host_b = tmp_path / "host-a", tmp_path / "host-b"
    worker = Process(
        "worker",
        [str(BIN / "fastmcp-temporal"), "worker", "tests/processes/big_server.py"],
        {
            "TEMPORAL_ADDRESS": temporal_server.address,
            "BIG_TASK_QUEUE": task_queue,
            "FASTMCP_TEMPORAL_DATA_DIR": str(host_a),
        },
        tmp_path / "worker.log",
    )
    try:
        await worker.wait_for_output(READY_LINE)
        started = worker.output()
        assert started.count("payloads of 262144 bytes or more go to the local directory") == 1
        assert f"{host_a / 'payloads'} (no payload store configured)" in started
        assert f"set ${STORE_ENV} (or payload_store=, or --payload-store)" in started
        front_end = TemporalTasks(
            address=temporal_server.address,
            task_queue=task_queue,
            run_worker=False,
            data_dir=host_b,
        )
        with caplog.at_level(logging.WARNING, logger=payload_store.__name__):
            async with Client(build(front_end)) as client:
                (notice,) = notices(caplog)
                assert f"{(host_b / 'payloads').resolve()} (no payload store configured)" in notice
                task = await call_tool_task(client, "produce", {"size": 3 * MIB})
                with pytest.raises(MCPError) as raised:
                    await task.wait(timeout=120)
    finally:
        worker.stop()
    assert any((host_a / "payloads").rglob("*")), "the worker stored the result on its own disk"
    assert raised.value.error.code == -32603, "the server's configuration, not the client's input"
    # The client learns what happened; the paths and the fix are for the operator's log.
    assert raised.value.error.message == (
        "The task finished, but this server cannot read its stored result "
        "(a deployment problem; the server log says why)"
    )
    (missing,) = [
        r.exc_info[1]
        for r in caplog.records
        if r.exc_info and isinstance(r.exc_info[1], FileNotFoundError)
    ]
    assert str(missing).startswith("Payload blob 'default/mcp-anon-")
    assert f"is missing from {(host_b / 'payloads').resolve()}: " in str(missing)
    assert f"Every front end and worker must use one payload store: set ${STORE_ENV}" in str(
        missing
    )


async def test_no_notice_on_the_embedded_server_or_with_a_chosen_store(
    temporal_server: DevServer, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    chosen = TemporalTasks(
        address=temporal_server.address,
        task_queue=task_queue,
        payload_store=str(tmp_path / "shared"),
    )
    embedded = TemporalTasks(data_dir=temporal_server.data_dir, task_queue=task_queue)
    with caplog.at_level(logging.WARNING, logger=payload_store.__name__):
        async with Client(build(chosen)), Client(build(embedded)):
            assert embedded.dev_server is not None
    assert notices(caplog) == []

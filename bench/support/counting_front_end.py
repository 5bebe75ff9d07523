"""A stateless front end of ``waiting_server.py`` that counts the Temporal requests it makes.

    python bench/support/counting_front_end.py PORT COUNTS_FILE

Every request the front end's Temporal client sends (``temporalio``'s bridge client,
by RPC name) is counted, and the running totals are written to ``COUNTS_FILE`` (JSON)
every half second, so the benchmark can tell requests per second over any window.
The counting patches a temporalio internal on purpose: this is a measuring
instrument, and ``./dev bench-smoke`` runs it, so a temporalio that moves it fails there.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import temporalio.service as service

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["FASTMCP_TEMPORAL_RUN_WORKER"] = "false"

from waiting_server import mcp

counts: Counter[str] = Counter()
_rpc_call = service._BridgeServiceClient._rpc_call


async def _counted(self: Any, rpc: str, *args: Any, **kwargs: Any) -> Any:
    counts[rpc] += 1
    return await _rpc_call(self, rpc, *args, **kwargs)


def _write_every(path: Path, interval_s: float) -> None:
    while True:
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(dict(counts)))
        temporary.replace(path)
        time.sleep(interval_s)


if __name__ == "__main__":
    port, counts_file = int(sys.argv[1]), Path(sys.argv[2])
    service._BridgeServiceClient._rpc_call = _counted  # type: ignore[method-assign]
    threading.Thread(target=_write_every, args=(counts_file, 0.5), daemon=True).start()
    mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False, log_level="WARNING")

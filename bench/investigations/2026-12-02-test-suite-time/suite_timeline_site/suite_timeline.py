"""A pytest plugin: each test's start and end, per xdist worker, for ``suite_idle.py``.

```bash
PYTHONPATH=bench/investigations/2026-12-02-test-suite-time/suite_timeline_site \\
    SUITE_TIMELINE=/tmp/timeline.tsv ./dev test -p suite_timeline
```

One line per event, appended (``time``, ``worker``, ``start`` or ``end``, node id): the
workers append to one file, so the run's overlap of tests can be read back afterwards.
"""

from __future__ import annotations

import os
import time

_OUT = os.environ.get("SUITE_TIMELINE", "/tmp/fastmcp-temporal-timeline.tsv")
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "controller")


def _write(kind: str, nodeid: str) -> None:
    if _WORKER == "controller":
        return  # the controller only relays the workers' reports
    with open(_OUT, "a") as out:
        out.write(f"{time.time():.2f}\t{_WORKER}\t{kind}\t{nodeid}\n")


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _write("start", nodeid)


def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
    _write("end", nodeid)

"""Profiling only (``suite_profile.py``): each Python process appends its CPU and argv at exit.

On ``PYTHONPATH`` for one profiling run of the suite; never installed, never imported
by the package or the tests.
"""

import atexit
import os
import resource
import sys
import tempfile
import time

_STARTED = time.monotonic()
_LOG = os.environ.get(
    "SUITE_PROFILE_PROCS", os.path.join(tempfile.gettempdir(), "fastmcp-temporal-procs.tsv")
)


def _record() -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    argv = " ".join(sys.argv)[:200].replace("\t", " ")
    with open(_LOG, "a") as log:
        log.write(
            f"{os.getpid()}\t{usage.ru_utime + usage.ru_stime:.2f}\t"
            f"{time.monotonic() - _STARTED:.1f}\t{argv}\n"
        )


atexit.register(_record)

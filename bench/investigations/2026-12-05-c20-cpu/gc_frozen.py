"""Does the garbage collector's scan of a big heap cost the c=20 ratio?

Runs ``bench/compare.py`` with the given arguments, and 25 s in (servers up,
rows warmed) collects once and ``gc.freeze()``s every object alive then, so the
later generation-2 collections no longer walk FastMCP's, temporalio's and the
agent frameworks' import-time objects. Compare its ratios with the same
``compare.py`` command run plainly.

    .venv/bin/python bench/investigations/2026-12-05-c20-cpu/gc_frozen.py <compare.py args>
"""

from __future__ import annotations

import gc
import runpy
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2]
FREEZE_AT_S = 25.0


def freeze_later() -> None:
    time.sleep(FREEZE_AT_S)
    gc.collect()
    gc.freeze()
    print(f"froze {gc.get_freeze_count()} objects", file=sys.stderr, flush=True)


if __name__ == "__main__":
    threading.Thread(target=freeze_later, daemon=True).start()
    sys.argv = [str(BENCH / "compare.py"), *sys.argv[1:]]
    sys.path.insert(0, str(BENCH))
    runpy.run_path(str(BENCH / "compare.py"), run_name="__main__")

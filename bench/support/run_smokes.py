"""``./dev bench-smoke``: every maintained benchmark's ``--smoke``, one after the other.

The maintained benchmarks are the scripts at the top of ``bench/``. Each must have
its row in the index of ``bench/README.md`` and every row its script, or this
fails before running anything: a benchmark nobody can find, or a row that points
nowhere, is how ``bench/`` became unreadable. ``MORE`` runs a benchmark's smoke
again with the flags whose code its plain smoke leaves alone ("before" rows that
patch internals). A smoke that exits non-zero, or runs past ``TIMEOUT_S``, fails
the run, with the end of its output. Two run at a time: a smoke mostly waits on
Temporal round trips, and each has its own dev server and ports. CI runs this
beside the venvs' set-up.

    .venv/bin/python bench/support/run_smokes.py [name.py ...]   # all, or these
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
#: More smokes of a benchmark, each with flags whose code paths the plain one skips.
MORE: dict[str, list[list[str]]] = {
    "sync_breakdown.py": [["--patch-level-zero", "--sandboxed", "--progress", "--tool", "default"]],
}
#: A smoke takes seconds; this bounds a hung one.
TIMEOUT_S = 180
#: Smokes at once.
JOBS = 2
#: A row of the index: its first cell names the script, as a link.
INDEX_ROW = re.compile(r"^\| \[`(\w+\.py)`\]\(\1\) \|", re.MULTILINE)


def maintained() -> list[str]:
    return sorted(path.name for path in BENCH.glob("*.py"))


def indexed() -> list[str]:
    return sorted(INDEX_ROW.findall((BENCH / "README.md").read_text()))


def smoke(script: str, flags: list[str]) -> tuple[bool, float, str]:
    """Run one smoke from the repository root; (passed, seconds, its output's last lines)."""
    command = [sys.executable, str(BENCH / script), "--smoke", *flags]
    began = time.monotonic()
    with tempfile.TemporaryFile() as output:
        # Its own session, so a hung smoke is stopped with everything it started.
        process = subprocess.Popen(
            command,
            cwd=BENCH.parent,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            passed = process.wait(timeout=TIMEOUT_S) == 0
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            passed = False
        output.seek(0)
        tail = output.read().decode(errors="replace").splitlines()[-40:]
    return passed, time.monotonic() - began, "\n".join(tail)


def main(only: list[str]) -> int:
    scripts, rows = maintained(), indexed()
    if scripts != rows:
        print(
            "bench/README.md's index and the scripts at the top of bench/ differ: "
            f"not in the index {sorted(set(scripts) - set(rows))}, "
            f"no script {sorted(set(rows) - set(scripts))}",
            file=sys.stderr,
        )
        return 1
    runs = [(script, flags) for script in only or scripts for flags in [[], *MORE.get(script, [])]]
    failed = []
    with ThreadPoolExecutor(JOBS) as pool:
        outcomes = pool.map(lambda run: smoke(*run), runs)
        for (script, flags), (passed, seconds, tail) in zip(runs, outcomes, strict=True):
            name = " ".join([script, "--smoke", *flags])
            print(f"[bench-smoke] {name}: {'ok' if passed else 'FAILED'} in {seconds:.1f} s")
            if not passed:
                failed.append(name)
                print(tail, file=sys.stderr)
    if failed:
        print(f"[bench-smoke] failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

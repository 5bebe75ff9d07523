"""Where the test suite's time goes: per-module seconds from a JUnit XML, and CPU per process.

```bash
PYTHONPATH=bench/investigations/2026-12-02-test-suite-time/suite_profile_site \\
    ./dev test --junitxml=/tmp/suite.xml  # one run
.venv/bin/python bench/investigations/2026-12-02-test-suite-time/suite_profile.py \\
    /tmp/suite.xml /tmp/fastmcp-temporal-procs.tsv
```

The JUnit times are each test's setup + call + teardown as its xdist worker saw
it, so a test waiting for the ``exclusive`` lock counts its wait. The second file
is written by ``suite_profile_site/sitecustomize.py`` (beside this file): every Python process
of the run (pytest workers, the servers and workers the tests start, the CLI)
appends its CPU seconds and argv when it exits; a process killed with SIGKILL
writes nothing, so its CPU is missing from the count.
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET
from pathlib import Path


def module_table(junit: Path, top: int) -> list[str]:
    seconds: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    for case in ET.parse(junit).iter("testcase"):
        module = (case.get("classname") or "?").split(".")[-1]
        seconds[module] += float(case.get("time") or 0)
        counts[module] += 1
    total = sum(seconds.values())
    rows = ["| module | tests | seconds | share |", "|---|---:|---:|---:|"]
    for module, spent in seconds.most_common(top):
        rows.append(f"| {module} | {counts[module]} | {spent:.1f} | {100 * spent / total:.1f}% |")
    rest = seconds.most_common()[top:]
    rest_seconds = sum(spent for _, spent in rest)
    rest_tests = sum(counts[module] for module, _ in rest)
    rows.append(f"| {len(rest)} other modules | {rest_tests} | {rest_seconds:.1f} | |")
    rows.append(f"| **all** | {sum(counts.values())} | {total:.1f} | |")
    return rows


def _kind(argv: str) -> str:
    """A process's kind: the module or script it ran, without its arguments."""
    words = argv.split()
    if not words:
        return "?"
    if "xdist" in argv or words[0] == "-c":
        return "pytest worker (xdist)"
    if words[0] == "-m" and len(words) > 1:
        return f"-m {words[1]}"
    return Path(words[0]).name


def process_table(procs: Path) -> list[str]:
    cpu: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    for line in procs.read_text().splitlines():
        _pid, cpu_s, _wall, argv = [*line.split("\t"), ""][:4]
        kind = _kind(argv)
        cpu[kind] += float(cpu_s)
        counts[kind] += 1
    rows = ["| process | count | CPU s | CPU s each |", "|---|---:|---:|---:|"]
    for kind, spent in cpu.most_common():
        rows.append(f"| `{kind}` | {counts[kind]} | {spent:.1f} | {spent / counts[kind]:.2f} |")
    rows.append(f"| **all** | {sum(counts.values())} | {sum(cpu.values()):.1f} | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("junit", type=Path)
    parser.add_argument("procs", type=Path, nargs="?")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print("\n".join(module_table(args.junit, args.top)))
    if args.procs is not None:
        print()
        print("\n".join(process_table(args.procs)))


if __name__ == "__main__":
    main()

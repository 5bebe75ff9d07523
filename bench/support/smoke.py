"""``--smoke``: every maintained benchmark, run for a few seconds with tiny sizes.

A benchmark reaches into the package (its servers, its internals for "before"
rows), so a refactor can break it without any test noticing. ``--smoke`` runs the
whole benchmark -- every row, every code path that needs nothing outside this
machine's venv -- with sizes that take seconds, and prints its report to stdout,
never into ``bench/results/``: its numbers mean nothing, only that it ran.
``./dev bench-smoke`` (``run_smokes.py``) runs every one; CI runs that.
"""

from __future__ import annotations

import argparse
from typing import Any

HELP = "a few seconds, tiny sizes, report to stdout: checks that the benchmark still runs"


def parse_args(parser: argparse.ArgumentParser, **smoke: Any) -> argparse.Namespace:
    """The parsed arguments; with ``--smoke``, the values in ``smoke`` replace them."""
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        for name, value in smoke.items():
            setattr(args, name, value)
    return args

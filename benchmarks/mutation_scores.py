"""Mutation score per module from the results left in mutants/ (mutants/**/*.py.meta).

`make mutation` (benchmarks/mutation_run.py) keeps its scores in benchmarks/mutation_results.tsv
and leaves only the last module's mutants/ behind; this script reads whatever a plain
`mutmut run` (every module of `[tool.mutmut]` at once) left there.

A mutant counts as detected when a test failed (killed), timed out, crashed or the type checker
rejected it; as missed when every test passed (survived) or no test ran its code (no tests).
Timeouts are shown apart: on a loaded machine a slow test run times out too, so a score made
mostly of timeouts says little.
Target: at least 90% detected in each module.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

MUTANTS = Path("mutants")
DETECTED = {"killed", "timeout", "segfault", "caught by type check"}
TARGET = 0.90


def main() -> int:
    """Print one row per mutated module; exit 1 when a module is below the target."""
    metas = sorted(MUTANTS.rglob("*.py.meta"))
    if not metas:
        print("no results under mutants/: run `make mutation` first", file=sys.stderr)
        return 2
    below = 0
    print(
        f"{'module':48} {'mutants':>8} {'detected':>9} {'timeout':>9} {'survived':>9} "
        f"{'no tests':>9} {'score':>7}"
    )
    for meta in metas:
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        statuses = Counter(status_by_exit_code.get(code, "not checked") for code in codes.values())
        checked = sum(count for status, count in statuses.items() if status != "not checked")
        if not checked:
            continue
        detected = sum(statuses[status] for status in DETECTED)
        score = detected / checked
        below += score < TARGET
        module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
        print(
            f"{module:48} {checked:9d} {detected:9d} {statuses['timeout']:9d} "
            f"{statuses['survived']:9d} "
            f"{statuses['no tests']:9d} {score:7.1%}"
        )
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())

"""Print the mutation score per module after ``mutmut run`` (the last step of
``tox -e mutation``): mutants killed, survived, reached by no test and not run yet, and the
score, killed / (killed + survived + no tests).

A mutant's name is ``<module>.x_<function>__mutmut_<n>`` (``xǁClassǁmethod`` for methods),
so the module is what comes before the first ``.x``.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter, defaultdict


def outcomes() -> dict[str, Counter[str]]:
    listing = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"],
                             capture_output=True, text=True, check=True).stdout
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for line in listing.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if not sep or "__mutmut_" not in name:
            continue
        module = name.split(".x", 1)[0]
        by_module[module][status] += 1
    return dict(by_module)


# A timed-out mutant made a test hang, so the suite noticed it: it counts as killed. A mutant
# no test reaches counts against the score: nothing would notice that change.
DETECTED = ("killed", "timeout")
MISSED = ("survived", "no tests")


def main() -> int:
    found = outcomes()
    if not found:
        print("no mutmut results: run `mutmut run` (or tox -e mutation) first")
        return 1
    print(f"{'module':<40} {'killed':>7} {'survived':>9} {'no tests':>9} {'not run':>8} "
          f"{'score':>7}")
    total: Counter[str] = Counter()
    for module in sorted(found):
        total.update(found[module])
        print(_row(module, found[module]))
    print(_row("all", total))
    return 0


def _row(name: str, counts: Counter[str]) -> str:
    killed = sum(counts[status] for status in DETECTED)
    missed = sum(counts[status] for status in MISSED)
    not_run = sum(counts.values()) - killed - missed
    score = f"{killed / (killed + missed):.1%}" if killed + missed else "—"
    return (f"{name:<40} {killed:>7} {counts['survived']:>9} {counts['no tests']:>9} "
            f"{not_run:>8} {score:>7}")


if __name__ == "__main__":
    raise SystemExit(main())

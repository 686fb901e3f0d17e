"""Print the mutation score per module after ``mutmut run`` (the last step of
``tox -e mutation``): killed, survived and the other outcomes, and the share killed.

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


def main() -> int:
    found = outcomes()
    if not found:
        print("no mutmut results: run `mutmut run` (or tox -e mutation) first")
        return 1
    total: Counter[str] = Counter()
    print(f"{'module':<44} {'killed':>7} {'survived':>9} {'other':>6} {'score':>7}")
    for module in sorted(found):
        counts = found[module]
        total.update(counts)
        other = sum(n for status, n in counts.items() if status not in ("killed", "survived"))
        judged = counts["killed"] + counts["survived"]
        score = f"{counts['killed'] / judged:.1%}" if judged else "—"
        print(f"{module:<44} {counts['killed']:>7} {counts['survived']:>9} {other:>6} "
              f"{score:>7}")
    judged = total["killed"] + total["survived"]
    print(f"{'all':<44} {total['killed']:>7} {total['survived']:>9} "
          f"{sum(total.values()) - judged:>6} {total['killed'] / judged:>7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

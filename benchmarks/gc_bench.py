"""What Python's cyclic garbage collector costs a warm re-run of judged outputs, phase by phase.

    python benchmarks/gc_bench.py [--cases 200] [--runs 5]

The project of ``judge_throughput.py`` (``--cases`` QA cases, one judge request each, the
fake OpenAI-compatible server in its own process) is run once cold, untimed, to fill the
cache, then ``--runs`` times warm, each in a fresh interpreter that runs ``pytest.main``
with the collector's own callbacks (:data:`gc.callbacks`) timing every collection. It
prints, per run and as medians: the seconds the collector spent during collection, during
the rest of the run (the tests, the scorecard, pytest's closing checks), in the explicit
``gc.collect()`` calls pytest makes as it ends (its check for exceptions raised in
finalisers), and how many objects were frozen while the tests ran. The whole process's
wall time is printed beside them; compare two trees with ``PYTHONPATH=<checkout>``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

# A sibling script, found through the path above.
import judge_throughput

HOST = r"""
import gc, json, sys, time
import pytest

spent = {"collection": 0.0, "after collection": 0.0, "explicit": 0.0}
phase = ["start-up"]
started = [0.0]
explicit = [False]
frozen = [None]


def timed(stage, info):
    if stage == "start":
        started[0] = time.perf_counter()
        return
    elapsed = time.perf_counter() - started[0]
    if explicit[0]:
        spent["explicit"] += elapsed
    elif phase[0] != "start-up":
        spent[phase[0]] += elapsed


gc.callbacks.append(timed)
collect = gc.collect


def counted(*args):
    explicit[0] = True
    try:
        return collect(*args)
    finally:
        explicit[0] = False


gc.collect = counted


class Phases:
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(self, session):
        phase[0] = "collection"
        try:
            return (yield)
        finally:
            phase[0] = "after collection"

    def pytest_runtest_call(self, item):
        # Once: the count walks the whole frozen list (milliseconds for 58,000 objects
        # spread over memory; every test asking cost a warm run more than a second).
        if frozen[0] is None:
            frozen[0] = gc.get_freeze_count()


begin = time.perf_counter()
code = pytest.main(sys.argv[1:], plugins=[Phases()])
print(json.dumps({"code": int(code), "wall": time.perf_counter() - begin,
                  "frozen": frozen[0] or 0, **spent}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with judge_throughput.fake_server(0.2) as base_url:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "project"
            root.mkdir()
            judge_throughput.write_project(root, args.cases)
            (root / "conftest.py").write_text("", encoding="utf-8")  # no phase marks here
            command = [
                "-q", "-p", "no:xdist", "--callqa-judge", "openai",
                "--callqa-judge-base-url", base_url, "--callqa-judge-mode", "per-metric",
                "--no-callqa-benchmarks", f"--callqa-cache-dir={Path(tmp) / 'cache'}",
                "--callqa-report", "report.json"]
            env = {**os.environ, "OPENAI_API_KEY": judge_throughput.API_KEY,
                   "PYTEST_DEBUG_TEMPROOT": str(Path(tmp))}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            rows = []
            for run in range(args.runs + 1):
                done = subprocess.run([sys.executable, "-c", HOST, *command], cwd=root,
                                      env=env, capture_output=True, text=True, timeout=300)
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                if figures["code"] != 0:
                    raise SystemExit(f"pytest exited {figures['code']}:\n{done.stdout}")
                if run:  # the first run fills the cache
                    rows.append(figures)
                    print(f"warm run {run}: wall {figures['wall']:.3f} s; collector "
                          f"{figures['collection'] * 1000:.1f} ms in collection, "
                          f"{figures['after collection'] * 1000:.1f} ms after it, "
                          f"{figures['explicit'] * 1000:.1f} ms in pytest's explicit "
                          f"collections; {figures['frozen']} objects frozen during the tests")
                time.sleep(0.2)
        medians = {key: statistics.median(r[key] for r in rows)
                   for key in ("collection", "after collection", "explicit", "frozen", "wall")}
        print(f"medians of {len(rows)}: collector {medians['collection'] * 1000:.1f} ms in "
              f"collection, {medians['after collection'] * 1000:.1f} ms after it, "
              f"{medians['explicit'] * 1000:.1f} ms in pytest's explicit collections; "
              f"{medians['frozen']:.0f} objects frozen; wall {medians['wall']:.3f} s")


if __name__ == "__main__":
    main()

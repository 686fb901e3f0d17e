"""Judge-bound speed: N cases x 1 judge call against a fake server of fixed latency.

    python benchmarks/judge_throughput.py [--cases 200] [--latency 0.2] [--concurrency 16]
                                          [--only pytest|engine]

The fake OpenAI-compatible server runs in its own process (a real judge is remote and does
not share this interpreter's CPU). Every scenario scores ``--cases`` QA outputs with the LLM
judge in per-metric mode and the Layer 2 benchmarks off, which is exactly one judge request
per case (``evidence_backed_reasoning``), and prints:

- wall: seconds (see below for what each scenario's wall covers);
- requests / unique: what the server received, and how many distinct request bodies;
- peak: the most requests the server had in flight at once;
- ratio: wall ÷ (requests × latency ÷ concurrency); 1.0 is the ideal.

**pytest scenarios** (the plugin, end to end): a generated project with ``--cases`` golden
cases and recorded outputs, run as ``pytest --callqa-judge openai --callqa-judge-mode
per-metric --no-callqa-benchmarks`` without xdist and with ``-n 2``, each with a cold cache
and then warm (which must send nothing). Two walls: the whole ``pytest`` process (start-up,
imports, collection, xdist workers, 200 tests, the scorecard) and the judge phase, which the
plugin measures itself (``run.judge_usage.per_process.resolve_s`` of the JSON report: the
longest up-front judge batch of any process). Two ratios, one per wall.

**engine scenarios** (``evaluate_many`` with no pytest): one process, cold then warm; two
processes sharing one cache directory, each with half of the cases, cold then warm; and two
processes that both evaluate every case — the worst case for exactly-once, and what xdist
workers do, since each resolves every call of the run. Wall is the ``evaluate_many`` call;
for worker processes, from the moment all are ready until the last one is done.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.evaluate import evaluate_many, prepare
from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.llm.cache import JudgeCache

MODEL = "gpt-4o-mini"
API_KEY = "sk-callqa-benchmark-not-a-real-key"


def build_items(count: int) -> list[tuple[GoldenCase, Any, str]]:
    """``count`` distinct QA cases, each with a valid output of model ``candidate``."""
    items = []
    for i in range(count):
        case = GoldenCase.model_validate({
            "id": f"bench-qa-{i:04d}",
            "task": "qa",
            "transcript": [
                {"speaker": "agent", "text": f"Thank you for calling, this is desk {i}.",
                 "start": 0},
                {"speaker": "customer", "text": f"My order {1000 + i} arrived damaged.",
                 "start": 4},
                {"speaker": "agent", "text": "I am sorry, I will send a replacement today.",
                 "start": 9},
            ],
            "config": {"questions": [
                {"question_id": "greeting", "text": "Did the agent greet?", "type": "PASS_FAIL",
                 "max_score": 1},
                {"question_id": "resolution", "text": "Was it resolved?", "type": "SCORE",
                 "max_score": 5},
            ]},
            "expected_outcome": {"questions": [
                {"question_id": "greeting", "score": 1, "max_score": 1, "type": "PASS_FAIL",
                 "reason": "Agent said 'Thank you for calling' at 00:00."},
                {"question_id": "resolution", "score": 5, "max_score": 5, "type": "SCORE",
                 "reason": "Replacement promised at 00:09."},
            ]},
        })
        output = {"questions": [
            {"question_id": "greeting", "score": 1, "max_score": 1, "type": "PASS_FAIL",
             "reason": 'Agent said "Thank you for calling" at 00:00.'},
            {"question_id": "resolution", "score": 4, "max_score": 5, "type": "SCORE",
             "reason": 'Agent said "I will send a replacement today" at 00:09.'},
        ]}
        items.append((case, output, "candidate"))
    return items


def make_judge(base_url: str, cache_dir: str, concurrency: int) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=base_url, api_key=API_KEY, mode="per-metric",
                       concurrency=concurrency, cache=JudgeCache(cache_dir, "rw"),
                       timeout=30.0)


def control(base_url: str, action: str) -> dict[str, Any]:
    root = base_url.removesuffix("/v1")
    method = "POST" if action == "reset" else "GET"
    request = urllib.request.Request(f"{root}/_callqa/{action}", method=method,
                                     data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data


# --- worker processes -------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    """Evaluate a shard once the parent says go; report wall time and verdict counts."""
    items = build_items(args.cases)
    if args.shard != "all":
        index, total = (int(x) for x in args.shard.split("/"))
        items = items[index::total]
    judge = make_judge(args.base_url, args.cache_dir, args.concurrency)
    # What an xdist worker has done before its first test runs: imports, collection.
    prepare(items[0][0], items[0][1])
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    results = evaluate_many(items, judge=judge, benchmarks=False)
    wall = time.perf_counter() - start
    flagged = sum(1 for r in results for rec in r.judge_records if rec["flagged"])
    print(json.dumps({"wall": wall, "results": len(results), "flagged": flagged,
                      "usage": judge.usage_summary()}), flush=True)


def run_workers(args: argparse.Namespace, base_url: str, cache_dir: str,
                shards: list[str]) -> tuple[float, list[dict[str, Any]]]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", "--shard", shard, "--cases", str(args.cases),
             "--concurrency", str(args.concurrency), "--base-url", base_url,
             "--cache-dir", cache_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for shard in shards
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"worker failed to start: {line!r}")
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            assert proc.stdout is not None
            reports.append(json.loads(proc.stdout.readline()))
        wall = time.perf_counter() - start
    finally:
        for proc in procs:
            proc.wait(timeout=120)
    return wall, reports


# --- pytest runs --------------------------------------------------------------------------

PYPROJECT = """\
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider -p no:randomly"
callqa_cases = "cases"
callqa_outputs = "outputs"
callqa_embeddings = "tfidf"
"""

TESTS = """\
def test_judged(callqa_result):
    assert callqa_result.metric("evidence_backed_reasoning").scored
"""


def write_project(root: Path, count: int) -> None:
    """``count`` golden cases, recorded outputs of model ``candidate``, one test."""
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "test_judge.py").write_text(TESTS, encoding="utf-8")
    for folder in ("cases", "outputs/candidate"):
        (root / folder).mkdir(parents=True)
    for case, output, model in build_items(count):
        data = case.model_dump(mode="json", exclude_none=True)
        (root / "cases" / f"{case.id}.json").write_text(json.dumps(data), encoding="utf-8")
        (root / "outputs" / model / f"{case.id}.json").write_text(json.dumps(output),
                                                                   encoding="utf-8")


def run_pytest(args: argparse.Namespace, root: Path, base_url: str, cache_dir: Path,
               xdist: list[str]) -> tuple[float, float, str]:
    """One ``pytest`` run of the project: (wall, judge phase, summary line)."""
    command = [
        sys.executable, "-m", "pytest", "-q", *xdist, "--callqa-judge", "openai",
        "--callqa-judge-base-url", base_url, "--callqa-judge-mode", "per-metric",
        "--no-callqa-benchmarks", "--callqa-concurrency", str(args.concurrency),
        "--callqa-cache-dir", str(cache_dir), "--callqa-report", "report.json",
    ]
    env = {**os.environ, "OPENAI_API_KEY": API_KEY}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    phase = report["run"]["judge_usage"]["per_process"]["resolve_s"]
    return wall, phase, done.stdout.strip().splitlines()[-1]


def pytest_scenarios(args: argparse.Namespace, base_url: str) -> None:
    print(f"\npytest runs ({args.cases} tests; ratio of the whole run, and of the judge "
          "phase the plugin measured)")
    print(f"{'scenario':<26} {'wall s':>7} {'phase s':>7} {'requests':>9} {'unique':>7} "
          f"{'peak':>5} {'ideal s':>7} {'ratio':>6} {'phase ratio':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        write_project(root, args.cases)
        for label, xdist in (("no xdist", ["-p", "no:xdist"]), ("-n 2", ["-n", "2"])):
            cache_dir = Path(tmp) / f"cache-{xdist[-1]}"
            for temperature in ("cold", "warm"):
                control(base_url, "reset")
                wall, phase, summary = run_pytest(args, root, base_url, cache_dir, xdist)
                stats = control(base_url, "stats")
                print(row(f"{label}, {temperature} cache", wall, stats, args, phase=phase,
                          width=26) + f"   ({summary})")


# --- main -------------------------------------------------------------------------------


def row(name: str, wall: float, stats: dict[str, Any], args: argparse.Namespace, *,
        phase: float | None = None, width: int = 38) -> str:
    requests = stats["requests"]
    ideal = requests * args.latency / args.concurrency
    ratio = f"{wall / ideal:6.3f}" if ideal else "   n/a"
    text = f"{name:<{width}} {wall:7.3f}"
    if phase is not None:
        text += f" {phase:7.3f}"
    text += (f" {requests:9d} {stats['unique_requests']:7d} {stats['peak_in_flight']:5d} "
             f"{ideal:7.3f} {ratio}")
    if phase is not None:
        text += f" {phase / ideal:11.3f}" if ideal else f" {'n/a':>11}"
    return text


def engine_scenarios(args: argparse.Namespace, base_url: str) -> None:
    print("\nengine only (evaluate_many, no pytest)")
    print(f"{'scenario':<38} {'wall s':>7} {'requests':>9} {'unique':>7} {'peak':>5} "
          f"{'ideal s':>7} {'ratio':>6}")
    items = build_items(args.cases)
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as halves, \
            tempfile.TemporaryDirectory() as both:
        # Imports and the task registry, as at the start of a pytest session.
        prepare(items[0][0], items[0][1])
        for label in ("1 process, cold cache", "1 process, warm cache"):
            judge = make_judge(base_url, one, args.concurrency)
            control(base_url, "reset")
            start = time.perf_counter()
            results = evaluate_many(items, judge=judge, benchmarks=False)
            wall = time.perf_counter() - start
            assert len(results) == args.cases
            print(row(label, wall, control(base_url, "stats"), args))
        for label, cache_dir, shards in (
            ("2 processes (halves), cold cache", halves, ["0/2", "1/2"]),
            ("2 processes (halves), warm cache", halves, ["0/2", "1/2"]),
            ("2 processes (both all cases), cold", both, ["all", "all"]),
        ):
            control(base_url, "reset")
            wall, reports = run_workers(args, base_url, cache_dir, shards)
            assert sum(r["results"] for r in reports) == args.cases * (
                2 if shards == ["all", "all"] else 1)
            print(row(label, wall, control(base_url, "stats"), args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--only", choices=("pytest", "engine"), default=None,
                        help="run only the pytest or only the engine scenarios")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--shard", default="all", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    server = subprocess.Popen(
        [sys.executable, "-m", "pytest_callqa.testing.fake_openai", "--latency",
         str(args.latency), "--max-lifetime", "900"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        print(f"{args.cases} QA cases x 1 judge call, latency {args.latency * 1000:g} ms, "
              f"concurrency {args.concurrency}, fake server {base_url}; ideal = requests x "
              "latency / concurrency")
        if args.only != "engine":
            pytest_scenarios(args, base_url)
        if args.only != "pytest":
            engine_scenarios(args, base_url)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

"""Judge-bound speed: N cases x 1 judge call against a fake server of fixed latency.

    python benchmarks/judge_throughput.py [--cases 200] [--latency 0.2] [--concurrency 16]

The fake OpenAI-compatible server runs in its own process (a real judge is remote and does
not share this interpreter's CPU). Each scenario scores ``--cases`` QA outputs through
``evaluate_many`` with the LLM judge in per-metric mode and ``benchmarks=False``, which is
exactly one judge request per case (``evidence_backed_reasoning``), and prints:

- wall: seconds of the judge-bound phase (``evaluate_many``; for worker processes, from the
  moment all of them are ready until the last one is done — as pytest-xdist workers, which
  collect before they run);
- requests / unique: what the server received, and how many distinct request bodies;
- peak: the most requests the server had in flight at once;
- ratio: wall ÷ (requests × latency ÷ concurrency); 1.0 is the ideal.

Scenarios: one process with a cold cache, then warm (must send nothing); two processes
sharing one cache directory, each with half of the cases (as two xdist workers), cold and
then warm; and two processes that both evaluate every case — the worst case for
exactly-once, where each request must still be sent by only one of them.

A real ``pytest -n 2`` run is not part of this script: the plugin does not build the LLM
judge from its options yet. The two-process scenarios exercise the same mechanism xdist
workers use (a shared cache directory: per-key locks and shared concurrency slots).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

from pytest_callqa.engine.cases import GoldenCase
from pytest_callqa.engine.evaluate import evaluate_many, prepare
from pytest_callqa.engine.judges.cache import JudgeCache
from pytest_callqa.engine.judges.llm import OpenAIJudge

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


# --- main -------------------------------------------------------------------------------


def row(name: str, wall: float, stats: dict[str, Any], args: argparse.Namespace) -> str:
    requests = stats["requests"]
    ideal = requests * args.latency / args.concurrency
    ratio = f"{wall / ideal:6.3f}" if ideal else "   n/a"
    return (f"{name:<38} {wall:7.3f} {requests:9d} {stats['unique_requests']:7d} "
            f"{stats['peak_in_flight']:5d} {ideal:7.3f} {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--concurrency", type=int, default=16)
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
              f"concurrency {args.concurrency}, fake server {base_url}")
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
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

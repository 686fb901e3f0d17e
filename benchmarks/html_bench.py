"""Time the HTML report of a large run: 1,000 golden cases × 3 models (3,000 case entries,
eight tasks with their real metric definitions, outputs, reasons and judge records of a
realistic size), rendered by ``render_html``; prints the time (best of 3) and the file size.

Run as ``python benchmarks/html_bench.py``. ``--browser`` also times headless Chromium
(when installed) loading the page and taking a screenshot, against an empty page, so the
difference is what the report costs the browser. ``--out PATH`` keeps the page.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_callqa.engine.registry import default_registry
from pytest_callqa.run.html import render_html

MODELS = ("large", "mini", "budget")
CASES = 1_000
REPEATS = 3
SEED = 20261123
_WORDS_TEXT = (
    "refund order account card balance transfer shipping return manager agent customer "
    "verify address invoice delayed escalate policy window ninety days member bronze "
    "gold confirm amount phone email number callback"
)
WORDS = _WORDS_TEXT.split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(WORDS, k=n)).capitalize() + "."


def build(rng: random.Random) -> dict[str, Any]:
    registry = default_registry()
    tasks = list(registry.tasks)
    specs = {t: [s.describe() for s in registry.metrics_for(t)] for t in tasks}
    golden = {}
    for n in range(CASES):
        task = tasks[n % len(tasks)]
        golden[f"{task}-{n:04d}"] = {
            "task": task, "turns": 30, "expected_outcome": {
                "answer": sentence(rng, 25), "items": [sentence(rng, 4) for _ in range(5)]},
            "transcript_excerpt": [f"turn {i}: {('agent', 'customer')[i % 2]}: "
                                   + sentence(rng, 14) for i in range(12)]}
    cases = []
    totals: dict[str, dict[str, dict[str, list[float]]]] = {}
    for model in MODELS:
        for case_id, case in golden.items():
            task = case["task"]
            metrics = {}
            for spec in specs[task]:
                value = rng.random() * (5.0 if spec["scale"] == "0-5" else 1.0)
                bands = spec["bands"]
                good = bands and (value >= bands["good"]) == bands["higher_is_better"]
                metrics[spec["id"]] = {
                    "value": value, "scored": True, "rating": "good" if good else "fail",
                    "reason": sentence(rng, 22), "blocker": False, "flagged": False,
                    "judge_error": False, "details": {"turns": [3, 7]}}
                totals.setdefault(model, {}).setdefault(task, {}).setdefault(
                    spec["id"], []).append(value)
            cases.append({
                "task": task, "case_id": case_id, "model": model, "run": 0,
                "score": rng.random(), "valid": True, "blocked": False, "blockers": [],
                "metrics": metrics, "not_scored": [], "renormalised": False,
                "judge_records": [{"metric": spec["id"], "judge": "openai", "score": 4.0,
                                   "reason": sentence(rng, 18),
                                   "expected_outcome_reference": sentence(rng, 8),
                                   "model_output_observed": sentence(rng, 8),
                                   "flagged": False} for spec in specs[task][:3]],
                "usage": {"prompt_tokens": 900, "completion_tokens": 300}, "notes": [],
                "judge_errors": [], "output": {"answer": sentence(rng, 30), "items": [
                    sentence(rng, 4) for _ in range(5)]}})
    models = {}
    for model in MODELS:
        models[model] = {"tasks": {
            task: {"score": 0.5, "cases": CASES // len(tasks), "invalid_cases": 0,
                   "judge_error_cases": 0, "blocked_cases": 0, "disqualified": False,
                   "not_scored": [], "metrics": {
                       mid: {"value": sum(v) / len(v), "rating": "acceptable",
                             "blocker": False} for mid, v in per_metric.items()}}
            for task, per_metric in totals[model].items()},
            "benchmarks": {}, "benchmark_score": None, "final_score_a": 0.5,
            "final_score_b": 0.5, "cost_per_1000_calls": 1.0, "cost_adjusted_rank": 1,
            "any_blocker": False, "missing_tasks": [], "usage": {}}
    return {"schema": "callqa-report/1", "run": {"judge": {"name": "openai"}},
            "models": models, "model_order": list(MODELS), "metric_specs": specs,
            "golden_cases": golden, "cases": cases, "not_evaluated": [], "notes": [],
            "judge_errors": {}}


def browser_seconds(binary: str, page: Path, work: Path) -> float:
    """Wall time of headless Chromium loading ``page`` and writing a screenshot."""
    start = time.perf_counter()
    subprocess.run([binary, "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--no-first-run", "--disable-background-networking",
                    f"--user-data-dir={work / 'profile'}", "--window-size=1280,900",
                    f"--screenshot={work / 'shot.png'}", page.as_uri()],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
                   check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", action="store_true",
                        help="also time headless Chromium opening the page")
    parser.add_argument("--out", type=Path, help="keep the page at this path")
    args = parser.parse_args()
    report = build(random.Random(SEED))
    times, page = [], ""
    for _ in range(REPEATS):
        start = time.perf_counter()
        page = render_html(report)
        times.append(time.perf_counter() - start)
    size = len(page.encode())
    print(f"render_html, {len(report['cases']):,} case entries: {min(times):.3f} s "
          f"(best of {REPEATS}); file {size / 1e6:.2f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        target = args.out or work / "report.html"
        target.write_text(page, encoding="utf-8")
        binary = shutil.which("chromium")
        if args.browser and binary is None:
            print("chromium not found: browser timing skipped")
        elif args.browser and binary is not None:
            empty = work / "empty.html"
            empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
            base = min(browser_seconds(binary, empty, work) for _ in range(REPEATS))
            full = min(browser_seconds(binary, target, work) for _ in range(REPEATS))
            print(f"headless chromium load + screenshot: {full:.2f} s against {base:.2f} s "
                  f"for an empty page (the report adds {full - base:.2f} s)")


if __name__ == "__main__":
    main()

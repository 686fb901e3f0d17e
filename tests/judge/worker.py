"""A judge run in its own process, for the cross-process and kill tests.

    python worker.py BASE_URL CACHE_DIR COUNT [CONCURRENCY] [START] [BUDGET RUN_ID]

Judges COUNT QA outputs (cases START…) in per-metric mode with a shared cache directory and
prints one JSON line: verdict count, flagged count, and the judge's usage summary. With
BUDGET (US dollars, at $1 per million tokens) the cache is off and the budget is shared,
through the directory, with every worker given the same RUN_ID.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.llm.cache import JudgeCache
from pytest_callqa.engine.pricing import PriceTable
from tests.judge.helpers import MODEL, SECRET, qa_items


def main() -> None:
    base_url, cache_dir, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    concurrency = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    start = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    budget = float(sys.argv[6]) if len(sys.argv) > 6 else None
    run_id = sys.argv[7] if len(sys.argv) > 7 else None
    judge = OpenAIJudge(MODEL, base_url=base_url, api_key=SECRET, mode="per-metric",
                        concurrency=concurrency,
                        cache=JudgeCache(cache_dir, "rw" if budget is None else "off"),
                        timeout=5.0, max_retries=2, budget_usd=budget, run_id=run_id,
                        prices=PriceTable({MODEL: (1.0, 1.0)}))
    print("ready", flush=True)
    results = evaluate_many(qa_items(count, start), judge=judge, benchmarks=False)
    flagged = sum(1 for r in results for rec in r.judge_records if rec["flagged"])
    print(json.dumps({"verdicts": len(results), "flagged": flagged,
                      "usage": judge.usage_summary()}), flush=True)


if __name__ == "__main__":
    main()

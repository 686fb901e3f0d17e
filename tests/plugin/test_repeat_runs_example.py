"""The example project over three runs against a fake judge with seeded noise: every model
gets a pass rate, pass^k and a Consistency Score, a case whose runs disagree is flaky, a cold
cache sends three times the requests of a single run and a warm one sends none.

A subset of the example project (one QA case, three models) keeps it fast; the whole project
was run by hand (docs/statistics.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
SUBSET = "qa_score_meets and hvb-0126ffdc"
MODELS = ("northwind-large", "northwind-mini", "budget-7b")


def _run(server: Any, tmp_path: Path, name: str, *extra: str) -> tuple[dict[str, Any], str]:
    report = tmp_path / f"{name}.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-repeat-runs-test"}
    env.pop("OPENAI_BASE_URL", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-k", SUBSET, "-q", "-rA",
         "-p", "no:cacheprovider", "--callqa-judge", "openai",
         f"--callqa-judge-base-url={server.base_url}", "--callqa-embeddings", "tfidf",
         f"--callqa-cache-dir={tmp_path / 'cache'}", f"--callqa-report={report}", *extra],
        cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=240)
    assert report.exists(), run.stdout[-3000:] + run.stderr[-2000:]
    return json.loads(report.read_text(encoding="utf-8")), run.stdout


def test_three_runs_against_a_noisy_judge(fake: Callable[..., Any], tmp_path: Path) -> None:
    # The noise is seeded by the request body, so a change to what a judge call sends (a
    # max_tokens bound, say) redraws it; at 0.6 a case crossing its bar in one run of three
    # does not hang on one lucky draw.
    server = fake(judge_noise=0.6, seed=8)
    single_dir, repeated_dir = tmp_path / "single", tmp_path / "repeated"
    single_dir.mkdir()
    repeated_dir.mkdir()

    single, single_out = _run(server, single_dir, "single")
    one_run = server.unique_requests
    assert one_run > 0 and server.requests == one_run
    assert "REPEATED RUNS" not in single_out
    assert all("runs" not in c and "passed" not in c for c in single["cases"])

    server.reset_counters()
    data, out = _run(server, repeated_dir, "cold", "--callqa-runs", "3")
    assert server.requests == 3 * one_run
    assert server.unique_requests == 3 * one_run

    cases = data["cases"]
    assert len(cases) == 3 * len(MODELS)
    assert sorted(c["run"] for c in cases) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for name in MODELS:
        model = data["models"][name]
        runs = model["runs"]
        assert runs["runs"] == 3 and runs["cases"] == 1
        assert runs["pass_rate"] in (0.0, 1 / 3, 2 / 3, 1.0)
        assert runs["pass_hat_k"] == (1.0 if runs["pass_rate"] == 1.0 else 0.0)
        assert runs["pass_at_k"] == (0.0 if runs["pass_rate"] == 0.0 else 1.0)
        consistency = model["benchmarks"]["consistency"]
        assert consistency["value"] is not None and 0.0 <= consistency["value"] <= 1.0
        assert consistency["scored_cases"] == 1
        # One case, however many runs: no interval over cases to draw.
        assert model["tasks"]["qa"]["interval"] is None
    flaky = [c for c in cases if c.get("flaky")]
    assert flaky, "the noisy judge made no case flaky"
    for record in cases:
        assert record["runs"] == 3
        assert record["flaky"] == (0 < record["pass_rate"] < 1)
        evidence = record["metrics"]["evidence_backed_reasoning"]
        assert evidence["sd"] >= 0 and "mean" in evidence
    flaky_model = flaky[0]["model"]
    assert data["models"][flaky_model]["runs"]["flaky"] == [f"qa/{flaky[0]['case_id']}"]
    assert "(flaky " in out and "REPEATED RUNS" in out and "pass^k" in out

    server.reset_counters()
    warm, _ = _run(server, repeated_dir, "warm", "--callqa-runs", "3")
    assert server.requests == 0
    assert [c["metrics"] for c in warm["cases"]] == [c["metrics"] for c in cases]

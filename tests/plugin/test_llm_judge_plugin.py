"""``--callqa-judge openai`` end to end, against the fake OpenAI-compatible server.

Real HTTP on 127.0.0.1 through the official client; short latencies, small counts, servers
that stop by themselves. Runs are in-process unless xdist or a killed process is the point.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from pytest_callqa.options import (
    BUDGET_OPTION,
    CACHE_DIR_OPTION,
    CACHE_OPTION,
    CONCURRENCY_OPTION,
    JUDGE_MODE_OPTION,
    PRICES_OPTION,
    REPORT_OPTION,
    RPM_OPTION,
    TIMEOUT_OPTION,
)
from pytest_callqa.testing import FakeOpenAIServer

from ..judge.helpers import tree_text
from .conftest import PYPROJECT, SECRET, LLMProject, MiniProject, assert_usage_error

SUITE = """
import pytest
from pytest_callqa import assert_no_blockers, assert_qa_score

def test_no_blockers(callqa_result):
    assert_no_blockers(callqa_result)

@pytest.mark.callqa(task="qa")
def test_qa(callqa_result):
    assert_qa_score(callqa_result, min_score=0.5)
"""
EVIDENCE = "evidence_backed_reasoning"
QA_EVIDENCE = f"""
import pytest
from pytest_callqa import assert_metric

@pytest.mark.callqa(task="qa")
def test_evidence(callqa_result):
    assert_metric(callqa_result, "{EVIDENCE}", min=0.4)
"""


def header(stdout: str, scorecard_of: Callable[[str], str]) -> list[str]:
    card = scorecard_of(stdout)
    return card[:card.index("\n\nMetric")].splitlines()


def table(stdout: str, scorecard_of: Callable[[str], str]) -> str:
    card = scorecard_of(stdout)
    return card[card.index("\n\nMetric"):]


def test_openai_judge_end_to_end_then_a_warm_rerun_sends_nothing(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    project, server = llm.project, llm.server
    project.write_usage("alpha", {cid: {"prompt_tokens": 1000, "completion_tokens": 500}
                                  for cid in project.cases})
    project.write_tests(SUITE)
    cold = pytester.runpytest(f"{REPORT_OPTION}=report.json", f"{PRICES_OPTION}=alpha: 1 2")
    cold.assert_outcomes(passed=4, failed=6)
    sent = server.requests
    assert sent == server.unique_requests > 0
    url = server.base_url
    lines = header(cold.stdout.str(), scorecard_of)
    assert lines[0] == (f"judge: openai gpt-4o-mini at {url} (combined mode, concurrency 16, "
                        "cache rw at .callqa_cache, price $0.15/$0.6 per 1M tokens (default))")
    assert lines[1].startswith("judge spend: $0.00") and f"for {sent} requests (" in lines[1]
    assert "per 1000 judge calls" in lines[1]
    assert lines[2] == f"judge calls: {sent}, 0 answered from the cache"
    assert lines[3].startswith("embeddings: ")
    # The model's own cost (recorded usage x configured price) is the scorecard's cost row.
    cost_row = next(line for line in cold.stdout.lines if line.startswith("Cost per 1000"))
    assert "$2.00" in cost_row
    cold.stdout.fnmatch_lines([
        "callqa: judging 8 outputs with gpt-4o-mini (combined mode, concurrency 16, *)...",
        f"callqa: judged 8 outputs in * s: {sent} requests sent, 0 answered from the cache",
    ])
    report = project.report()
    usage = report["run"]["judge_usage"]
    assert usage["requests"] == sent and usage["spent_usd"] > 0 and usage["priced"] is True
    assert usage["per_process"]["cache_hits"] == 0
    assert usage["flagged_verdicts"] == usage["not_scored_budget"] == 0
    assert report["run"]["judge"] == {
        "name": "openai", "model": "gpt-4o-mini", "description": lines[0].removeprefix("judge: ")}
    qa = next(c for c in report["cases"] if (c["model"], c["case_id"]) == ("alpha", "qa-refund"))
    assert qa["metrics"][EVIDENCE]["reason"] == f"fake verdict for {EVIDENCE}"
    assert qa["usage"]["judge_calls"] == pytest.approx(1.0)
    assert (pytester.path / ".callqa_cache" / ".gitignore").is_file()

    warm = pytester.runpytest(f"{REPORT_OPTION}=report.json", f"{PRICES_OPTION}=alpha: 1 2")
    warm.assert_outcomes(passed=4, failed=6)
    assert server.requests == sent
    warm_lines = header(warm.stdout.str(), scorecard_of)
    assert warm_lines[1].startswith("judge spend: $0.0000 for 0 requests (0+0 tokens)")
    assert warm_lines[2] == f"judge calls: {sent}, {sent} answered from the cache"
    assert table(warm.stdout.str(), scorecard_of) == table(cold.stdout.str(), scorecard_of)


def test_per_metric_mode_sends_one_call_per_metric(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    llm.project.write_tests(QA_EVIDENCE)
    pytester.runpytest(f"{JUDGE_MODE_OPTION}=combined", "--callqa-models=alpha",
                       "--no-callqa-benchmarks").assert_outcomes(passed=1)
    # The QA task has one judge-scored metric: one call either way.
    assert llm.server.requests == 1
    llm.project.write_tests("""
        import pytest

        @pytest.mark.callqa(task="text")
        def test_text(callqa_result):
            assert callqa_result.judge_record
    """)
    for mode, calls in (("combined", 1), ("per-metric", 3)):
        llm.server.reset_counters()
        pytester.runpytest(f"{JUDGE_MODE_OPTION}={mode}", "--callqa-models=alpha",
                           "--no-callqa-benchmarks", f"{CACHE_OPTION}=off",
                           ).assert_outcomes(passed=1)
        # Text: call intent, highlight correctness and fabrication are judge-scored.
        assert llm.server.requests == calls, mode


def test_retries_recover_from_20_percent_injected_429_and_500(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    server = llm.serve(fault_rate=0.2, faults=("429", "500"), seed=3)
    llm.project.write_tests(SUITE)
    result = pytester.runpytest(f"{JUDGE_MODE_OPTION}=per-metric", f"{REPORT_OPTION}=r.json")
    result.assert_outcomes(passed=4, failed=6)
    faults = sum(server.faults_injected.values())
    usage = llm.project.report("r.json")["run"]["judge_usage"]
    assert faults >= 4 and set(server.faults_injected) == {"429", "500"}
    assert usage["retries"] == faults
    assert usage["requests"] == server.requests == usage["per_process"]["calls"] + faults
    assert usage["flagged_verdicts"] == usage["per_process"]["failures"] == 0
    assert all(r.fault is None for r in server.log[-1:])
    assert "retr" in result.stdout.str()


def test_garbage_and_out_of_range_replies_are_judge_errors_not_model_failures(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    def fault(index: int, body: dict[str, Any]) -> str | None:
        # Every attempt at these two judgements, re-asks included, goes wrong.
        text = body["messages"][1]["content"]
        if f'"metric": "{EVIDENCE}"' in text:
            return "garbage"
        return "out_of_range" if '"metric": "target_fluency"' in text else None

    llm.serve(fault_for=fault)
    llm.project.write_tests(QA_EVIDENCE + """
@pytest.mark.callqa(task="translation")
def test_translation(callqa_result):
    assert callqa_result.metric("target_fluency").scored
""")
    args = [f"{JUDGE_MODE_OPTION}=per-metric", "--callqa-models=alpha", "--no-callqa-benchmarks"]
    result = pytester.runpytest(*args, f"{REPORT_OPTION}=r.json")
    # Neither a failure of the model nor a pass: both tests are errors of the tool.
    result.assert_outcomes(errors=2)
    assert result.ret == 1
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        f"*the judge could not score {EVIDENCE} for model 'alpha', case 'qa-refund' (a judge "
        "error, not a model failure)*",
        f"*{EVIDENCE}: judge error: judge reply unusable after 3 attempts: the reply is not "
        "valid JSON*",
        "*ERROR*test_translation*",
    ])
    card = scorecard_of(out)
    # The translation output is still invalid (the fake's mid-scale critical-fact verdict is
    # a blocker): a model failure, counted 0, so only the QA output is left out.
    assert "judge errors: 2 verdicts the judge could not give (shown as E); 1 output left " \
           "out of task scores" in card
    evidence_row = next(line for line in card.splitlines()
                        if line.startswith("Evidence-Backed Reasoning"))
    assert "—E" in evidence_row and "0.000" not in evidence_row
    assert f"E alpha: qa: judge errors (not scored, not counted against the model) in " \
           f"{EVIDENCE} ×1; 1 case(s) left out of the task score" in card
    qa_score_row = next(line for line in card.splitlines() if line.startswith("QA Score"))
    assert "(1/1 judge error)" in qa_score_row
    report = llm.project.report("r.json")
    qa = next(c for c in report["cases"] if c["case_id"] == "qa-refund")
    assert qa["metrics"][EVIDENCE]["judge_error"] is True
    assert qa["metrics"][EVIDENCE]["value"] is None and qa["score"] is None
    assert qa["judge_errors"] == [EVIDENCE]
    fluency = next(c for c in report["cases"] if c["case_id"] == "translation-fever")
    assert fluency["metrics"]["target_fluency"]["judge_error"] is True
    assert "7.5" in fluency["metrics"]["target_fluency"]["reason"]
    assert report["judge_errors"] == {"verdicts": 2, "outputs_without_task_score": 1}
    assert report["run"]["judge_usage"]["flagged_verdicts"] == 0
    assert report["models"]["alpha"]["tasks"]["qa"]["judge_error_cases"] == 1
    # An unusable reply is never cached: a re-run asks again.
    before = llm.server.requests
    pytester.runpytest(*args).assert_outcomes(errors=2)
    assert llm.server.requests - before == 6  # two judgements x three attempts


def test_a_budget_stops_calls_and_the_run_says_so(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    llm.project.write_tests(QA_EVIDENCE + """
def test_any(callqa_result):
    assert callqa_result.case_id
""")
    # Free input, $1000 per million output tokens: every call reserves its max_tokens at
    # $0.001 each — 462 for the first (qa's evidence verdict, worked out in
    # tests/judge/test_formats.py), 457 to 491 for the others — so $0.47 covers the first
    # worst case and not the next (485), whatever the first reply cost.
    result = pytester.runpytest(
        f"{JUDGE_MODE_OPTION}=per-metric", f"{CONCURRENCY_OPTION}=1", f"{BUDGET_OPTION}=0.47",
        f"{PRICES_OPTION}=gpt-4o-mini: 0 1000", "--callqa-models=alpha",
        f"{REPORT_OPTION}=r.json")
    assert llm.server.requests == 1
    assert llm.server.log[0].body["max_tokens"] == 462
    out = result.stdout.str()
    report = llm.project.report("r.json")
    usage = report["run"]["judge_usage"]
    assert usage["budget_exhausted"] is True and usage["requests"] == 1
    assert 0 < usage["spent_usd"] <= 0.47
    not_scored = usage["not_scored_budget"]
    assert not_scored >= 10
    card = scorecard_of(out)
    assert f"budget: $0.47 reached (${usage['spent_usd']:.4f} spent); no further requests " \
           f"were sent, {not_scored} judgements not scored (shown as E)" in card
    assert "budget $0.47" in card.splitlines()[0]
    result.stdout.fnmatch_lines(["callqa: judged 4 outputs in * s: 1 request sent, 0 answered "
                                 "from the cache; the budget is spent, no further requests "
                                 "were sent"])
    stopped = [(c["case_id"], mid) for c in report["cases"] for mid, m in c["metrics"].items()
               if "not scored: judge budget of $0.47 exhausted" in (m["reason"] or "")]
    # A judgement can feed more than one metric (a benchmark criterion and its rate).
    assert len(stopped) >= not_scored
    for case_id, mid in stopped:
        case = next(c for c in report["cases"] if c["case_id"] == case_id)
        assert case["metrics"][mid]["value"] is None and case["metrics"][mid]["scored"] is False
    # The budget's ledger lives only as long as the run.
    assert not list((pytester.path / ".callqa_cache" / "spend").iterdir())
    result.stdout.fnmatch_lines([f"callqa: INCOMPLETE — the budget of $0.47 was spent before "
                                 f"the run was evaluated in full ({not_scored} judgements not "
                                 "asked): not a pass, nor the model's failure; *"])
    # A judge metric the budget left unscored never passes an assertion on it.
    if ("qa-refund", EVIDENCE) in stopped:
        result.assert_outcomes(passed=4, failed=1)
        result.stdout.fnmatch_lines([f"*{EVIDENCE}*not scored*"])
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    else:
        # Every test passed, with judgements the budget kept from being asked: not a pass.
        result.assert_outcomes(passed=5)
        assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_budget_of_0_judges_with_a_free_judge(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    # A $0 budget is refused for a paid judge, but for one priced $0 (a local model) it is
    # a run that may spend nothing: every judgement fits it.
    llm.project.write_tests(QA_EVIDENCE)
    result = pytester.runpytest(f"{BUDGET_OPTION}=0", f"{PRICES_OPTION}=gpt-4o-mini: 0 0",
                                "--callqa-models=alpha", f"{REPORT_OPTION}=r.json")
    assert result.ret == pytest.ExitCode.OK
    usage = llm.project.report("r.json")["run"]["judge_usage"]
    assert usage["requests"] == llm.server.requests > 0
    assert usage["budget_exhausted"] is False and usage["not_scored_budget"] == 0


class _NoUsageServer(FakeOpenAIServer):
    """Replies without ``usage``, as some servers and gateways send them."""

    def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        completion = super()._completion(body, fault)
        del completion["usage"]
        return completion


def test_replies_without_usage_leave_tokens_unknown_and_the_budget_shows_its_spend(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    # Before: "judge spend: unknown (no price for gpt-4o-mini) for 1 request (0+0 tokens)"
    # under the model's price, "budget: $0.47 reached ($0.0000 spent)" though the budget had
    # settled the call at its worst case, and judge_usage with 0 calls and 0 tokens.
    llm.project.write_tests(QA_EVIDENCE)
    with _NoUsageServer(max_lifetime_s=60.0) as server:
        llm.server = server
        llm.ini()
        # As in the budget test above: the first call's worst case is 462 completion
        # tokens at $0.001, which leaves no room for the next.
        result = pytester.runpytest(
            f"{JUDGE_MODE_OPTION}=per-metric", f"{CONCURRENCY_OPTION}=1",
            f"{BUDGET_OPTION}=0.47", f"{PRICES_OPTION}=gpt-4o-mini: 0 1000",
            "--callqa-models=alpha", f"{REPORT_OPTION}=r.json")
    assert server.requests == 1
    lines = header(result.stdout.str(), scorecard_of)
    assert "judge spend: unknown (no token usage came back for 1 request: a reply without " \
           "it, a timeout or a lost connection) for 1 request (tokens unknown for 1 of 1 " \
           "request)" in lines
    assert any(line.startswith("budget: $0.47 reached ($0.4620 spent); ") for line in lines)
    usage = llm.project.report("r.json")["run"]["judge_usage"]
    assert {key: usage[key] for key in (
        "calls", "requests", "requests_without_usage", "prompt_tokens", "completion_tokens",
        "spent_usd")} == {"calls": 1, "requests": 1, "requests_without_usage": 1,
                          "prompt_tokens": None, "completion_tokens": None, "spent_usd": None}


def test_the_budget_holds_for_xdist_workers_together(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    llm.serve(latency=0.05)
    llm.project.write_tests(SUITE)
    # Each call reserves its max_tokens at $0.001 each (free input, $1000 per million output
    # tokens): 457 to 491, so one at a time fits in $0.90 and two never do (2 × 0.457 >
    # 0.9), for both workers together; a few go out one after the other before the spend
    # leaves no room for the next worst case.
    pytester.runpytest("-n", "2", f"{JUDGE_MODE_OPTION}=per-metric", f"{CONCURRENCY_OPTION}=4",
                       f"{BUDGET_OPTION}=0.9", f"{PRICES_OPTION}=gpt-4o-mini: 0 1000",
                       f"{CACHE_OPTION}=off", f"{REPORT_OPTION}=n2.json")
    usage = llm.project.report("n2.json")["run"]["judge_usage"]
    assert usage["per_process"]["processes"] == 2
    assert usage["budget_exhausted"] is True and usage["not_scored_budget"] > 0
    assert usage["requests"] == llm.server.requests >= 2
    assert 0 < usage["spent_usd"] <= 0.9
    assert llm.server.peak_in_flight == 1


def test_a_judgement_that_failed_in_one_xdist_worker_is_not_sent_again_by_the_other(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    """Two tests of one pair, one per worker. The first worker's judge call stayed unusable
    (three asks); no cache keeps a failure, so the other worker sent it again, got a verdict
    and passed — one pair, one test a judge error and one a pass, and a report that showed
    whichever test's id sorted first."""
    asks: list[int] = []

    def fault(index: int, body: dict[str, Any]) -> str | None:
        if f'"metric": "{EVIDENCE}"' in body["messages"][1]["content"]:
            asks.append(index)
            return "garbage" if len(asks) <= 3 else None
        return None

    llm.serve(fault_for=fault)
    llm.project.write_tests(QA_EVIDENCE + QA_EVIDENCE.replace("def test_evidence(",
                                                              "def test_evidence_again("))
    result = pytester.runpytest("-n", "2", f"{JUDGE_MODE_OPTION}=per-metric",
                                "--callqa-models=alpha", "--no-callqa-benchmarks",
                                f"{REPORT_OPTION}=r.json")
    # As one process: the judgement failed once, for both tests.
    result.assert_outcomes(errors=2)
    assert len(asks) == 3
    [case] = llm.project.report("r.json")["cases"]
    assert case["judge_errors"] == [EVIDENCE]
    assert case["metrics"][EVIDENCE]["judge_error"] is True


def test_a_rejected_key_is_not_sent_again_by_either_xdist_worker(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    # A 401 stopped only the batch it came in: each test xdist handed a worker from the
    # other's share opened a batch that sent the rejected key again (60 requests for 100
    # cases where one process sent 5) — on a real provider, a key lockout.
    llm.serve(fault_rate=1.0, faults=("401",))
    llm.project.write_tests(SUITE)
    result = pytester.runpytest("-n", "2", f"{JUDGE_MODE_OPTION}=per-metric",
                                f"{CONCURRENCY_OPTION}=1", f"{CACHE_OPTION}=off")
    result.assert_outcomes(errors=10)
    result.stdout.fnmatch_lines(["*callqa: the judge cannot be used: *HTTP 401*"])
    # Each worker's first call, at most, and the one a waiting call sends as the first
    # refusal comes in.
    assert llm.server.requests <= 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([f"{CONCURRENCY_OPTION}=0"], "*--callqa-concurrency '0': expected a whole number >= 1*"),
        ([f"{CONCURRENCY_OPTION}=lots"], "*--callqa-concurrency 'lots': expected a whole number*"),
        ([f"{RPM_OPTION}=1.5"], "*--callqa-rpm '1.5': expected a whole number >= 1*"),
        ([f"{TIMEOUT_OPTION}=0"], "*--callqa-timeout '0': expected a number > 0*"),
        ([f"{BUDGET_OPTION}=-1"], "*--callqa-budget '-1': expected a number >= 0*"),
        ([f"{BUDGET_OPTION}=nan"], "*--callqa-budget 'nan': expected a number >= 0*"),
        ([f"{BUDGET_OPTION}=1", "--callqa-judge-model=my-judge"],
         "*--callqa-budget needs a price for every model it pays for; no price for "
         "'my-judge': add --callqa-prices 'my-judge: <input> <output>'*"),
        ([f"{BUDGET_OPTION}=1", "--callqa-models=fast=my-model@http://127.0.0.1:9/v1"],
         "*no price for 'my-model'*"),
        (["--callqa-models=fast=@http://127.0.0.1:9/v1"], "*callqa_models: model spec*names "
                                                          "no model*"),
        # 'name=model@$URL' with the variable unset went to OPENAI_BASE_URL as 'my-model@'.
        (["--callqa-models=fast=my-model@"], "*callqa_models: model spec 'fast=my-model@' "
                                             "ends in an '@' with no base URL after it*"),
        # A $0 budget stops every paid request unsent: every pair skipped, exit 0.
        ([f"{BUDGET_OPTION}=0"], "*--callqa-budget is 0: no request to 'gpt-4o-mini' (priced "
                                 "above $0) could be sent*"),
        ([f"{BUDGET_OPTION}=1e-400", "--callqa-judge-model=free",
          "--callqa-prices=free: 0 0",
          "--callqa-models=fast=my-model@http://127.0.0.1:9/v1",
          "--callqa-prices=my-model: 0 0.1"], "*no request to 'my-model' (priced above $0)*"),
    ],
    ids=["concurrency-0", "concurrency-text", "rpm-fraction", "timeout-0", "budget-negative",
         "budget-nan", "budget-unpriced-judge", "budget-unpriced-live-model", "live-no-model",
         "live-trailing-at", "budget-0-paid-judge", "budget-underflow-paid-live-model"],
)
def test_bad_call_settings_are_usage_errors(
    llm: LLMProject, pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    assert_usage_error(pytester, args, message)


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ('callqa_judge_mode = "both"\n', "*callqa_judge_mode = 'both'*expected one of combined, "
                                         "per-metric*"),
        ('callqa_cache = "yes"\n', "*callqa_cache = 'yes'*expected one of off, ro, rw*"),
        ('callqa_concurrency = "-3"\n', "*callqa_concurrency = '-3' in *pyproject.toml: "
                                        "expected a whole number >= 1*"),
        # pytest converts typed ini keys itself; its error named neither the key nor the file.
        ('callqa_benchmarks = "maybe"\n', "*callqa_benchmarks in *pyproject.toml: invalid "
                                          "truth value 'maybe'*"),
        ('callqa_disqualify_tolerance = "abc"\n', "*callqa_disqualify_tolerance in "
                                                  "*pyproject.toml: invalid literal for int()*"),
    ],
    ids=["mode", "cache", "concurrency", "bool", "int"],
)
def test_bad_ini_call_settings_are_usage_errors(
    project: MiniProject, pytester: pytest.Pytester, ini: str, message: str
) -> None:
    (project.root / "pyproject.toml").write_text(PYPROJECT + ini, encoding="utf-8")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_cache_settings_are_read_and_shown(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    llm.ini('callqa_cache_dir = "build/replies"\ncallqa_rpm = "600"\n'
            'callqa_concurrency = "4"\ncallqa_budget = "100"\n')
    llm.project.write_tests(QA_EVIDENCE)
    first = pytester.runpytest("--callqa-models=alpha")
    first.assert_outcomes(passed=1)
    assert header(first.stdout.str(), scorecard_of)[0].endswith(
        "(combined mode, concurrency 4, 600 requests/min, cache rw at build/replies, "
        "budget $100, price $0.15/$0.6 per 1M tokens (default))")
    assert list((pytester.path / "build" / "replies").glob("??/*.json"))
    assert not (pytester.path / ".callqa_cache").exists()
    # Read-only: hits are used, nothing is written; off: every call is sent again.
    sent = llm.server.requests
    pytester.runpytest("--callqa-models=alpha", f"{CACHE_OPTION}=ro").assert_outcomes(passed=1)
    assert llm.server.requests == sent
    elsewhere = pytester.path / "other"
    pytester.runpytest("--callqa-models=alpha", f"{CACHE_DIR_OPTION}={elsewhere}",
                       f"{CACHE_OPTION}=ro").assert_outcomes(passed=1)
    assert llm.server.requests == 2 * sent
    assert not list(elsewhere.glob("??/*.json"))
    off = pytester.runpytest("--callqa-models=alpha", f"{CACHE_OPTION}=off")
    off.assert_outcomes(passed=1)
    assert llm.server.requests == 3 * sent
    assert "cache off" in header(off.stdout.str(), scorecard_of)[0]


def test_an_edited_cache_entry_is_asked_again_and_counted(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    llm.project.write_tests(QA_EVIDENCE)
    args = ["--callqa-models=alpha", "--no-callqa-benchmarks", f"{REPORT_OPTION}=r.json"]
    cold = pytester.runpytest(*args)
    cold.assert_outcomes(passed=1)
    assert header(cold.stdout.str(), scorecard_of)[2] == "judge calls: 1, 0 answered from the cache"
    assert "damaged_cache_entries" not in llm.project.report("r.json")["run"]["judge_usage"][
        "per_process"]
    # A cache that works is not mentioned beyond the judge's line.
    assert "cache_problems" not in llm.project.report("r.json")["run"]["judge_usage"]
    assert not [line for line in header(cold.stdout.str(), scorecard_of)
                if line.startswith("cache")]
    [entry] = llm.cache_entries()
    # A verdict raised by hand: still valid JSON with a valid score; only the digest tells.
    entry.write_text(entry.read_text(encoding="utf-8").replace("0.5", "1.0"), encoding="utf-8")
    edited = pytester.runpytest(*args)
    edited.assert_outcomes(passed=1)
    assert llm.server.requests == 2
    assert header(edited.stdout.str(), scorecard_of)[2] == (
        "judge calls: 1, 0 answered from the cache, 1 damaged cache entry asked again")
    usage = llm.project.report("r.json")["run"]["judge_usage"]
    assert usage["per_process"]["damaged_cache_entries"] == 1 and usage["requests"] == 1
    # The good reply replaced the entry.
    warm = pytester.runpytest(*args)
    assert header(warm.stdout.str(), scorecard_of)[2] == "judge calls: 1, 1 answered from the cache"
    assert llm.server.requests == 2


def test_a_cache_that_does_not_work_is_named_in_the_header_and_the_report(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    # A cache directory that cannot be made (it would lie inside a file): every run asks
    # for every reply again, and must say why rather than show "cache rw" as if all were
    # well. (A cache directory that is itself a file is refused before the run.)
    (pytester.path / "replies").write_text("a file", encoding="utf-8")
    llm.project.write_tests(QA_EVIDENCE)
    args = ["--callqa-models=alpha", "--no-callqa-benchmarks", f"{REPORT_OPTION}=r.json",
            f"{CACHE_DIR_OPTION}=replies/cache"]
    for run in (1, 2):
        result = pytester.runpytest(*args)
        result.assert_outcomes(passed=1)
        assert llm.server.requests == run
    root = pytester.path / "replies" / "cache"
    lines = header(result.stdout.str(), scorecard_of)
    # Each call looks twice (answered before the batch, then under its key's lock).
    [failed] = [line for line in lines if line.startswith("cache: ")]
    shown = re.fullmatch(r"cache: 2 reads and 1 write failed \(first: (.+)\)", failed)
    assert shown is not None
    error = shown.group(1)
    assert re.fullmatch(rf"\[Errno 20\] Not a directory: '{re.escape(str(root))}/"
                        rf"[0-9a-f]{{2}}/[0-9a-f]{{64}}\.json'", error)
    assert f"cache locks not usable ([Errno 20] Not a directory: '{root}'): processes " \
        "sharing the cache do not coordinate their requests" in lines
    problems = llm.project.report("r.json")["run"]["judge_usage"]["cache_problems"]
    assert problems == {"failed_reads": 2, "failed_writes": 1, "error": error,
                        "lock_error": f"[Errno 20] Not a directory: '{root}'"}


def test_the_key_never_reaches_a_file_or_the_terminal(
    llm: LLMProject, pytester: pytest.Pytester
) -> None:
    llm.project.write_tests(SUITE + """
def test_snapshot(callqa_result, callqa_snapshot):
    assert callqa_result.judge_record == callqa_snapshot
""")
    outputs = []
    # Tracebacks with locals, debug logging of the HTTP client (to a file: the calls run
    # before the first test), a report, snapshots.
    noisy = ["-l", "--log-level=DEBUG", "--log-file=debug.log", "--log-file-level=DEBUG",
             "-rA", f"{REPORT_OPTION}=report.json", "--snapshot-update"]
    ok = pytester.runpytest(*noisy)
    ok.assert_outcomes(passed=12, failed=6)
    outputs.append(ok)
    assert all(info.authorization == f"Bearer {SECRET}" for info in llm.server.log)
    # A server that echoes the key it was given (as careless proxies do) in a 401.
    llm.serve(fault_rate=1.0, faults=("401",))
    rejected = pytester.runpytest(*noisy, f"{CACHE_OPTION}=off")
    outputs.append(rejected)
    rejected.assert_outcomes(errors=18)
    rejected.stdout.fnmatch_lines([
        "callqa: the judge cannot be used: gpt-4o-mini at http://127.0.0.1:*: HTTP 401: "
        "*Incorrect API key provided: <redacted>*", "_*_ ERROR at setup of *_"])
    rejected.stdout.fnmatch_lines(["callqa: judge calls stopped: *HTTP 401*<redacted>*"])
    # A rejected key is never retried: the calls already in flight are all that was sent.
    assert llm.server.requests == llm.server.unique_requests <= 6
    for result in outputs:
        assert SECRET not in result.stdout.str() + result.stderr.str()
    written = tree_text(pytester.path)
    # The snapshots, the report and the client's debug log were written.
    assert "fake verdict for" in written and "HTTP Request: POST" in written
    assert SECRET not in written


class _EchoingServer(FakeOpenAIServer):
    """Echoes the request's ``Authorization`` header in a reply header, as some debugging
    proxies do."""

    def _respond(self, path: str, body: dict[str, Any], fault: str | None,
                 auth: str | None) -> Any:
        answer = super()._respond(path, body, fault, auth)
        return replace(answer, headers={**(answer.headers or {}),
                                        "X-Echo-Authorization": auth or ""})


# Each xdist worker logs to a file of its own, as xdist's documentation suggests.
WORKER_LOG_FILES = """
def pytest_configure(config):
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker is not None:
        config.option.log_file = f"debug-{worker}.log"
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2", "-p", "no:syrupy"]],
                         ids=["one-process", "xdist"])
def test_a_key_a_server_echoes_in_a_header_is_kept_out_of_the_logs(
    llm: LLMProject, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # Before: httpx2's debug trace of the reply's headers showed "Bearer <key>" (or the URL's
    # Basic token) in --log-file and the live log; only the tests' reports were redacted.
    # A test that logs the key itself: under xdist the judge's calls may be sent while no
    # phase of pytest's logs a worker's DEBUG records (the trace then is nowhere, leaked or
    # not), and this record is what shows the workers' handlers filter.
    llm.project.write_tests(QA_EVIDENCE + """
import logging
import os

def test_logs_the_key(callqa_result):
    logging.getLogger("project").debug("logged Bearer %s", os.environ["OPENAI_API_KEY"])
""")
    pytester.makeconftest(WORKER_LOG_FILES)
    logs = ["--log-file=debug.log", "--log-file-level=DEBUG", "-o", "log_cli=true",
            "--log-cli-level=DEBUG"]
    with _EchoingServer(max_lifetime_s=60.0) as server:
        user_url = server.base_url.replace("http://", "http://bob:pw-SECRET-7777@")
        for url in (server.base_url, user_url):
            shutil.rmtree(llm.root / ".callqa_cache", ignore_errors=True)
            run = pytester.runpytest_subprocess if xdist else pytester.runpytest
            result = run(*xdist, *logs, f"--callqa-judge-base-url={url}", "-p", "no:randomly")
            assert result.ret == pytest.ExitCode.OK
            files = [llm.root / "debug.log"] if not xdist else [
                llm.root / f"debug-gw{n}.log" for n in (0, 1)]
            written = "".join(path.read_text(encoding="utf-8") for path in files)
            shown = result.stdout.str() + result.stderr.str() + written
            assert "logged Bearer <redacted>" in written
            if not xdist:
                assert "X-Echo-Authorization', b'" + (
                    "Basic" if url == user_url else "Bearer") + " <redacted>'" in written
            token = base64.b64encode(b"bob:pw-SECRET-7777").decode()
            assert SECRET not in shown and "pw-SECRET-7777" not in shown and token not in shown


def test_the_log_filter_redacts_a_records_message_exception_and_stack() -> None:
    from pytest_callqa.engine.core.urls import remember_secrets
    from pytest_callqa.outcomes import LogRedaction

    remember_secrets(SECRET, "http://127.0.0.1:9/v1")
    try:
        raise ValueError(f"refused {SECRET}")
    except ValueError:
        exc_info = sys.exc_info()
    record = logging.LogRecord("httpcore2.http11", logging.DEBUG, __file__, 1,
                               "headers=%r", ([("X-Echo", f"Bearer {SECRET}")],), exc_info,
                               sinfo=f"Stack: {SECRET}")
    assert LogRedaction().filter(record)
    text = logging.Formatter().format(record)
    assert "headers=[('X-Echo', 'Bearer <redacted>')]" in text
    assert "ValueError: refused <redacted>" in text and "Stack: <redacted>" in text
    assert SECRET not in text
    plain = logging.LogRecord("x", logging.INFO, __file__, 1, "%d calls", (3,), None)
    assert LogRedaction().filter(plain) and (plain.msg, plain.args) == ("%d calls", (3,))


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_key_in_a_tests_locals_or_output_is_redacted_from_its_report(
    llm: LLMProject, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # A frame's local variables (-l, --tb=long) or a test's captured output showed the key
    # whole, in the terminal and the JUnit file: any frame that held it, the HTTP client's
    # included, until the one known to hold it was left out of the traceback.
    llm.project.write_tests(SUITE + '''
import os

def test_leaky(callqa_result):
    key = os.environ["OPENAI_API_KEY"]
    print("the key is", key)
    assert key == "another"
''')
    result = pytester.runpytest(*xdist, "-l", "--tb=long", "-rA", "--junitxml=junit.xml",
                                "-k", "leaky")
    assert result.parseoutcomes()["failed"] >= 1
    output = result.stdout.str() + result.stderr.str()
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert "the key is <redacted>" in output and "key        = '<redacted>'" in output
    assert "&lt;redacted&gt;" in junit
    assert SECRET not in output + junit


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_key_a_projects_code_quotes_is_redacted_from_the_reports(
    llm: LLMProject, pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # Before: a custom metric's exception quoting the key put it whole into the JSON and
    # HTML reports (its reason), and a scorecard hook's into the terminal's red line; the
    # test's own report was already redacted.
    pytester.makeconftest("""
        import os
        import pytest
        from pytest_callqa import Bands, MetricSpec

        @pytest.hookimpl(optionalhook=True)
        def pytest_callqa_register_metrics(registry, config):
            spec = MetricSpec(id="crm_synced", task="qa", name="CRM Synced", description="d",
                              scale="0/1", threshold="= 1", bands=Bands(good=1.0))
            def compute(case, output, result):
                raise PermissionError("CRM refused Bearer " + os.environ["OPENAI_API_KEY"])
            registry.register_metric(spec, compute)

        @pytest.hookimpl(optionalhook=True)
        def pytest_callqa_scorecard(scorecard, config):
            scorecard.notes.append("uploaded with token " + os.environ["OPENAI_API_KEY"])
            raise RuntimeError("upload refused token " + os.environ["OPENAI_API_KEY"])
    """)
    llm.project.write_tests(QA_EVIDENCE)
    result = pytester.runpytest(*xdist, "--callqa-models=alpha", "--callqa-report=r.json",
                                "--callqa-html=r.html", "--callqa-markdown=r.md")
    output = result.stdout.str() + result.stderr.str()
    assert "upload refused token <redacted>" in output
    # A note the hook added, before it raised, is kept, and cleared of the key too.
    assert "uploaded with token <redacted>" in output
    assert "uploaded with token <redacted>" in json.loads(written_json := (
        pytester.path / "r.json").read_text(encoding="utf-8"))["notes"]
    assert SECRET not in written_json
    written = {name: (pytester.path / name).read_text(encoding="utf-8")
               for name in ("r.json", "r.html", "r.md")}
    reasons = [m.get("reason") for c in json.loads(written["r.json"])["cases"]
               for mid, m in c["metrics"].items() if mid == "crm_synced"]
    assert reasons and set(reasons) == {
        "custom metric raised PermissionError: CRM refused Bearer <redacted>"}
    assert "CRM refused Bearer \\u003credacted\\u003e" in written["r.html"]
    assert SECRET not in output + "".join(written.values())


def test_a_killed_run_leaves_a_usable_cache(llm: LLMProject, pytester: pytest.Pytester) -> None:
    server = llm.serve(latency=0.1)
    llm.project.write_tests(SUITE)
    args = [f"{JUDGE_MODE_OPTION}=per-metric", f"{CONCURRENCY_OPTION}=2"]
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:xdist", *args],
                            cwd=pytester.path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while server.requests < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    cached = len(llm.cache_entries())
    assert cached >= 4
    server.reset_counters()
    result = pytester.runpytest(*args, f"{CONCURRENCY_OPTION}=16", f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(passed=4, failed=6)
    usage = llm.project.report()["run"]["judge_usage"]
    total = usage["per_process"]["calls"]
    assert cached < total
    # What the killed run had cached is read, not asked again; every entry is whole.
    assert server.requests == usage["requests"] == total - cached
    assert usage["per_process"]["cache_hits"] == cached
    assert len(llm.cache_entries()) == total
    for entry in llm.cache_entries():
        json.loads(entry.read_text(encoding="utf-8"))

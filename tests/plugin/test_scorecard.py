"""The terminal scorecard and the JSON report: complete, and the same with or without xdist."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ..judge.helpers import tree_text
from .conftest import SECRET, LLMProject, MiniProject
from .test_hooks import CUSTOM_METRIC_CONFTEST

SUITE = """
import pytest
from pytest_callqa import assert_no_blockers, assert_qa_score

def test_no_blockers(callqa_result):
    assert_no_blockers(callqa_result)

@pytest.mark.callqa(task="qa")
def test_qa(callqa_result):
    assert_qa_score(callqa_result, min_score=0.9)

def test_unit():
    assert True
"""


def without_timings(report: dict[str, Any]) -> dict[str, Any]:
    """The report minus what legitimately differs between runs: timings, and the counts of
    calls each process made (which replies an xdist worker read from the other's share
    depends on which tests it was given)."""
    run = dict(report["run"])
    del run["started_at"], run["duration_s"]
    for usage in ("judge_usage", "generation_usage"):
        if run.get(usage) is not None:
            run[usage] = {k: v for k, v in run[usage].items() if k != "per_process"}
    return {**report, "run": run}


def without_call_counts(card: str) -> str:
    """The scorecard minus its per-process call counts (``judge calls: ...``)."""
    return "\n".join(line for line in card.splitlines()
                     if not line.startswith(("judge calls: ", "generation calls: ")))


def test_every_scored_result_reaches_the_scorecard_passed_or_failed(
    project: MiniProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest("--callqa-report=report.json")
    # beta fails both tests on qa-refund; its results still count.
    result.assert_outcomes(passed=9, failed=2)
    card = scorecard_of(result.stdout.str())
    # Two tests scored the same (model, case) pairs: each pair counts once.
    assert "results: 8 outputs scored (2 models, 4 cases)" in card
    assert "[!] Compliance False Pass Rate" in card
    assert "[!] beta: disqualified for qa (1 of 1 cases blocked)" in card
    lines = card.splitlines()
    # The separator line names the scorecard; the body starts with its header.
    assert lines[0].startswith("judge: heuristic (offline")
    assert lines[1].startswith("embeddings: tfidf")
    assert any(line.startswith("not scored or undecided for any model: ")
               and "Target Language Fluency Score" in line for line in lines)
    for row in ("QA Score", "Entity Score", "Text Score", "Translation Score",
                "Final Score (with benchmarks)", "Final Score (without benchmarks)",
                "Cost per 1000 calls", "Cost-Adjusted Rank", "Any Blocker Triggered?"):
        assert any(line.startswith(row) for line in lines), row
    blocker_row = next(line for line in lines if line.startswith("Any Blocker Triggered?"))
    assert [cell.strip() for cell in blocker_row.split("|")[1:3]] == ["No", "Yes !!"]


def test_ratings_are_coloured_on_a_terminal_and_marked_in_text(
    project: MiniProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    project.write_tests("@__import__('pytest').mark.callqa(task='qa')\n"
                        "def test_r(callqa_result):\n    pass\n")
    plain = scorecard_of(pytester.runpytest("--color=no").stdout.str())
    assert "\x1b[" not in plain
    assert "50.0% !!" in plain and "0.667 x" in plain
    coloured = pytester.runpytest("--color=yes").stdout.str()
    assert "\x1b[1;31m" in coloured and "50.0% !!" in coloured


def test_json_report_schema(project: MiniProject, pytester: pytest.Pytester) -> None:
    project.remove_output("beta", "text-appointment")
    project.write_tests(SUITE)
    pytester.runpytest("--callqa-report=out/report.json")
    report = project.report("out/report.json")
    assert report["schema"] == "callqa-report/1"
    assert {"judge", "embeddings", "versions", "started_at", "duration_s"} <= set(report["run"])
    assert report["run"]["judge"]["name"] == "heuristic"
    assert report["run"]["versions"]["pytest_callqa"] == "0.1.0"
    assert isinstance(report["run"]["duration_s"], float)
    beta = report["models"]["beta"]
    assert {"tasks", "final_score_a", "final_score_b", "cost_per_1000_calls",
            "cost_adjusted_rank", "any_blocker"} <= set(beta)
    qa = beta["tasks"]["qa"]
    assert {"score", "cases", "invalid_cases", "blocked_cases", "disqualified",
            "metrics"} <= set(qa)
    # One case: no 95 % interval (a resample of one case is that case).
    assert qa["metrics"]["compliance_false_pass_rate"] == {
        "value": 0.5, "rating": "blocker", "blocker": True, "interval": None,
        "flagged": 0, "judge_errors": 0}
    assert beta["any_blocker"] is True and beta["cost_per_1000_calls"] is None
    assert beta["disqualified"] is True
    assert report["models"]["alpha"]["cost_adjusted_rank"] == 1
    # Its one text case has no output: the task is kept, its score unknown.
    text = beta["tasks"]["text"]
    assert (text["score"], text["cases"], text["no_output_cases"],
            text["blocker_unknown_cases"]) == (None, 0, 1, 1)
    case = next(c for c in report["cases"] if (c["model"], c["case_id"]) == ("beta", "qa-refund"))
    assert {"model", "case_id", "task", "score", "valid", "blocked", "blockers",
            "metrics"} <= set(case)
    assert case["blockers"] == ["compliance_false_pass_rate"]
    assert set(case["metrics"]["question_score_accuracy"]) == {
        "value", "scored", "rating", "flagged", "judge_error", "reason", "blocker", "details"}
    # A case entry is the whole result, and reads back as one.
    from pytest_callqa.engine.core.results import TaskResult

    assert TaskResult.from_dict(case).to_dict() == {k: v for k, v in case.items()
                                                    if k != "output"}
    assert case["output"]["questions"][0]["question_id"] == "Q1"
    assert report["model_order"] == ["alpha", "beta"]
    assert report["golden_cases"]["qa-refund"]["transcript_excerpt"][0].startswith("turn 1: ")
    assert {spec["id"] for spec in report["metric_specs"]["qa"]} >= {
        "question_score_accuracy", "compliance_false_pass_rate"}
    assert case["judge_errors"] == []
    assert report["judge_errors"] == {"verdicts": 0, "outputs_without_task_score": 0}
    assert report["models"]["beta"]["tasks"]["qa"]["judge_error_cases"] == 0
    # Its task: the scorecard counts the pair among the task's cases of unknown result.
    assert report["not_evaluated"] == [{
        "kind": "missing_output", "model": "beta", "case_id": "text-appointment",
        "task": "text",
        "reason": "no output of model 'beta' for case 'text-appointment' (expected "
                  "outputs/beta/text-appointment.json, and no pytest_callqa_generate "
                  "implementation returned one)", "budget_stopped": False}]
    assert beta["no_output_tasks"] == ["text", "benchmarks"] and beta["final_score_b"] is None
    assert len(report["cases"]) == 7
    # Plain JSON: no NaN or Infinity anywhere.
    json.loads((project.root / "out/report.json").read_text(), parse_constant=pytest.fail)


def test_no_report_and_no_scorecard_when_nothing_was_evaluated(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest("-m", "not eval", "--callqa-report=report.json")
    result.assert_outcomes(passed=1)
    assert "callqa scorecard" not in result.stdout.str()
    assert not (project.root / "report.json").exists()


def test_scorecard_and_report_are_identical_without_xdist_with_n0_and_n2(
    project: MiniProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    pytester.makeconftest(CUSTOM_METRIC_CONFTEST + """

def pytest_callqa_scorecard(scorecard, config):
    scorecard.notes.append("post-processed once")
""")
    project.remove_output("beta", "text-appointment")
    project.write_usage("alpha", {cid: {"prompt_tokens": 900, "completion_tokens": 300}
                                  for cid in project.cases})
    project.write_tests(SUITE)
    cards, reports = {}, {}
    for mode, args in {"none": ["-p", "no:xdist"], "n0": ["-n", "0"],
                       "n2": ["-n", "2"]}.items():
        result = pytester.runpytest_subprocess(
            *args, f"--callqa-report={mode}.json", "--callqa-prices=alpha: 1 2", "-rs")
        result.assert_outcomes(passed=8, failed=2, skipped=1)
        cards[mode] = scorecard_of(result.stdout.str())
        reports[mode] = without_timings(project.report(f"{mode}.json"))
    assert "Mentions Refund" in cards["none"] and "post-processed once" in cards["none"]
    assert "no output, not evaluated: beta: text-appointment" in cards["none"]
    assert cards["n0"] == cards["none"]
    assert cards["n2"] == cards["none"]
    assert reports["n0"] == reports["none"]
    assert reports["n2"] == reports["none"]
    # The xdist controller lists the catalogue its workers read, as one process does.
    assert {case_id for _task, case_id in reports["n2"]["run"]["catalogue_cases"]} == \
        set(project.cases)
    # In the same order too: the controller places the golden cases its workers sent by
    # their catalogue places, without reading the case files.
    assert list(reports["n2"]["golden_cases"]) == list(reports["none"]["golden_cases"])
    assert len(reports["none"]["cases"]) == 7


def test_openai_judge_under_xdist_sends_each_request_once_and_reports_the_same(
    llm: LLMProject, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]
) -> None:
    project, server = llm.project, llm.server
    pytester.makeconftest(CUSTOM_METRIC_CONFTEST)
    project.remove_output("beta", "text-appointment")
    project.write_usage("alpha", {cid: {"prompt_tokens": 900, "completion_tokens": 300}
                                  for cid in project.cases})
    project.write_tests(SUITE)
    args = ["--callqa-judge-mode=per-metric", "--callqa-concurrency=4",
            "--callqa-prices=alpha: 1 2", "-rs"]
    # Cold, two workers: each sends the calls of its share of the cases; a test of the
    # other share's case reads the reply from the shared cache directory, which sends each
    # unique request once and keeps both workers within one concurrency limit.
    cold = pytester.runpytest("-n", "2", *args, "--callqa-report=cold.json")
    # The fake judge scores mid-scale, which trips blockers the heuristic judge leaves alone.
    cold.assert_outcomes(passed=5, failed=5, skipped=1)
    sent = server.requests
    assert sent == server.unique_requests > 4
    assert server.peak_in_flight <= 4
    usage = project.report("cold.json")["run"]["judge_usage"]
    assert usage["requests"] == sent
    per_process = usage["per_process"]
    # How many replies a worker read from the other's share depends on which tests xdist
    # gave it; every call that was not such a read was sent, once.
    assert per_process["processes"] == 2
    assert per_process["calls"] - per_process["cache_hits"] == sent
    card = scorecard_of(cold.stdout.str())
    assert (f"judge calls: {per_process['calls']} over 2 processes, "
            f"{per_process['cache_hits']} answered from the cache or another worker's reply"
            ) in card
    # Warm: no request at all, and the same scorecard and report in every mode.
    cards, reports = {}, {}
    for mode, xdist in {"none": ["-p", "no:xdist"], "n0": ["-n", "0"],
                        "n2": ["-n", "2"]}.items():
        result = pytester.runpytest(*xdist, *args, f"--callqa-report={mode}.json")
        result.assert_outcomes(passed=5, failed=5, skipped=1)
        cards[mode] = without_call_counts(scorecard_of(result.stdout.str()))
        reports[mode] = without_timings(project.report(f"{mode}.json"))
        assert SECRET not in result.stdout.str() + result.stderr.str()
    assert server.requests == sent
    assert "judge spend: $0.0000 for 0 requests (0+0 tokens)" in cards["none"]
    assert "Mentions Refund" in cards["none"]
    assert cards["n0"] == cards["none"]
    assert cards["n2"] == cards["none"]
    assert reports["n0"] == reports["none"]
    assert reports["n2"] == reports["none"]
    assert reports["none"]["run"]["judge_usage"]["requests"] == 0
    assert SECRET not in tree_text(pytester.path)


COUNTING_CONFTEST = """
import json

from pytest_callqa.engine.tfidf import TfidfEmbedder

CALLS = {"embed": 0}
_embed = TfidfEmbedder.embed


def embed(self, texts):
    CALLS["embed"] += 1
    return _embed(self, texts)


TfidfEmbedder.embed = embed


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        (config.rootpath / "calls.json").write_text(json.dumps(CALLS))
"""


def test_a_run_compares_the_texts_of_its_judged_batch_ahead(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(COUNTING_CONFTEST)
    project.write_tests(SUITE)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--callqa-report=report.json")
    result.assert_outcomes(passed=9, failed=2)
    # Every output's comparisons (answer relevancy, translated sentences) were worked out
    # with the batch, none when a test finished its pair.
    assert json.loads((project.root / "calls.json").read_text()) == {"embed": 0}
    relevancy = [c["metrics"]["answer_relevancy"]["value"] for c in project.report()["cases"]
                 if "answer_relevancy" in c["metrics"]]
    assert len(relevancy) == 8 and all(isinstance(value, float) for value in relevancy)

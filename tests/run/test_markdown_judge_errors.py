"""The PR summary and the HTML report of a run the judge could not score in full: the figures
its errors touch are marked E or unknown, never shown as plain model results, and the summary
says how many verdicts are missing."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_callqa.engine.core.results import MetricResult, TaskResult
from pytest_callqa.engine.scorecard import build_scorecard
from pytest_callqa.run.html import render_html
from pytest_callqa.run.markdown import render_markdown
from pytest_callqa.run.summary import models_section

from .test_html import make_report


def result(model: str, task: str, case: str, score: float | None, *, valid: bool = True,
           blocked: bool = False, unknown: str | None = None,
           blocker: bool = False) -> TaskResult:
    """A result; ``unknown`` names a metric the judge could not score (a blocker of the
    run's when ``blocker``)."""
    metrics = {} if unknown is None else {unknown: MetricResult(
        value=None, scored=False, judge_error=True, reason="judge error: timeout",
        details={"blocker_metric": True} if blocker else {})}
    return TaskResult(task=task, case_id=case, score=score, valid=valid, blocked=blocked,
                      blockers=["response_structure_compliance"] if blocked else [],
                      metrics=metrics, model=model, usage={"cost_usd": 0.001},
                      judge_errors=[] if unknown is None else [unknown])


def report_of(results: list[TaskResult], **extra: Any) -> dict[str, Any]:
    card = build_scorecard(results)
    return {"models": models_section(card), "model_order": sorted(card.models),
            "cases": [r.to_dict() for r in card.results], **extra}


def row_of(text: str, model: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {model} |"))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def runs() -> list[TaskResult]:
    # "large": qa unscored by the judge, text fine; "budget": one invalid qa case, four the
    # judge could not score; "maybe": a fabrication blocker the judge could not score.
    return ([result("large", "qa", f"q{i}", None, unknown="evidence_backed_reasoning")
             for i in range(5)] + [result("large", "text", "t", 1.0)]
            + [result("budget", "qa", "q0", None, valid=False, blocked=True)]
            + [result("budget", "qa", f"q{i}", None, unknown="evidence_backed_reasoning")
               for i in range(1, 5)]
            + [result("maybe", "text", f"t{i}", 0.9, unknown="fabrication_free_rate",
                      blocker=True) for i in range(5)]
            + [result("maybe", "qa", "q0", 0.8)])


def test_task_cells_and_finals_the_judge_left_unknown_are_marked() -> None:
    # Before: large's qa "–" beside final A/B 1.000; budget's qa "0.000 … ⛔", final B 0.000.
    text = render_markdown(report_of(runs()))
    header = row_of(text, "model")
    large, budget, maybe = (dict(zip(header, row_of(text, m), strict=True))
                            for m in ("large", "budget", "maybe"))
    assert large["qa"] == "– E (5/5 judge error)"
    assert large["final A"] == large["final B"] == "E (judge errors in qa)"
    # One known case: no interval; it is invalid, as the terminal counts it.
    assert budget["qa"] == "0.000 (1/5 invalid) E (4/5 judge error) ⛔"
    assert budget["final B"] == "E (judge errors in qa)"
    # A disqualification a blocker the judge could not score leaves open.
    assert maybe["text"] == "0.900 ⛔?"  # its cases alike: no interval
    assert maybe["blocked cases"] == "0 (+5 undecided)"
    assert maybe["final B"].startswith("0.8")
    assert "⛔? one whose disqualification is unknown" in text


def test_the_header_counts_the_verdicts_the_judge_could_not_give() -> None:
    # Before: "10 outputs scored" alone.
    report = report_of(runs(), judge_errors={"verdicts": 14, "outputs_without_task_score": 9},
                       run={"judge_usage": {"not_scored_budget": 6}})
    text = render_markdown(report)
    assert ("⚠️ Judge errors: 14 verdicts the judge could not give (6 of them stopped by the "
            "spent judge budget); 9 outputs left out of task scores. A failure of the tool, "
            "not of the models: the figures they touch are marked E.") in text
    without_budget = render_markdown({**report, "run": {}})
    assert "could not give; 9 outputs left out" in without_budget
    clean = render_markdown(report_of([result("m", "qa", "q", 0.9)],
                                      judge_errors={"verdicts": 0,
                                                    "outputs_without_task_score": 0}))
    assert "Judge errors" not in clean


def test_only_final_a_is_unknown_when_only_a_benchmark_criterion_has_judge_errors() -> None:
    report = report_of([result("m", "qa", "q", 0.8)])
    report["models"]["m"].update(incomplete_tasks=["benchmarks"], final_score_a=None)
    text = render_markdown(report)
    cells = dict(zip(row_of(text, "model"), row_of(text, "m"), strict=True))
    assert cells["final A"] == "E (judge errors in benchmarks)"
    assert cells["final B"].startswith("0.800")


def test_a_final_score_an_errored_test_left_unknown_names_a_test_error() -> None:
    # A generation that failed read "E (judge errors in entity)": the judge was blamed.
    report = report_of([result("m", "qa", "q", 0.8)])
    report["models"]["m"].update(incomplete_tasks=["qa", "entity", "benchmarks"],
                                 errored_tasks=["entity"], final_score_a=None,
                                 final_score_b=None)
    text = render_markdown(report)
    cells = dict(zip(row_of(text, "model"), row_of(text, "m"), strict=True))
    assert cells["final A"] == "E (judge errors in qa, benchmarks; test errors in entity)"
    assert cells["final B"] == "E (judge errors in qa; test errors in entity)"


def test_the_html_scorecard_shows_what_the_judge_left_unknown() -> None:
    # Before: Any Blocker "No", the rank "None", the unknown finals a bare "—".
    report = make_report()
    alpha = report["models"]["alpha"]
    alpha.update(any_blocker=None, cost_adjusted_rank=None, final_score_a=None,
                 final_score_b=None, benchmark_score=None,
                 incomplete_tasks=["qa", "benchmarks"],
                 benchmarks={"instruction_following": {"value": 1.0, "passed": True,
                                                       "scored_cases": 1, "judge_errors": 1}})
    alpha["tasks"]["qa"]["disqualification_unknown"] = True
    page = render_html(report)
    assert '<td class="cell">Unknown !?</td>' in page
    assert '<td class="cell">—</td>' in page.split("Cost-Adjusted Rank", 1)[1][:200]
    assert page.count('<td class="cell">—E') == 3  # both finals and the Benchmark Score
    assert "1 (1.000)E" in page
    assert "disqualification unknown !?" in page


def test_junit_gives_the_ranked_final_score_or_nothing_when_it_is_unknown() -> None:
    # With Final Score A unknown for judge errors, the property fell back to Final Score B:
    # one model's figure on another basis than the others'.
    from pytest_callqa.run.junit import suite_properties

    report = {"run": {"rank_basis": "final_score_a"}, "models": {
        "a": {"final_score_a": 0.8, "final_score_b": 0.7, "incomplete_tasks": []},
        "b": {"final_score_a": None, "final_score_b": 0.9, "incomplete_tasks": ["benchmarks"],
              "any_blocker": None, "cost_adjusted_rank": None}}}
    props = dict(suite_properties(report, None))
    assert (props["callqa.a.final_score"], props["callqa.b.final_score"]) == ("0.8", "")
    assert (props["callqa.b.any_blocker"], props["callqa.b.rank"]) == ("", "")
    plain = dict(suite_properties({"run": {"rank_basis": "final_score_b"}, "models": {
        "a": {"final_score_a": None, "final_score_b": 0.7}}}, None))
    assert plain["callqa.a.final_score"] == "0.7"


def test_a_final_score_a_missing_output_left_unknown_names_the_missing_output() -> None:
    # A pair without an output is neither a judge error nor a test error.
    report = report_of([result("m", "qa", "q", 0.8)])
    report["models"]["m"].update(incomplete_tasks=["qa", "entity", "benchmarks"],
                                 errored_tasks=["entity"], no_output_tasks=["qa", "benchmarks"],
                                 final_score_a=None, final_score_b=None)
    cells = dict(zip(row_of(render_markdown(report), "model"),
                     row_of(render_markdown(report), "m"), strict=True))
    assert cells["final A"] == ("E (test errors in entity; missing outputs in qa, "
                                "benchmarks)")
    assert cells["final B"] == "E (test errors in entity; missing outputs in qa)"


def test_task_cells_count_the_cases_whose_test_errored_or_that_have_no_output() -> None:
    # Before: gamma's entity read "1.000 ⛔?" with one of its two cases missing, and beta's
    # entity, none of whose cases had a result, "–" with 0 blocked cases: as never asked.
    results = [result(m, t, c, 1.0) for m in ("alpha", "gamma") for t, c in (
        ("qa", "q"), ("entity", "e1"), ("entity", "e2"))]
    results = [r for r in results if (r.model, r.case_id) != ("gamma", "e2")]
    results += [result("beta", "qa", "q", 1.0), result("beta", "qa", "q2", 1.0)]
    card = build_scorecard(results, errored=[("gamma", "entity", "e2"), ("beta", "entity", "e1")],
                           no_output=[("beta", "entity", "e2"), ("beta", "qa", "q3")])
    text = render_markdown({"models": models_section(card), "model_order": list(card.models),
                            "cases": [r.to_dict() for r in card.results]})
    header = row_of(text, "model")
    beta, gamma = (dict(zip(header, row_of(text, m), strict=True)) for m in ("beta", "gamma"))
    assert gamma["entity"] == "1.000 E (1 test errored) ⛔?"
    assert beta["entity"] == "– E (1 test errored; 1 no output) ⛔?"
    assert beta["qa"] == "1.000 E (1 no output) ⛔?"  # its cases alike: no interval
    assert beta["blocked cases"] == "0 (+3 undecided)"


def test_a_final_score_renormalised_without_a_task_says_so() -> None:
    # Before: "0.800", a plain final score next to the translation column's "–", where the
    # terminal said "final scores renormalised without task(s): translation".
    text = render_markdown(report_of([result("m", "qa", "q", 0.8),
                                      result("full", "qa", "q", 0.8),
                                      *(result("full", t, "c", 0.8)
                                        for t in ("entity", "text", "translation"))]))
    m, full = (dict(zip(row_of(text, "model"), row_of(text, name), strict=True))
               for name in ("m", "full"))
    assert m["final B"] == "0.800 (renormalised without entity, text, translation)"
    assert full["final B"] == "0.800"


@pytest.mark.parametrize(("outcomes", "rate", "flaky"), [
    ([True, None, None], "", ""), ([False, None, None], "", ""), ([None, None], "", ""),
    ([True, False, None], 0.5, "true"), ([True, True, None], 1.0, "false"),
])
def test_a_repeated_tests_junit_pass_rate_needs_two_known_runs(
        outcomes: list[bool | None], rate: object, flaky: str) -> None:
    # With the tool failing in two runs of three, the one run that passed read as a pass
    # rate of 1.0 and not flaky, where the JSON report says null for both.
    from pytest_callqa.run.junit import run_properties

    props = dict(run_properties(outcomes))
    assert (props["callqa_pass_rate"], props["callqa_flaky"]) == (rate, flaky)
    assert props["callqa_unknown_runs"] == outcomes.count(None)

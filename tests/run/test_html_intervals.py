"""The HTML report shows the 95 % intervals of the JSON report, the repeated runs and a rank
tie; a case run more than once shows its runs and each metric's mean ± sd."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

from pytest_callqa.engine.tasks.benchmark_specs import BENCHMARK_SPECS
from pytest_callqa.run.html import render_html

from .test_html import Markup, make_report


def test_intervals_runs_and_ties_are_shown() -> None:
    report = make_report()
    alpha, gamma = report["models"]["alpha"], report["models"]["gamma"]
    alpha["tasks"]["qa"]["interval"] = [0.8125, 0.975]
    alpha["tasks"]["qa"]["metrics"]["evidence_backed_reasoning"]["interval"] = [0.5, 1.0]
    alpha["final_interval_b"] = [0.75, 0.95]
    alpha["rank_ties"] = ["gamma"]
    gamma["cost_adjusted_rank"] = 2
    alpha["runs"] = {"runs": 3, "k": 2, "cases": 4, "pass_rate": 0.75, "pass_hat_k": 0.5,
                     "pass_at_k": 1.0, "flaky": ["qa/qa-0"]}
    case = next(c for c in report["cases"] if c["model"] == "alpha" and c["task"] == "qa")
    case.update(runs=3, pass_rate=2 / 3, flaky=True)
    case["metrics"]["evidence_backed_reasoning"].update(mean=0.6667, sd=0.5774)
    case["judge_records"][0].update(repeats=[2.0, 5.0, 4.0], repeats_disagree=True)
    page = render_html(report)
    assert "[0.812, 0.975]</span>" in page and "[0.500, 1.000]</span>" in page
    assert "[0.750, 0.950]</span>" in page
    assert re.search(r"<td class=\"cell\">1 \(tie 2\)</td>", page)
    assert "repeated runs (per case, mean over cases)" in page
    # Columns in the configured order: gamma (no runs), alpha, beta.
    assert re.search(r"<th>pass\^k</th><td class=\"cell\">—</td><td class=\"cell\">0\.500</td>",
                     page)
    # The one k of pass^k and pass@k: the fewest known runs of a case.
    assert re.search(r"<th>k</th><td class=\"cell\">—</td><td class=\"cell\">2</td>", page)
    assert "1/4" in page and '<span class="ci">qa/qa-0</span>' in page
    assert " · 3 runs, pass rate 0.667 · <b>flaky</b>" in page
    data = json.loads(re.search(r'id="callqa-data">(.*?)</script>', page).group(1))  # type: ignore[union-attr]
    rows = [row for c in data["cases"] for row in c["m"]]
    assert any("over runs 0.667 ± 0.577" in row[4] for row in rows)
    assert any("judge heuristic: score 1.000 (median of 2.000, 5.000, 4.000) — repeats "
               "disagree" in line for row in rows for line in row[5])


def test_a_report_without_intervals_renders_as_before() -> None:
    page = render_html(make_report())
    assert 'class="ci"' not in page and "repeated runs" not in page and "(tie" not in page


def test_the_markdown_summary_shows_task_and_final_intervals() -> None:
    from pytest_callqa.run.markdown import render_markdown

    report = make_report()
    report["models"]["alpha"]["tasks"]["qa"]["interval"] = [0.8125, 0.975]
    report["models"]["alpha"]["final_interval_a"] = [0.75, 0.95]
    text = render_markdown(report)
    # At the values' precision: three decimals (two made 0.999 read "[1.00, 1.00]").
    assert ("| alpha | 0.900 [0.812, 0.975] | 0.900 | 0.900 [0.750, 0.950] | 0.900 | 0 | "
            "$1.5000 |") in text.splitlines()


def test_a_metric_shown_in_percent_is_written_in_percent(report: dict[str, Any]) -> None:
    # Before: the hallucination rate (scale 0-1, shown in percent) read "0 (0.089)" beside a
    # threshold of "<= 2%", where the terminal's scorecard shows "0 (8.9%)".
    spec = BENCHMARK_SPECS["hallucination_rate"]
    assert spec.percent and spec.scale != "rate"
    value = report["models"]["budget-7b"]["benchmarks"]["hallucination_rate"]["value"]
    passed = int(report["models"]["budget-7b"]["benchmarks"]["hallucination_rate"]["passed"])
    html = render_html(report)
    assert f"{passed} ({value * 100:.1f}%)" in html
    assert f"{passed} ({value:.3f})" not in html


def test_an_invalid_case_file_is_named_in_the_html(report: dict[str, Any]) -> None:
    # Before: "not evaluated: None" (the entry has a path and problems, no reason).
    report["not_evaluated"] = [{"kind": "invalid_case_file", "path": "cases/qa/zz-bad.yaml",
                                "problems": ["id: does not match the pattern"]}]
    html = render_html(report)
    assert ("not evaluated: invalid case file cases/qa/zz-bad.yaml: id: does not match the "
            "pattern") in html
    assert "not evaluated: None" not in html


def test_the_html_marks_what_the_judge_could_not_score_as_the_terminal_does(
        report: dict[str, Any]) -> None:
    # Before: a metric missing judge-errored cases looked complete ("3.000", "—"), and no
    # line counted the judge's errors; the terminal and the markdown showed both.
    metric = report["models"]["budget-7b"]["tasks"]["qa"]["metrics"]["question_score_accuracy"]
    metric["judge_errors"] = 2
    report["judge_errors"] = {"verdicts": 3, "outputs_without_task_score": 1}
    html = render_html(report)
    assert f"{metric['value']:.3f}E" in html
    assert ("Judge errors: 3 verdicts the judge could not give; 1 output left out of task "
            "scores.") in html


def test_the_html_marks_cases_whose_test_errored_or_without_an_output_as_the_terminal() -> None:
    # Before: "0.900 disqualification unknown !?" and the metrics unmarked, where the
    # markdown read "0.900 E (1 test errored; 1 no output) ⛔?".
    report = make_report()
    qa = report["models"]["beta"]["tasks"]["qa"]
    qa.update(errored_cases=1, no_output_cases=1, disqualification_unknown=True)
    html = render_html(report)
    assert "0.900 E (1 test errored; 1 no output) disqualification unknown !?" in html
    markup = Markup(html)
    beta = markup.models.index("beta")
    qa_rows = [r for r in markup.rows if r["task"] == "qa"]
    assert qa_rows and all(r["cells"][beta].rstrip(" ~x!").endswith("E") for r in qa_rows)
    assert not any(r["cells"][markup.models.index("alpha")].rstrip(" ~x!").endswith("E")
                   for r in qa_rows)


def test_a_model_without_run_figures_shows_no_flaky_count() -> None:
    # No case of alpha's has two runs of known outcome: the JSON report's runs carry null
    # figures and 0 cases. The terminal shows "—"; the HTML showed "0/0".
    report = make_report()
    report["models"]["alpha"]["runs"] = {
        "runs": 0, "k": None, "cases": 0, "pass_rate": None, "pass_hat_k": None,
        "pass_at_k": None, "flaky": [], "unknown_runs": 2, "unknown_cases": ["qa/qa-0"]}
    page = render_html(report)
    for label in ("Flaky Cases", "k", "Pass Rate", r"pass\^k", "pass@k"):
        assert re.search(rf"<th>{label}</th>(<td class=\"cell\">—</td>){{3}}", page), label
    assert "0/0" not in page


def test_the_html_marks_an_off_scale_judge_reply_as_the_terminal_does() -> None:
    # Before: a figure holding a score kept from an off-scale judge reply read "0.900" where
    # the terminal read "0.900?", and no line said what the mark means.
    report = make_report()
    metrics = report["models"]["alpha"]["tasks"]["qa"]["metrics"]
    metrics["evidence_backed_reasoning"].update(flagged=2, judge_errors=1)
    page = render_html(report)
    markup = Markup(page)
    row = next(r for r in markup.rows if r["metric"] == "evidence_backed_reasoning")
    alpha, beta = markup.models.index("alpha"), markup.models.index("beta")
    assert row["cells"][alpha].rstrip(" ~x!").endswith("?E")
    assert "?" not in row["cells"][beta]
    assert ("? alpha: qa: off-scale judge replies scored by the family's own rule in "
            "evidence_backed_reasoning ×2</p>") in unescape(page)


def test_the_html_says_a_final_score_was_renormalised_without_missing_tasks() -> None:
    # Before: "0.900" alone, where the terminal and the markdown said the score was weighed
    # without the tasks the model has no case of.
    report = make_report()
    report["models"]["alpha"]["missing_tasks"] = ["text", "translation"]
    report["models"]["beta"].update(missing_tasks=["text"], final_score_b=None)
    page = render_html(report)
    for label in (r"with benchmarks", r"without benchmarks"):
        row = re.search(rf"<th>Final Score \({label}\)</th>(.*?)</tr>", page)
        assert row is not None
        cells = re.findall(r'<td class="cell">([^<]*)', row.group(1))
        # Columns in the configured order: gamma, alpha, beta (whose B is unknown).
        assert cells[:2] == ["0.900", "0.900 (renormalised without text, translation)"]
        assert cells[2] == ("0.900 (renormalised without text)" if label == "with benchmarks"
                            else "—")


def test_the_markdown_task_cell_counts_invalid_outputs_as_the_terminal_and_the_html() -> None:
    from pytest_callqa.run.markdown import render_markdown

    # Before: "0.900" in the markdown where the terminal and the HTML read "0.900 (1/2
    # invalid)": an invalid output scores 0, and the summary did not say one was there.
    report = make_report()
    report["models"]["alpha"]["tasks"]["qa"].update(invalid_cases=1, interval=[0.8, 0.95])
    assert ("| alpha | 0.900 [0.800, 0.950] (1/2 invalid) | 0.900 | 0.900 | 0.900 | 0 | "
            "$1.5000 |") in render_markdown(report).splitlines()
    assert "0.900 (1/2 invalid)" in render_html(report)


def test_every_id_the_style_sheet_names_is_an_element_of_the_page() -> None:
    # Before: "#scorecard td.cell" named the heading, not the table (#scorecard-table), so
    # the scorecard's figures were never right-aligned.
    from pytest_callqa.run.html import CSS

    page = render_html(make_report())
    ids = set(re.findall(r'\bid="([^"]+)"', page))
    named = set(re.findall(r"(?:^|[},])#([A-Za-z][\w-]*)", CSS, flags=re.MULTILINE))
    assert "scorecard-table" in named and named <= ids, named - ids


def test_the_ranks_a_model_ties_with_are_listed_in_order_as_the_terminal() -> None:
    # Before: in the order of the report's rank_ties, "1 (tie 3, 2)" where the terminal
    # read "1 (tie 2, 3)".
    report = make_report()
    gamma, alpha, beta = (report["models"][m] for m in ("gamma", "alpha", "beta"))
    gamma.update(cost_adjusted_rank=1, rank_ties=["beta", "alpha"])
    alpha["cost_adjusted_rank"], beta["cost_adjusted_rank"] = 2, 3
    assert re.search(r"<th>Cost-Adjusted Rank</th><td class=\"cell\">1 \(tie 2, 3\)</td>",
                     render_html(report))

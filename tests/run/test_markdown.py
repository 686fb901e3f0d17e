"""The PR summary: verdict and regressions, a row per model, the worst cases, and never
more than GitHub takes in one comment."""

from __future__ import annotations

import copy
import re
from typing import Any

from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.gate_text import gate_lines
from pytest_callqa.run.markdown import MAX_CHARS, render_markdown

from .conftest import case_entries, worsen


def _rows(text: str, heading: str) -> list[str]:
    section = text.split(heading, 1)[1].split("\n###", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ")]


def test_without_a_gate_it_shows_models_in_order_and_the_worst_cases(
        report: dict[str, Any]) -> None:
    text = render_markdown(report)
    assert "Gate" not in text
    rows = _rows(text, "### Scorecard")
    assert [r.split(" | ")[0][2:] for r in rows[1:]] == report["model_order"]
    header = rows[0]
    for column in ("qa", "entity", "final A", "blocked cases", "cost / 1,000 calls"):
        assert f" {column} |" in header
    budget = next(r for r in rows if r.startswith("| budget-7b |"))
    assert "⛔" in budget and "$" in budget
    worst = _rows(text, "### Worst cases")[1:]
    assert 0 < len(worst) <= 8
    assert any("blocker:" in row for row in worst)
    assert "more cases in the JSON report" in text


def test_a_case_whose_score_nobody_measured_is_not_a_worst_case(
        report: dict[str, Any]) -> None:
    # A task score none of whose metrics could be scored sorted as 0.0, "lowest score":
    # such cases filled the table and pushed the lowest measured case out of it.
    for entry in report["cases"]:
        entry.update(score=0.9, valid=True, blockers=[], judge_errors=[])
    for entry in case_entries(report, "northwind-large", "qa"):
        entry["score"] = None
    case_entries(report, "budget-7b", "text")[0]["score"] = 0.5
    worst = _rows(render_markdown(report), "### Worst cases")[1:]
    assert worst[0].startswith("| budget-7b | text |") and "| 0.500 | lowest score |" in worst[0]
    assert not any(row.startswith("| northwind-large | qa |") for row in worst)


def test_a_failed_gate_lists_each_regression_with_its_interval(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, "northwind-large", "qa", 0.6)
    entry = case_entries(report, "northwind-mini", "entity")[0]
    entry.update(blockers=["config_adherence"], blocked=True)
    gate = compare_reports(report, baseline)
    gate.update(baseline="main/report.json", mode="fail")
    text = render_markdown(report, gate)
    assert "**Gate: ❌ fail** against `main/report.json`" in text
    rows = _rows(text, "**Gate")
    metric_rows = [r for r in rows if r.startswith("| northwind-large | qa |")]
    assert len(metric_rows) == sum(1 for r in gate["regressions"] if r["kind"] == "metric")
    assert all(re.search(r"\[-\d\.\d{3}, -\d\.\d{3}\]", r) for r in metric_rows)
    assert f"northwind-mini · entity · config_adherence: new blocker on {entry['case_id']}" \
        in text


def test_a_passing_gate_says_so(report: dict[str, Any]) -> None:
    gate = compare_reports(report, copy.deepcopy(report))
    text = render_markdown(report, gate)
    assert "**Gate: ✅ pass** — no regression" in text


def test_a_gate_that_could_not_be_run_says_why(report: dict[str, Any]) -> None:
    """The markdown had no gate line and JUnit said "no baseline" when the baseline could not
    be read at the end of the run."""
    from pytest_callqa.run.junit import suite_properties

    gate = {"baseline": "main.json", "mode": "fail", "verdict": "not run",
            "problem": "baseline report main.json does not exist"}
    text = render_markdown(report, gate)
    assert ("**⚠️ Gate not run** against `main.json`: baseline report main.json does not "
            "exist") in text
    assert "pass" not in text.split("### Scorecard")[0]
    assert dict(suite_properties(report, gate))["callqa.verdict"] == (
        "gate not run: baseline report main.json does not exist")


def test_a_gate_that_could_not_be_run_counts_no_regressions_in_junit(
        report: dict[str, Any]) -> None:
    """JUnit wrote callqa.regressions="0" for a gate that never ran, beside the markdown's
    and the JSON report's "not run": empty, as with no baseline."""
    from pytest_callqa.run.junit import suite_properties

    gate = {"baseline": "main.json", "mode": "fail", "verdict": "not run",
            "problem": "baseline report main.json does not exist"}
    assert dict(suite_properties(report, gate))["callqa.regressions"] == ""
    assert dict(suite_properties(report, None))["callqa.regressions"] == ""
    ran = compare_reports(report, copy.deepcopy(report))
    assert dict(suite_properties(report, ran))["callqa.regressions"] == "0"


def test_a_huge_report_stays_under_the_comment_limit(report: dict[str, Any]) -> None:
    big = copy.deepcopy(report)
    template = big["models"]["budget-7b"]
    for i in range(3000):
        big["models"][f"model-{i:04d}-" + "x" * 40] = template
    big["cases"] = big["cases"] * 200
    gate = {"verdict": "fail", "baseline": "b.json",
            "regressions": [{"kind": "metric", "model": f"model-{i}", "task": "qa",
                             "metric": "score", "old": 0.9, "new": 0.5, "delta": -0.4,
                             "interval": [-0.5, -0.3], "shared_cases": 9,
                             "moved_cases": [{"case_id": "c" * 500, "old": 1.0, "new": 0.0}]}
                            for i in range(5000)],
            "warnings": ["w" * 10_000] * 50, "added_cases": [{}] * 10_000}
    text = render_markdown(big, gate)
    assert len(text) <= MAX_CHARS
    assert "more regressions" in text
    assert "more warnings" in text
    assert text.rstrip().endswith("The JSON report has everything.")
    assert "… truncated:" in text
    small = render_markdown(report, limit=1000)
    assert len(small) <= 1000 and "… truncated:" in small


def test_a_cut_inside_the_gates_warnings_closes_their_collapsed_block(
        report: dict[str, Any]) -> None:
    # Left open, the truncation note — and what GitHub shows after the comment — was hidden
    # inside the collapsed "Gate warnings".
    gate = compare_reports(report, copy.deepcopy(report))
    gate.update(baseline="main.json", mode="fail", warnings=[f"warning {i} " + "w" * 150
                                                             for i in range(20)])
    whole = render_markdown(report, gate, limit=10**9)
    limit = whole.index("warning 5 ")
    text = render_markdown(report, gate, limit=limit)
    assert len(text) <= limit and "warning 2 " in text and "warning 5 " not in text
    assert text.count("<details>") == text.count("</details>") == 1
    assert text.rindex("</details>") < text.index("… truncated:")


def test_a_carriage_return_stays_inside_its_cell(report: dict[str, Any]) -> None:
    # GitHub ends a table row at a lone carriage return as at a newline: a model named so
    # split its row in two (the name on one line, its scores on the next).
    old = report["model_order"][0]
    report["model_order"][0] = "be\rta"
    report["models"]["be\rta"] = report["models"].pop(old)
    text = render_markdown(report)
    assert "\r" not in text
    assert any(row.startswith("| be ta |") for row in _rows(text, "### Scorecard"))


def _first_model_named(report: dict[str, Any], name: str) -> str:
    """Rename the report's first model ``name``; the scorecard cell that shows it."""
    old = report["model_order"][0]
    report["model_order"][0] = name
    report["models"][name] = report["models"].pop(old)
    # The header, then the models in their order.
    return _rows(render_markdown(report), "### Scorecard")[1].split(" | ")[0][2:]


def test_a_model_name_shows_as_written_not_as_markdown(report: dict[str, Any]) -> None:
    # Before: written verbatim into every row naming the model, this notified a GitHub user
    # and put a link, an image and an HTML tag into the pull request's comment.
    cell = _first_model_named(
        report, "@octocat [pwn](https://evil.example) ![t](https://evil.example/t.png) <img>")
    assert cell == ("@\u2060octocat [pwn]\\(https://evil.example) ![t]\\(https://evil.example/"
                    "t.png) \\<img\\>")
    assert not re.search(r"@[A-Za-z0-9]|\]\(|(?<!\\)<img", cell)


def test_references_emphasis_and_strike_through_in_a_name_show_as_written(
        report: dict[str, Any]) -> None:
    # "&#x202E;" became a bidi override in the rendered comment (the model-name check refuses
    # the character itself), and ~~x~~ and **b** struck through and bolded the name.
    cell = _first_model_named(report, "safe&#x202E;2.0-ledom ~~x~~ **b** _i_ snake_case_id")
    assert cell == (
        "safe\\&#x202E;2.0-ledom \\~\\~x\\~\\~ \\*\\*b\\*\\* \\_i\\_ snake_case_id")


def test_a_new_blockers_line_shows_the_model_as_written_not_as_markdown(
        report: dict[str, Any]) -> None:
    # The table's cells were escaped, the lines under it (a new blocker, a new
    # disqualification) not: "@team" notified a team, "<details open>" opened a tag.
    hostile = "@octo-org <details open> [click](https://evil.example) `x`"
    old = report["model_order"][0]
    report["model_order"][0] = hostile
    report["models"][hostile] = report["models"].pop(old)
    for case in report["cases"]:
        if case["model"] == old:
            case["model"] = hostile
    baseline = copy.deepcopy(report)
    entry = case_entries(report, hostile, "entity")[0]
    entry.update(blockers=["config_adherence"], blocked=True)
    gate = compare_reports(report, baseline)
    gate.update(baseline="main.json", mode="fail")
    [line] = [row for row in render_markdown(report, gate).splitlines()
              if "new blocker" in row]
    assert line == ("- @\u2060octo-org \\<details open\\> [click]\\(https://evil.example) "
                    f"\\`x\\` · entity · config_adherence: new blocker on {entry['case_id']}")


def test_comparisons_the_gate_could_not_make_are_counted(report: dict[str, Any]) -> None:
    """A passing gate that compared almost nothing (case ids renamed: too few shared cases
    everywhere) says so in the comment a reviewer reads, as the terminal does."""
    baseline = copy.deepcopy(report)
    for case in baseline["cases"]:
        case["case_id"] = "renamed-" + case["case_id"]
    # Renamed in its case files, which its catalogue lists: else each case of this run would
    # be one the baseline had and did not evaluate.
    baseline["run"]["catalogue_cases"] = [[task, "renamed-" + case_id] for task, case_id
                                          in baseline["run"]["catalogue_cases"]]
    gate = compare_reports(report, baseline)
    gate.update(baseline="main.json", mode="fail")
    total = len(gate["checks"])
    assert total and all(c["status"] == "too few cases" for c in gate["checks"])
    text = render_markdown(report, gate)
    assert ("**Gate: ✅ pass** against `main.json` — no regression found, but no comparison "
            "could be made") in text
    assert (f"⚠️ {total} of {total} comparisons could not be made: fewer than 5 cases "
            "shared with the baseline, too few to tell a change from noise.") in text

    some = compare_reports(report, copy.deepcopy(report))
    few = sum(1 for c in some["checks"] if c["status"] == "too few cases")
    assert 0 < few < len(some["checks"])
    text = render_markdown(report, some)
    assert "**Gate: ✅ pass** — no regression\n" in text
    assert f"⚠️ {few} of {len(some['checks'])} comparisons could not be made" in text


def test_a_gate_that_shares_nothing_with_its_baseline_says_it_compared_nothing(
        report: dict[str, Any]) -> None:
    """Every model renamed (``-v2``): no check at all, and the gate said "PASS — no
    regression" in the terminal and "✅ pass — no regression" in the comment."""
    renamed = copy.deepcopy(report)
    renamed["models"] = {f"{m}-v2": v for m, v in renamed["models"].items()}
    renamed["model_order"] = [f"{m}-v2" for m in renamed["model_order"]]
    # As a run configured with the new names records them.
    renamed["run"]["settings"]["models"] = [f"{m}-v2" for m in renamed["run"]["settings"]["models"]]
    for case in renamed["cases"]:
        case["model"] += "-v2"
    gate = compare_reports(renamed, report)
    gate.update(baseline="main.json", mode="fail")
    models = len(report["models"])
    assert gate["verdict"] == "pass" and gate["checks"] == []
    said = (f"no regression found, but no comparison could be made: no model and task shared "
            f"with the baseline ({models} models added, {models} models removed)")
    assert gate_lines(gate)[0] == f"callqa gate against main.json: PASS — {said}"
    assert f"**Gate: ✅ pass** against `main.json` — {said}\n" in render_markdown(renamed, gate)


def test_intervals_are_shown_at_the_precision_of_their_values(report: dict[str, Any]) -> None:
    # A score of 0.999 read "0.999 [1.00, 1.00]": its interval rounded past its own value.
    model = report["model_order"][0]
    agg = report["models"][model]["tasks"]["qa"]
    agg.update(score=0.9991, interval=[0.9982, 0.9996])
    report["models"][model].update(final_score_a=123.4567, final_interval_a=[120.01, 125.49])
    row = next(r for r in _rows(render_markdown(report), "### Scorecard")
               if r.startswith(f"| {model} |"))
    assert "0.999 [0.998, 1.000]" in row
    assert "123 [120, 125]" in row

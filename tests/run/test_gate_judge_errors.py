"""The baseline gate when the tool failed: comparisons a judge error (in this run or in the
baseline) or a test error kept it from making make the verdict "incomplete" — never "pass",
and never a regression of the model — while a regression among the comparisons it could
make still fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.deliver import Delivered
from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.gate_text import gate_lines

from .conftest import case_entries, merge_command, shard_report, write_shards

MODEL = "northwind-large"
BLOCKER = "fabrication_free_rate"


def judge_error(entry: dict[str, Any], *metrics: str, blocker: bool = False) -> None:
    """Mark ``metrics`` of a case entry as a run writes a judge error: not scored, listed in
    ``judge_errors``, the task score unknown, no blocker fired on them."""
    for mid in metrics:
        entry["metrics"][mid] = {
            "value": None, "scored": False, "rating": None, "reason": "judge error: HTTP 503",
            "blocker": False, "flagged": False, "judge_error": True,
            "details": {"blocker_metric": True} if blocker else {}}
    entry["judge_errors"] = sorted({*entry["judge_errors"], *metrics})
    entry["blockers"] = [b for b in entry["blockers"] if b not in metrics]
    entry.update(score=None, valid=True, blocked=bool(entry["blockers"]))


def judge_down(report: dict[str, Any], task: str, *metrics: str,
               blocker: bool = False) -> list[str]:
    """Every case of MODEL on ``task`` with ``metrics`` judge errors, and the model-level
    figures they leave unknown; returns the case ids."""
    entries = case_entries(report, MODEL, task)
    for entry in entries:
        judge_error(entry, *metrics, blocker=blocker)
    agg = report["models"][MODEL]["tasks"][task]
    agg["score"] = None
    if blocker:
        # As the scorecard says it (tolerance 0): undecided cases leave it open.
        agg["disqualification_unknown"] = True
    for mid in metrics:
        agg["metrics"][mid]["value"] = None
    return sorted(e["case_id"] for e in entries)


def unmade(gate: dict[str, Any]) -> set[tuple[str, str, str | None, tuple[str, ...],
                                              tuple[str, ...]]]:
    return {(e["kind"], e["task"], e["metric"], tuple(e["run"]), tuple(e["baseline"]))
            for e in gate["incomplete"] if e["model"] == MODEL}


def text(gate: dict[str, Any], mode: str = "fail") -> str:
    return "\n".join(gate_lines({**gate, "baseline": "main.json", "mode": mode}))


def test_a_judge_down_in_this_run_is_incomplete_not_a_pass(report: dict[str, Any]) -> None:
    """The judge returned 503 on every QA case: the gate said "PASS — no regression" and the
    run exited 0 — the task score and the judge-scored metric had been compared on nothing."""
    baseline = copy.deepcopy(report)
    ids = tuple(judge_down(report, "qa", "evidence_backed_reasoning"))
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["regressions"] == []
    assert unmade(gate) == {("metric", "qa", "score", ids, ()),
                            ("metric", "qa", "evidence_backed_reasoning", ids, ())}
    statuses = {c["metric"]: c["status"] for c in gate["checks"]
                if (c["model"], c["task"]) == (MODEL, "qa")}
    assert statuses.pop("score") == statuses.pop("evidence_backed_reasoning") == "incomplete"
    # What the judge does not score is still compared, on every case.
    assert set(statuses.values()) == {"unchanged"}
    first = text(gate).splitlines()[0]
    assert first.startswith("callqa gate against main.json: INCOMPLETE")
    assert "2 comparisons could not be made for judge errors on 5 cases" in first
    assert "exits 4" in first and "not of the model" in first
    assert "too few" not in first and "PASS" not in text(gate)
    assert "(report mode: the run's exit status is not changed)" in text(gate, "report")
    json.dumps(gate, allow_nan=False)


def test_a_judge_down_in_the_baseline_is_incomplete_too(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    ids = tuple(judge_down(baseline, "qa", "evidence_backed_reasoning"))
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert unmade(gate) == {("metric", "qa", "score", (), ids),
                            ("metric", "qa", "evidence_backed_reasoning", (), ids)}
    assert "judge errors on 5 cases in the baseline" in text(gate)


def test_a_regression_in_what_could_be_compared_still_fails(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    judge_down(report, "qa", "evidence_backed_reasoning")
    for entry in case_entries(report, MODEL, "qa"):
        entry["metrics"]["question_score_accuracy"]["value"] *= 0.5
    figure = report["models"][MODEL]["tasks"]["qa"]["metrics"]["question_score_accuracy"]
    figure["value"] *= 0.5
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "fail"
    assert [(r["task"], r["metric"]) for r in gate["regressions"]] == [
        ("qa", "question_score_accuracy")]
    assert {e[2] for e in unmade(gate)} == {"score", "evidence_backed_reasoning"}
    assert text(gate).startswith("callqa gate against main.json: FAIL — 1 regression")


def test_a_figure_the_baseline_left_unknown_is_compared_on_the_cases_that_have_it(
        report: dict[str, Any]) -> None:
    """A baseline whose task score is unknown (a judge error on one case) against a run
    whose every QA score halved: the gate skipped the score, and passed."""
    baseline = copy.deepcopy(report)
    broken = case_entries(baseline, MODEL, "qa")[0]
    judge_error(broken, "evidence_backed_reasoning")
    baseline["models"][MODEL]["tasks"]["qa"]["score"] = None
    for entry in case_entries(report, MODEL, "qa"):
        entry["score"] *= 0.5
    report["models"][MODEL]["tasks"]["qa"]["score"] *= 0.5
    gate = compare_reports(report, baseline, min_cases=4)
    assert gate["verdict"] == "fail"
    reg = next(r for r in gate["regressions"] if (r["task"], r["metric"]) == ("qa", "score"))
    assert reg["old"] is None and reg["delta"] is None and reg["shared_cases"] == 4
    assert reg["shared_delta"] < 0
    line = next(line for line in text(gate).splitlines() if "qa · score" in line)
    assert f"– → {reg['new']:.3f} (Δ {reg['shared_delta']:+.3f}" in line
    check = next(c for c in gate["checks"]
                 if (c["model"], c["task"], c["metric"]) == (MODEL, "qa", "score"))
    assert check["status"] == "regression" and check["judge_error_cases"] == 1


def test_a_blocker_the_baseline_could_not_decide_is_no_new_blocker(
        report: dict[str, Any]) -> None:
    """D7: the baseline's fabrication check (a blocker) was a judge error on every text case;
    the run, its judge up, finds the blocker on each: "new blocker on 5 cases" and "newly
    disqualified (0 → 5)" failed the gate, though nobody knew whether they had fired before."""
    baseline = copy.deepcopy(report)
    ids = tuple(judge_down(baseline, "text", BLOCKER, "summary_score", blocker=True))
    for entry in case_entries(report, MODEL, "text"):
        entry["metrics"][BLOCKER].update(value=0.5, rating="blocker", blocker=True)
        entry.update(blockers=[BLOCKER], blocked=True)
    report["models"][MODEL]["tasks"]["text"].update(blocked_cases=5, disqualified=True)
    gate = compare_reports(report, baseline)
    assert gate["regressions"] == []
    assert gate["verdict"] == "incomplete"
    found = unmade(gate)
    assert ("new blocker", "text", BLOCKER, (), ids) in found
    assert ("new disqualification", "text", "disqualified", (), ids) in found
    lines = text(gate)
    assert "new blocker on" not in lines and "newly disqualified" not in lines
    assert f"text · {BLOCKER} (new blocker check): judge errors on 5 cases in the baseline" \
        in lines


def test_a_blocker_this_run_could_not_decide_is_incomplete(report: dict[str, Any]) -> None:
    """Left out with its case, a blocker the judge could not score passed the gate."""
    baseline = copy.deepcopy(report)
    entry = case_entries(report, MODEL, "text")[0]
    judge_error(entry, BLOCKER, "summary_score", blocker=True)
    # As the scorecard says it with a tolerance of 0: the undecided case could tip it.
    report["models"][MODEL]["tasks"]["text"]["disqualification_unknown"] = True
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    found = unmade(gate)
    assert ("new blocker", "text", BLOCKER, (entry["case_id"],), ()) in found
    assert ("new disqualification", "text", "disqualified", (entry["case_id"],), ()) in found


def test_a_disqualification_the_baseline_decided_despite_an_undecided_case_regresses(
        report: dict[str, Any]) -> None:
    """The baseline's scorecard counted its undecided case and found it could not tip the
    task over the tolerance: a disqualification now is new, a regression (exit 1), not a
    comparison the judge kept the gate from making (it read as incomplete, exit 4)."""
    baseline = copy.deepcopy(report)
    judge_error(case_entries(baseline, MODEL, "text")[0], BLOCKER, "summary_score",
                blocker=True)
    baseline["models"][MODEL]["tasks"]["text"].update(
        disqualified=False, disqualification_unknown=False)
    report["models"][MODEL]["tasks"]["text"].update(disqualified=True, blocked_cases=3)
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "fail"
    assert ("new disqualification", MODEL, "text") in {
        (r["kind"], r["model"], r["task"]) for r in gate["regressions"]}


def test_a_new_blocker_on_a_case_the_baseline_decided_still_regresses(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    undecided, decided = case_entries(baseline, MODEL, "text")[:2]
    judge_error(undecided, BLOCKER, "summary_score", blocker=True)
    for entry in case_entries(report, MODEL, "text")[:2]:
        entry["metrics"][BLOCKER].update(value=0.5, rating="blocker", blocker=True)
        entry.update(blockers=[BLOCKER], blocked=True)
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "fail"
    new = [r for r in gate["regressions"] if r["kind"] == "new blocker"]
    assert [(r["metric"], [m["case_id"] for m in r["moved_cases"]]) for r in new] == [
        (BLOCKER, [decided["case_id"]])]
    assert ("new blocker", "text", BLOCKER, (), (undecided["case_id"],)) in unmade(gate)


@pytest.mark.parametrize(("then", "now"), [
    ({"disqualified": None}, {"disqualified": True}),
    ({"disqualified": False, "disqualification_unknown": True}, {"disqualified": True}),
    ({"disqualified": False}, {"disqualified": None}),
    ({"disqualified": False}, {"disqualified": False, "disqualification_unknown": True}),
])
def test_a_disqualification_either_scorecard_leaves_unknown_is_no_regression(
        report: dict[str, Any], then: dict[str, Any], now: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    baseline["models"][MODEL]["tasks"]["entity"].update(then)
    report["models"][MODEL]["tasks"]["entity"].update(now)
    gate = compare_reports(report, baseline)
    assert gate["regressions"] == []
    assert gate["verdict"] == "incomplete"
    assert ("new disqualification", "entity", "disqualified", (), ()) in unmade(gate)


def test_null_figures_of_a_scorecard_that_leaves_them_unknown_are_read(
        report: dict[str, Any]) -> None:
    """A scorecard may leave a final score, a rank, whether a blocker fired, a task score or
    a metric unknown (null): the gate reads such a report (as a baseline or as this run's)
    without raising and without a regression."""
    for data in (report, baseline := copy.deepcopy(report)):
        for card in data["models"].values():
            card.update(any_blocker=None, final_score_a=None, final_score_b=None,
                        cost_adjusted_rank=None)
        agg = data["models"][MODEL]["tasks"]["qa"]
        agg.update(score=None, blocked_cases=None)
        agg["metrics"]["evidence_backed_reasoning"]["value"] = None
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "pass"
    gate_lines(gate)


def errored(model: str, case_id: str, task: str) -> dict[str, Any]:
    return {"kind": "test_error", "model": model, "case_id": case_id, "task": task,
            "reason": f"callqa: generating the output of model {model!r} for case "
                      f"{case_id!r} failed: HTTP 500"}


def test_a_pair_whose_test_errored_is_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    """A live generation that failed left the pair out of the run: the gate read "1 cases
    removed" and passed."""
    baseline = copy.deepcopy(report)
    gone = case_entries(report, MODEL, "qa")[0]
    report["cases"].remove(gone)
    report["not_evaluated"] = [errored(MODEL, gone["case_id"], "qa")]
    gate = compare_reports(report, baseline)
    assert gate["removed_cases"] == []
    assert gate["verdict"] == "incomplete"
    assert ("not evaluated", "qa", None, (gone["case_id"],), ()) in unmade(gate)
    lines = text(gate)
    assert "removed" not in lines
    assert "1 case not evaluated for test errors" in lines.splitlines()[0]
    assert (f"{MODEL} · qa: 1 case in this run ({gone['case_id']}) not evaluated (test "
            "errors: a failure of the tool, not of the model)") in lines

    # The same pair not evaluated in the baseline is not an added case either.
    back = compare_reports(baseline, report, baseline_name="main.json")
    assert back["added_cases"] == [] and back["verdict"] == "incomplete"
    assert ("not evaluated", "qa", None, (), (gone["case_id"],)) in unmade(back)


def test_a_model_whose_every_pair_errored_is_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    pairs = [c for c in report["cases"] if c["model"] == "budget-7b"]
    report["cases"] = [c for c in report["cases"] if c["model"] != "budget-7b"]
    del report["models"]["budget-7b"]
    report["not_evaluated"] = [errored("budget-7b", c["case_id"], c["task"]) for c in pairs]
    gate = compare_reports(report, baseline)
    assert gate["removed_models"] == [] and gate["removed_cases"] == []
    assert gate["verdict"] == "incomplete"
    assert {e["task"] for e in gate["incomplete"] if e["model"] == "budget-7b"} == {
        c["task"] for c in pairs}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r.update(not_evaluated={}),
     "main.json: key 'not_evaluated' should be an array or null, not an object"),
    (lambda r: r.update(not_evaluated=[{"kind": "test_error", "case_id": "qa-1"}]),
     "main.json: not_evaluated[0]: missing key 'model'"),
    (lambda r: r.update(not_evaluated=["qa-1"]),
     "main.json: not_evaluated[0]: should be an object, not a string"),
    (lambda r: r["models"][MODEL]["tasks"]["qa"].update(disqualified="no"),
     f"main.json: models.{MODEL}.tasks.qa: key 'disqualified' should be true or false or "
     "null, not a string"),
])
def test_what_the_gate_reads_of_an_unevaluated_pair_or_a_disqualification_is_checked(
        report: dict[str, Any], edit: Any, message: str) -> None:
    baseline = copy.deepcopy(report)
    edit(baseline)
    with pytest.raises(ValueError) as info:
        compare_reports(report, baseline, baseline_name="main.json")
    assert message in str(info.value)


@pytest.mark.parametrize(("verdict", "mode", "failed", "incomplete"), [
    ("incomplete", "fail", False, True),
    ("incomplete", "report", False, False),
    ("fail", "fail", True, False),
    ("pass", "fail", False, False),
])
def test_only_an_incomplete_gate_in_fail_mode_keeps_the_run_from_exiting_0(
        verdict: str, mode: str, failed: bool, incomplete: bool) -> None:
    delivered = Delivered(report={}, gate={"verdict": verdict, "mode": mode})
    assert (delivered.failed, delivered.gate_incomplete) == (failed, incomplete)


def test_a_merge_gated_against_a_baseline_the_judge_failed_exits_4(
        unsharded: dict[str, Any], tmp_path: Path) -> None:
    baseline = copy.deepcopy(unsharded)
    judge_down(baseline, "qa", "evidence_backed_reasoning")
    (tmp_path / "main.json").write_text(json.dumps(baseline), encoding="utf-8")
    paths = write_shards([shard_report(unsharded, i, 2) for i in (1, 2)], tmp_path)
    out = tmp_path / "merged.json"
    done = merge_command(*paths, "--report", out, "--baseline", "main.json", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "INCOMPLETE" in done.stdout
    assert json.loads(out.read_text(encoding="utf-8"))["gate"]["verdict"] == "incomplete"
    reported = merge_command(*paths, "--report", out, "--baseline", "main.json",
                             "--baseline-mode", "report", cwd=tmp_path)
    assert reported.returncode == 0, reported.stdout + reported.stderr


def test_the_markdown_summary_says_incomplete_and_names_what_was_not_compared(
        report: dict[str, Any]) -> None:
    # It said "✅ pass … no comparison could be made" and blamed too few shared cases.
    from pytest_callqa.run.markdown import render_markdown

    baseline = copy.deepcopy(report)
    judge_down(report, "qa", "evidence_backed_reasoning")
    gate = {**compare_reports(report, baseline), "baseline": "main.json", "mode": "fail"}
    summary = render_markdown(report, gate)
    assert ("**Gate: ⚠️ incomplete** against `main.json` — no regression in what could be "
            "compared, but ") in summary
    assert "judge errors on 5 cases: a failure of the tool, not of the model" in summary
    assert "- not compared: northwind-large · qa · evidence_backed_reasoning: judge errors" \
        in summary
    assert "✅" not in summary
    reported = render_markdown(report, {**gate, "mode": "report"})
    assert "of the model (report mode: the run does not fail on it)" in reported


def test_the_html_report_shows_an_incomplete_gate_and_what_was_not_compared(
        report: dict[str, Any]) -> None:
    # It showed INCOMPLETE as "no gate" (grey) and the comparisons as raw Python lists.
    from pytest_callqa.run.html import render_html

    baseline = copy.deepcopy(report)
    judge_down(report, "qa", "evidence_backed_reasoning")
    page = render_html(report, {**compare_reports(report, baseline), "baseline": "main.json",
                                "mode": "fail"})
    assert '<div class="verdict v-incomplete" id="gate">Baseline gate: INCOMPLETE' in page
    assert "<h3>Not compared (" in page
    assert "<li>northwind-large · qa · evidence_backed_reasoning: judge errors on 5 cases" in page
    assert "{&#x27;kind&#x27;" not in page and "{'kind'" not in page


def test_the_summary_counts_a_case_once_whatever_task_it_is_compared_under() -> None:
    """A case is compared under its task and, for its Layer 2 criteria, under "benchmarks":
    the summary counted it twice ("61 comparisons could not be made for judge errors on 98
    cases" with 57 cases behind them)."""
    entries = [{"kind": "metric", "model": MODEL, "task": task, "metric": metric,
                "reason": "judge errors", "run": ["qa-1", "qa-2"], "baseline": []}
               for task, metric in (("qa", "score"), ("benchmarks", "faithfulness"))]
    entries.append({"kind": "metric", "model": "budget-7b", "task": "qa", "metric": "score",
                    "reason": "judge errors", "run": ["qa-1"], "baseline": ["qa-1"]})
    gate = {"verdict": "incomplete", "incomplete": entries, "checks": []}
    assert "3 comparisons could not be made for judge errors on 3 cases" in text(gate)

"""The baseline gate and a pair without an output (none recorded, or the budget stopped its
generation): the scorecard counts it as a case of unknown result, and so does the gate — left
out of what it compares and named, as a pair whose test errored is, never read as a pass,
as a case removed or added, or as a judge error."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.gate_text import gate_lines
from pytest_callqa.run.markdown import render_markdown
from pytest_callqa.run.merge import scorecard_of
from pytest_callqa.run.summary import models_section

from .conftest import case_entries, left_out

MODEL = "northwind-large"


def without(report: dict[str, Any], kind: str, model: str = MODEL, task: str = "qa",
            cases: int = 1) -> list[str]:
    """Take the first ``cases`` results of (model, task) out of ``report``, listed in its
    not_evaluated as a run lists them (``missing_output`` or ``test_error``), with the
    model-level figures its scorecard then gives; returns their case ids."""
    gone = case_entries(report, model, task)[:cases]
    for entry in gone:
        report["cases"].remove(entry)
        report["not_evaluated"].append({
            "kind": kind, "model": model, "case_id": entry["case_id"], "task": task,
            "reason": "no output" if kind == "missing_output" else "HTTP 500",
            **({"budget_stopped": False} if kind == "missing_output" else {})})
    report["models"] = models_section(scorecard_of(report))
    return [e["case_id"] for e in gone]


def entries(gate: dict[str, Any]) -> set[tuple[str, str | None, str, tuple[str, ...],
                                              tuple[str, ...]]]:
    return {(e["kind"], e["metric"], e["reason"], tuple(e["run"]), tuple(e["baseline"]))
            for e in gate["incomplete"] if (e["model"], e["task"]) == (MODEL, "qa")}


def text(gate: dict[str, Any]) -> str:
    return "\n".join(gate_lines({**gate, "baseline": "main.json", "mode": "fail"}))


def unevaluated(gate: dict[str, Any]) -> tuple[set[tuple[str, str | None]],
                                               set[tuple[str, str, str]]]:
    """The gate's comparisons not made for cases not evaluated: their (reason, detail), and
    the cases of this run they name."""
    unrun = [e for e in gate["incomplete"] if e["kind"] == "not evaluated"]
    return ({(e["reason"], e["detail"]) for e in unrun},
            {(e["model"], e["task"], c) for e in unrun for c in e["run"]})


def test_a_pair_without_an_output_in_this_run_is_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    """Before, the gate listed the pair as "1 cases removed", and the disqualification its
    scorecard left unknown as "judge errors" on no case."""
    baseline = copy.deepcopy(report)
    (case_id,) = without(report, "missing_output")
    assert report["models"][MODEL]["tasks"]["qa"]["disqualification_unknown"] is True
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["removed_cases"] == [] and gate["added_cases"] == []
    assert entries(gate) == {("not evaluated", None, "no output", (case_id,), ()),
                             ("new disqualification", "disqualified", "no output",
                              (case_id,), ())}
    lines = text(gate)
    assert "removed" not in lines and "judge errors" not in lines
    assert "test errors" not in lines
    first = lines.splitlines()[0]
    assert ("1 comparison could not be made for no output on 1 case; 1 case not evaluated, "
            "no output") in first
    # Held open by an output the run did not have, which no tool failed at.
    assert first.endswith("— missing outputs: not a pass, nor the model's failure: the run "
                          "exits 4 unless it failed")
    assert "missing outputs: not a pass, nor the model's failure" in render_markdown(
        report, {**gate, "baseline": "main.json", "mode": "fail"})
    assert (f"{MODEL} · qa: 1 case in this run ({case_id}) not evaluated (no output: of "
            "unknown result, not a pass)") in lines
    assert (f"{MODEL} · qa · disqualified (new disqualification check): no output on 1 case "
            f"in this run ({case_id})") in lines


def test_a_pair_without_an_output_in_the_baseline_is_not_an_added_case(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    (case_id,) = without(baseline, "missing_output")
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["added_cases"] == [] and gate["removed_cases"] == []
    # This run's task is known not to be disqualified: no disqualification is new.
    assert entries(gate) == {("not evaluated", None, "no output", (), (case_id,))}
    assert f"1 case in the baseline ({case_id}) not evaluated (no output" in text(gate)


def test_a_model_without_any_output_is_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    pairs = [c for c in report["cases"] if c["model"] == "budget-7b"]
    report["cases"] = [c for c in report["cases"] if c["model"] != "budget-7b"]
    del report["models"]["budget-7b"]
    report["not_evaluated"] += [{"kind": "missing_output", "model": "budget-7b",
                                 "case_id": c["case_id"], "task": c["task"],
                                 "reason": "no output", "budget_stopped": True}
                                for c in pairs]
    gate = compare_reports(report, baseline)
    assert gate["removed_models"] == [] and gate["removed_cases"] == []
    assert gate["verdict"] == "incomplete"
    assert {e["reason"] for e in gate["incomplete"] if e["model"] == "budget-7b"} == {
        "no output"}


def test_the_disqualification_a_test_error_leaves_open_names_the_test_error(
        report: dict[str, Any]) -> None:
    """It said "judge errors" on no case, beside the test error's own line."""
    baseline = copy.deepcopy(report)
    (case_id,) = without(report, "test_error")
    gate = compare_reports(report, baseline)
    assert entries(gate) == {("not evaluated", None, "test errors", (case_id,), ()),
                             ("new disqualification", "disqualified", "test errors",
                              (case_id,), ())}
    assert "judge errors" not in text(gate)


def test_a_test_error_and_a_missing_output_in_one_task_are_each_named(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    errored = without(report, "test_error")
    missing = without(report, "missing_output")
    gate = compare_reports(report, baseline)
    assert entries(gate) == {
        ("not evaluated", None, "test errors", tuple(errored), ()),
        ("not evaluated", None, "no output", tuple(missing), ()),
        ("new disqualification", "disqualified", "test errors and no output",
         tuple(sorted(errored + missing)), ())}
    assert ("1 comparison could not be made for test errors and no output on 2 cases; 1 case "
            "not evaluated for test errors; 1 case not evaluated, no output") in text(gate)


def test_what_the_gate_reads_of_a_pair_without_an_output_is_checked(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    baseline["not_evaluated"].append({"kind": "missing_output", "case_id": "qa-1"})
    with pytest.raises(ValueError) as info:
        compare_reports(report, baseline, baseline_name="main.json")
    assert "main.json: not_evaluated[1]: missing key 'model'" in str(info.value)


def test_cases_a_run_could_not_read_the_case_file_of_are_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    """A golden case file that no longer parsed made its cases "removed", and the gate passed
    ("no regression, 3 cases removed")."""
    baseline = copy.deepcopy(report)
    case_id = case_entries(report, MODEL, "qa")[0]["case_id"]
    report["cases"] = [c for c in report["cases"] if c["case_id"] != case_id]
    path = f"cases/qa/{case_id}.yaml"
    report["not_evaluated"].append({"kind": "invalid_case_file", "path": path,
                                    "problems": ["(file) cannot be parsed"]})
    report["models"] = models_section(scorecard_of(report))
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["removed_cases"] == []
    unread = [e for e in gate["incomplete"] if e["kind"] == "not evaluated"]
    assert {(e["model"], e["reason"], tuple(e["run"]), e["detail"]) for e in unread} == {
        (model, "invalid case files", (case_id,), path)
        for model in report["models"]}
    lines = text(gate)
    assert "removed" not in lines.replace("not as removed", "")
    first = lines.splitlines()[0]
    assert "3 cases not evaluated for invalid case files" in first
    assert first.endswith("— case files that could not be read: not a pass, nor the model's "
                          "failure: the run exits 4 unless it failed")
    # The case is not in the run: before, the line said "1 case in this run".
    assert (f"{MODEL} · qa: 1 case only in the baseline ({case_id}) not evaluated (invalid "
            f"case files ({path}): the baseline does not say which cases they held") in lines


def test_cases_a_run_that_stopped_early_did_not_reach_are_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    """A run stopped by -x (or a merge with such a shard) passed: "no regression, 37 cases
    removed", exit 0, under the markdown's own "run stopped early"."""
    baseline = copy.deepcopy(report)
    unreached = left_out(report, lambda c: c["task"] != "qa" and c["model"] != "budget-7b")
    report["run"]["stopped_early"] = "stopping after 1 failures"
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["removed_cases"] == [] and gate["removed_models"] == []
    assert unevaluated(gate) == ({("run stopped early", "stopping after 1 failures")},
                                 unreached)
    first = text(gate).splitlines()[0]
    assert f"{len(unreached)} cases not evaluated in a run stopped early" in first
    assert first.endswith("— a run that stopped early: not a pass, nor the model's failure: "
                          "the run exits 4 unless it failed")
    qa = len(case_entries(baseline, MODEL, "qa"))
    assert (f"{MODEL} · qa: {qa} cases only in the baseline" in text(gate)
            and "in this run" not in text(gate)
            and "not evaluated (run stopped early (stopping after 1 failures): each case only "
            "the baseline has counts here" in text(gate))
    # With a case file it could not read too, both are named.
    report["not_evaluated"].append({"kind": "invalid_case_file", "path": "cases/qa/x.yaml",
                                    "problems": ["(file) cannot be parsed"]})
    both = compare_reports(report, baseline)
    assert {(e["reason"], e["detail"]) for e in both["incomplete"]
            if e["kind"] == "not evaluated"} == {
        ("invalid case files and run stopped early",
         "cases/qa/x.yaml; stopping after 1 failures")}
    assert "not evaluated for invalid case files, in a run stopped early" in text(both)
    assert "case files that could not be read and a run that stopped early: not a pass" in \
        text(both)


def test_cases_a_narrowed_run_did_not_select_are_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    """`pytest -k qa` gated against a whole run's baseline passed: "no regression, N cases
    removed", exit 0: the cases it never selected read as deleted from the suite. A report
    that lists no catalogue (made before the list) is read by what narrowed its selection."""
    report["run"]["catalogue_cases"] = None
    baseline = copy.deepcopy(report)
    unselected = left_out(report, lambda c: c["task"] == "qa")
    report["run"]["selection"] = {"args": [], "keyword": "qa", "markexpr": "eval",
                                  "deselect": [], "lf": False, "last_failed": False,
                                  "deselected_eval_tests": len(unselected)}
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["removed_cases"] == [] and gate["removed_models"] == []
    assert unevaluated(gate) == ({("not selected", "-k 'qa'")}, unselected)
    first = text(gate).splitlines()[0]
    assert f"{len(unselected)} cases not evaluated outside the run's selection" in first
    assert first.endswith("— a run narrowed to part of the suite: not a pass, nor the model's "
                          "failure: the run exits 4 unless it failed")
    assert "not evaluated (not selected (-k 'qa'): each case only the baseline has counts " \
        "here, not as removed nor as a pass)" in text(gate)
    # Stopped early as well: both causes are named, in one line and in the count.
    report["run"]["stopped_early"] = "interrupted"
    both = compare_reports(report, baseline)
    assert {(e["reason"], e["detail"]) for e in both["incomplete"]
            if e["kind"] == "not evaluated"} == {
        ("run stopped early and not selected", "interrupted; -k 'qa'")}
    assert (f"{len(unselected)} cases not evaluated in a run stopped early, outside the run's "
            "selection") in text(both)
    # The baseline was asked for the same tests: a case only it has was deleted since.
    report["run"]["stopped_early"] = None
    baseline["run"]["selection"] = copy.deepcopy(report["run"]["selection"])
    baseline["run"]["selection"]["deselected_eval_tests"] = len(unselected) + 3
    same = compare_reports(report, baseline)
    assert same["verdict"] == "pass"
    assert len(same["removed_cases"]) == len(unselected)
    assert not [e for e in same["incomplete"] if e["kind"] == "not evaluated"]


def test_cases_still_in_the_catalogue_are_not_selected_and_cases_deleted_from_it_removed(
        report: dict[str, Any]) -> None:
    """`pytest tests/test_qa.py` (a path, no option that deselects) gated against a whole
    run's baseline passed: "no regression, N cases removed", exit 0. The run's report lists
    its catalogue: a case of it the run did not evaluate was not selected, whatever left it
    out; a case no longer in it was deleted."""
    baseline = copy.deepcopy(report)
    unselected = left_out(report, lambda c: c["task"] == "qa")
    report["run"]["selection"]["args"] = ["tests/test_qa.py"]
    deleted = sorted(unselected)[0]
    report["run"]["catalogue_cases"].remove(list(deleted[1:]))
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    deleted_ids = {k for k in unselected if k[1:] == deleted[1:]}
    assert {(e["model"], e["task"], e["case_id"]) for e in gate["removed_cases"]} == deleted_ids
    assert unevaluated(gate) == ({("not selected", "tests/test_qa.py")},
                                 unselected - deleted_ids)
    assert "not evaluated (not selected (tests/test_qa.py): each case only the baseline has " \
        "counts here, not as removed nor as a pass)" in text(gate)
    # With -k as well, both are named; a run that stopped early may have missed any case.
    report["run"]["selection"]["keyword"] = "qa"
    assert {e["detail"] for e in compare_reports(report, baseline)["incomplete"]
            if e["kind"] == "not evaluated"} == {"-k 'qa', tests/test_qa.py"}
    report["run"]["stopped_early"] = "interrupted"
    stopped = compare_reports(report, baseline)
    assert {(e["reason"], e["detail"]) for e in stopped["incomplete"]
            if e["kind"] == "not evaluated"} == {("run stopped early", "interrupted")}
    assert stopped["removed_cases"] == []
    # A shard's catalogue holds the other shards' cases, which they evaluate: as before.
    report["run"]["stopped_early"] = None
    report["run"]["selection"]["keyword"] = ""
    report["run"]["shard"] = "1/2"
    shard = compare_reports(report, baseline)
    assert not [e for e in shard["incomplete"] if e["kind"] == "not evaluated"]
    assert len(shard["removed_cases"]) == len(unselected)


def test_a_run_whose_command_narrowed_the_models_or_cases_reads_the_rest_as_not_selected(
        report: dict[str, Any]) -> None:
    """`pytest --callqa-models=northwind-large` gated against a whole run's baseline passed:
    "no regression, 2 models removed". Its catalogue and models are the narrowed ones, so
    no list tells a deleted case from one left out: every case only the baseline has is not
    selected, unless the baseline was narrowed alike."""
    baseline = copy.deepcopy(report)
    others = {(c["model"], c["task"], c["case_id"]) for c in report["cases"]
              if c["model"] != MODEL}
    report["cases"] = [c for c in report["cases"] if c["model"] == MODEL]
    report["not_evaluated"] = [e for e in report["not_evaluated"] if e.get("model") == MODEL]
    report["models"] = models_section(scorecard_of(report))
    report["run"]["settings"]["models"] = [MODEL]
    report["run"]["selection"]["models_or_cases_narrowed"] = True
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["removed_models"] == [] and gate["removed_cases"] == []
    assert unevaluated(gate) == ({("not selected", "models or cases narrower than the ini "
                                                   "file's")}, others)
    # A baseline narrowed too, to other models: not alike (before: a pass, 1 model removed).
    baseline["run"]["selection"] = copy.deepcopy(report["run"]["selection"])
    baseline["run"]["settings"]["models"] = [MODEL, "northwind-mini"]
    assert compare_reports(report, baseline)["verdict"] == "incomplete"
    # Narrowed to the same models: a case only the baseline has was deleted.
    baseline["run"]["settings"]["models"] = [MODEL]
    alike = compare_reports(report, baseline)
    assert alike["verdict"] == "pass" and len(alike["removed_models"]) == 2


def test_a_run_flagged_narrowed_with_the_baselines_own_models_and_cases_narrowed_nothing(
        report: dict[str, Any]) -> None:
    """A run flagged narrowed whose models and cases are the baseline's (a report of a
    version that flagged every `-o` override, whatever it gave) made a whole run
    incomplete: a case only the baseline has was deleted."""
    baseline = copy.deepcopy(report)
    deleted = baseline["cases"][0]
    gone = left_out(report, lambda c: c["case_id"] != deleted["case_id"])
    report["run"]["catalogue_cases"].remove([deleted["task"], deleted["case_id"]])
    report["run"]["selection"]["models_or_cases_narrowed"] = True
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "pass"
    assert {(c["model"], c["task"], c["case_id"]) for c in gate["removed_cases"]} == gone
    # A case it left out is not selected, and its line names no narrowing of the models.
    left_out(report, lambda c: c["task"] != "text")
    assert unevaluated(compare_reports(report, baseline))[0] == {
        ("not selected", "no test of the run asked for them")}


def test_cases_outside_a_narrowed_cases_directory_are_not_evaluated_not_removed(
        report: dict[str, Any]) -> None:
    """`callqa_cases = "cases/qa"` in the ini file, where the baseline had "cases": the text
    cases still on disk read as removed, and the gate passed (exit 0) a run whose text
    answers had regressed. The run's catalogue is the narrowed directory's, which cannot tell
    a case left outside it from one deleted."""
    baseline = copy.deepcopy(report)
    outside = left_out(report, lambda c: c["task"] == "qa")
    report["run"]["settings"]["cases"] = "cases/qa"
    report["run"]["catalogue_cases"] = [c for c in report["run"]["catalogue_cases"]
                                        if c[0] == "qa"]
    gate = compare_reports(report, baseline, baseline_name="main.json")
    assert gate["verdict"] == "incomplete"
    assert gate["removed_cases"] == [] and gate["removed_models"] == []
    assert unevaluated(gate) == ({("another cases directory", "cases → cases/qa")}, outside)
    lines = "\n".join(gate_lines({**gate, "mode": "fail"}))
    first = lines.splitlines()[0]
    assert f"{len(outside)} cases not evaluated outside the run's cases directory" in first
    assert first.endswith("— another cases directory than the baseline's: not a pass, nor the "
                          "model's failure: the run exits 4 unless it failed")
    assert ("warning: main.json was run with the cases directory 'cases', this run with "
            "'cases/qa': a case only main.json has is not evaluated, not removed") in lines
    # Widened the other way, the cases only this run has were added to its suite.
    widened = compare_reports(baseline, report)
    assert len(widened["added_cases"]) == len(outside)

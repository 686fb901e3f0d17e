"""The baseline gate and a baseline that was itself a partial run — stopped early, narrowed
to part of the suite, one shard's report, or unable to read a case file: the cases only this
run has may be cases it never reached, so they are not evaluated (incomplete, exit 4, the
baseline's limitation), not added cases that pass without a comparison."""

from __future__ import annotations

import copy
from typing import Any

from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.gate_text import gate_lines
from pytest_callqa.run.junit import suite_properties
from pytest_callqa.run.markdown import render_markdown

from .conftest import left_out


def unevaluated(gate: dict[str, Any]) -> tuple[set[tuple[str, str | None]],
                                               set[tuple[str, str, str]]]:
    """The gate's cases not evaluated: their (reason, detail), and the cases of this run
    the baseline did not evaluate."""
    unrun = [e for e in gate["incomplete"] if e["kind"] == "not evaluated"]
    return ({(e["reason"], e.get("detail")) for e in unrun},
            {(e["model"], e["task"], c) for e in unrun for c in e["baseline"]})


def text(gate: dict[str, Any]) -> str:
    return "\n".join(gate_lines({**gate, "baseline": "main.json", "mode": "fail"}))


def test_cases_a_baseline_stopped_early_did_not_reach_are_not_evaluated_not_added(
        whole: dict[str, Any]) -> None:
    """Main's run stopped by -x, gated against a whole run whose answers regressed: "PASS —
    no regression … 14 cases added", markdown ✅, JUnit pass. The run's own stop was read;
    the baseline's never was."""
    report = whole
    baseline = copy.deepcopy(report)
    unreached = left_out(baseline, lambda c: c["task"] == "qa")
    baseline["run"]["stopped_early"] = "stopping after 1 failures"
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    assert gate["added_cases"] == [] and gate["added_models"] == []
    assert unevaluated(gate) == ({("baseline stopped early", "stopping after 1 failures")},
                                 unreached)
    lines = text(gate)
    first = lines.splitlines()[0]
    assert f"{len(unreached)} cases not evaluated in a baseline stopped early" in first
    assert first.endswith("— a baseline that stopped early: not a pass, nor the model's "
                          "failure: the run exits 4 unless it failed")
    assert "added" not in lines.replace("not as added", "")
    assert "cases only in this run (" in lines and "only in the baseline" not in lines
    assert ("not evaluated (baseline stopped early (stopping after 1 failures): each case "
            "only this run has counts here, not as added nor as a pass)") in lines
    shown = {**gate, "baseline": "main.json", "mode": "fail"}
    assert "a baseline that stopped early: not a pass, nor the model's failure" in \
        render_markdown(report, shown)
    props = dict(suite_properties(report, shown))
    assert props["callqa.verdict"] == "incomplete"
    assert props["callqa.gate_incomplete"] == (
        f"{len(unreached)} cases not evaluated in a baseline stopped early: a baseline that "
        "stopped early: not a pass, nor the model's failure")
    # Stopped early on both sides: each side's cases are named with its own cause.
    report["run"]["stopped_early"] = "interrupted"
    first_qa = next(c["case_id"] for c in report["cases"] if c["task"] == "qa")
    left_out(report, lambda c: c["case_id"] != first_qa)
    both = [e for e in compare_reports(report, baseline)["incomplete"]
            if e["kind"] == "not evaluated"]
    assert {(e["reason"], e["detail"], bool(e["run"]), bool(e["baseline"])) for e in both} == {
        ("run stopped early", "interrupted", True, False),
        ("baseline stopped early", "stopping after 1 failures", False, True)}
    assert {c for e in both for c in e["run"]} == {first_qa}


def test_cases_outside_a_narrowed_baselines_selection_are_not_evaluated_not_added(
        whole: dict[str, Any]) -> None:
    """A baseline run with -k "not text" passed a whole run: "10 cases added", the text
    answers' regressions unseen. Its catalogue tells the cases it did not select from cases
    added to the case files since."""
    report = whole
    baseline = copy.deepcopy(report)
    unselected = left_out(baseline, lambda c: c["task"] != "text")
    baseline["run"]["selection"]["keyword"] = "not text"
    new = sorted(unselected)[0]
    baseline["run"]["catalogue_cases"].remove(list(new[1:]))
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete"
    new_ids = {k for k in unselected if k[1:] == new[1:]}
    assert {(c["model"], c["task"], c["case_id"]) for c in gate["added_cases"]} == new_ids
    assert unevaluated(gate) == ({("not selected in the baseline", "-k 'not text'")},
                                 unselected - new_ids)
    assert text(gate).splitlines()[0].endswith(
        "— a baseline narrowed to part of the suite: not a pass, nor the model's failure: "
        "the run exits 4 unless it failed")
    # A baseline that lists no catalogue (made before the list) is read by its selection,
    # unless this run was asked for the same tests: a case only it has was then added.
    baseline["run"]["catalogue_cases"] = None
    assert unevaluated(compare_reports(report, baseline))[0] == {
        ("not selected in the baseline", "-k 'not text'")}
    report["run"]["selection"] = copy.deepcopy(baseline["run"]["selection"])
    alike = compare_reports(report, baseline)
    assert alike["verdict"] == "pass" and len(alike["added_cases"]) == len(unselected)


def test_a_baseline_of_one_shard_or_that_could_not_read_a_case_file_adds_no_case(
        whole: dict[str, Any]) -> None:
    """A single shard's report as the baseline passed a whole run with the other shards'
    cases "added"; so did a baseline that could not read a case file."""
    report = whole
    baseline = copy.deepcopy(report)
    unreached = left_out(baseline, lambda c: c["task"] == "qa")
    baseline["run"]["shard"] = "1/2"
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete" and gate["added_cases"] == []
    assert unevaluated(gate) == ({("baseline of one shard", "shard 1/2")}, unreached)
    assert "a baseline of one shard: not a pass" in text(gate)
    # The same shard of this run: a case only it has was added since.
    report["run"]["shard"] = "1/2"
    assert compare_reports(report, baseline)["verdict"] == "pass"
    del report["run"]["shard"], baseline["run"]["shard"]
    baseline["not_evaluated"].append({"kind": "invalid_case_file", "path": "cases/text/x.yaml",
                                      "problems": ["(file) cannot be parsed"]})
    unread = compare_reports(report, baseline)
    assert unevaluated(unread) == ({("invalid case files in the baseline",
                                     "cases/text/x.yaml")}, unreached)
    assert "not evaluated for the baseline's invalid case files" in text(unread)

"""The baseline gate on the example project's report: regressions need a drop beyond the
tolerance that the paired bootstrap finds significant; too few shared cases, added and
removed cases, new blockers and disqualifications, judge errors and bad input."""

from __future__ import annotations

import copy
import json
import tracemalloc
from typing import Any

import numpy as np
import pytest

from pytest_callqa.engine import stats
from pytest_callqa.run.gate import _Bootstrap, compare_reports, scale_factor
from pytest_callqa.run.gate_text import gate_lines
from pytest_callqa.run.html import render_html
from pytest_callqa.run.markdown import render_markdown

from .conftest import case_entries, refresh, spec_of, worsen

MODEL = "northwind-large"


def _statuses(gate: dict[str, Any], model: str, task: str) -> dict[str, str]:
    return {c["metric"]: c["status"] for c in gate["checks"]
            if c["model"] == model and c["task"] == task}


def test_an_unchanged_rerun_passes(report: dict[str, Any]) -> None:
    gate = compare_reports(report, copy.deepcopy(report))
    assert gate["verdict"] == "pass"
    assert gate["regressions"] == []
    statuses = {c["status"] for c in gate["checks"]}
    assert statuses <= {"unchanged", "too few cases"}
    compared = [c for c in gate["checks"] if c["status"] == "unchanged"]
    assert compared, "five-case tasks are compared"
    assert all(c["interval"] == [0.0, 0.0] and c["delta"] == 0 for c in compared)
    assert (gate["added_cases"], gate["removed_cases"]) == ([], [])
    assert gate["warnings"] == []
    json.dumps(gate, allow_nan=False)


def test_a_worse_model_regresses_with_intervals_and_the_cases_that_moved(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.6)
    gate = compare_reports(report, baseline, baseline_name="main.json")
    assert gate["verdict"] == "fail"
    regressed = {(r["model"], r["task"], r["metric"]) for r in gate["regressions"]}
    assert (MODEL, "qa", "score") in regressed
    assert (MODEL, "qa", "question_score_accuracy") in regressed
    assert {r[:2] for r in regressed} == {(MODEL, "qa")}
    for reg in gate["regressions"]:
        assert reg["kind"] == "metric"
        assert reg["new"] < reg["old"]
        lo, hi = reg["interval"]
        assert lo <= hi < 0
        assert reg["shared_cases"] == 5
        assert len(reg["moved_cases"]) == 3
        assert all(m["new"] < m["old"] for m in reg["moved_cases"])
    lines = gate_lines({**gate, "baseline": "main.json"})
    assert lines[0].startswith("callqa gate against main.json: FAIL")
    text = "\n".join(lines)
    assert "question_score_accuracy" in text and "95 % interval" in text and "→" in text
    assert lines.count("") == 0
    assert sum(line.startswith("  regression:") for line in lines) == len(regressed)


def test_the_same_worse_run_is_deterministic(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.6)
    assert compare_reports(report, baseline) == compare_reports(report, baseline)


def test_a_drop_within_the_tolerance_is_not_a_regression(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.99)
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "pass"
    check = next(c for c in gate["checks"]
                 if (c["model"], c["task"], c["metric"]) == (MODEL, "qa", "score"))
    assert check["significant"] and check["interval"][1] < 0
    assert check["status"] == "unchanged"
    # The team's own tolerance makes the same move a regression.
    strict = compare_reports(report, baseline, tolerances={"qa.score": 0.001})
    assert [(r["task"], r["metric"]) for r in strict["regressions"]] == [("qa", "score")]


def test_the_tolerance_a_report_records_for_a_metric_is_the_one_it_is_gated_with(
        report: dict[str, Any]) -> None:
    """A team's policy tolerance is written with the metric's definition (``metric_specs``),
    and the gate of that report uses it: a merge of shards, which has no policy of its own,
    gates as the run did."""
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.99)
    spec_of(report, "qa", "score_gap_accuracy")["regression_tolerance"] = 0.0
    spec_of(report, "qa", "question_score_accuracy")["regression_tolerance"] = 0.5
    gate = compare_reports(report, baseline)
    assert [(r["task"], r["metric"]) for r in gate["regressions"]] == [
        ("qa", "score_gap_accuracy")]
    tolerance = {c["metric"]: c["tolerance"] for c in gate["checks"]
                 if (c["model"], c["task"]) == (MODEL, "qa")}
    assert (tolerance["score_gap_accuracy"], tolerance["question_score_accuracy"],
            tolerance["score"]) == (0.0, 0.5, 0.02)
    # Given to the gate, a tolerance still comes first.
    given = compare_reports(report, baseline, tolerances={"score_gap_accuracy": 0.5})
    assert given["regressions"] == []


@pytest.mark.parametrize("start", [0.50, 0.80])
def test_a_drop_of_exactly_the_tolerance_is_not_a_regression(report: dict[str, Any],
                                                             start: float) -> None:
    # Every case 0.02 down: "more than its tolerance" it is not. From 0.50 the difference
    # came out -0.020000000000000018 and was a regression; from 0.80, -0.0199... and not.
    entries = case_entries(report, MODEL, "qa")
    for entry in entries:
        entry["score"], entry["valid"], entry["judge_errors"] = start, True, []
    refresh(report, MODEL, "qa")
    baseline = copy.deepcopy(report)
    for entry in entries:
        entry["score"] = start - 0.02
    refresh(report, MODEL, "qa")
    check = next(c for c in compare_reports(report, baseline)["checks"]
                 if (c["model"], c["task"], c["metric"]) == (MODEL, "qa", "score"))
    assert check["significant"] and check["shared_delta"] == pytest.approx(-0.02)
    assert check["status"] == "unchanged"


def test_a_large_drop_on_one_case_is_not_significant(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.3, cases=1)
    gate = compare_reports(report, baseline)
    check = next(c for c in gate["checks"]
                 if (c["model"], c["task"], c["metric"]) == (MODEL, "qa", "score"))
    assert check["delta"] < -0.1
    assert not check["significant"]
    assert gate["verdict"] == "pass"


def test_too_few_shared_cases_say_so_instead_of_guessing(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.3)
    worsen(report, MODEL, "agent", 0.3)
    gate = compare_reports(report, baseline, min_cases=6)
    assert gate["verdict"] == "pass"
    assert set(_statuses(gate, MODEL, "qa").values()) == {"too few cases"}
    agent = next(c for c in gate["checks"]
                 if (c["model"], c["task"], c["metric"]) == (MODEL, "agent", "score"))
    assert agent["status"] == "too few cases" and agent["interval"] is None
    assert "too few shared cases" in "\n".join(gate_lines(gate))


def _every_question_falsely_passed(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with every PASS_FAIL question of the model's QA cases falsely passed; the
    report before."""
    baseline = copy.deepcopy(report)
    for entry in case_entries(report, MODEL, "qa"):
        metric = entry["metrics"]["compliance_false_pass_rate"]
        metric["details"]["numerator"] = metric["details"]["denominator"]
        metric["value"] = 1.0
    refresh(report, MODEL, "qa")
    return baseline


def test_lower_is_better_pooled_rates_regress_when_they_rise(report: dict[str, Any]) -> None:
    baseline = _every_question_falsely_passed(report)
    gate = compare_reports(report, baseline)
    reg = next(r for r in gate["regressions"] if r["metric"] == "compliance_false_pass_rate")
    assert reg["new"] == 1.0 and reg["old"] < 0.1
    assert reg["interval"][0] > 0
    check = next(c for c in gate["checks"] if c["metric"] == "compliance_false_pass_rate"
                 and c["model"] == MODEL)
    assert check["pooled"] and not check["higher_is_better"]
    # The same move the other way is an improvement, not a regression.
    better = compare_reports(baseline, report)
    assert not [r for r in better["regressions"] if r["metric"] == "compliance_false_pass_rate"]
    assert _statuses(better, MODEL, "qa")["compliance_false_pass_rate"] == "improvement"


def test_cases_without_units_do_not_count_as_shared_evidence(report: dict[str, Any]) -> None:
    # Four cases with no PASS_FAIL question in either run (0 of 0) and one that moves from
    # 0 of 2 to 1 of 2: the gate called it a significant regression, interval [0.5, 0.5],
    # on one case's evidence.
    baseline = copy.deepcopy(report)
    for data, moved in ((baseline, 0), (report, 1)):
        entries = case_entries(data, MODEL, "qa")
        for i, entry in enumerate(entries):
            metric = entry["metrics"]["compliance_false_pass_rate"]
            metric["details"]["numerator"], metric["details"]["denominator"] = (
                (moved, 2) if i == 0 else (0, 0))
            metric["value"] = moved / 2 if i == 0 else 0.0
        refresh(data, MODEL, "qa")
    gate = compare_reports(report, baseline)
    check = next(c for c in gate["checks"] if c["metric"] == "compliance_false_pass_rate"
                 and c["model"] == MODEL)
    assert (check["status"], check["shared_cases"], check["interval"]) == (
        "too few cases", 1, None)
    assert not [r for r in gate["regressions"] if r["metric"] == "compliance_false_pass_rate"]


def test_tolerance_follows_the_metric_scale(report: dict[str, Any]) -> None:
    gate = compare_reports(report, report, min_cases=1)
    tolerance = {(c["task"], c["metric"]): c["tolerance"] for c in gate["checks"]}
    assert tolerance[("agent", "overall_score")] == pytest.approx(2.0)
    assert tolerance[("agent", "tool_routing")] == pytest.approx(0.1)
    assert tolerance[("qa", "score")] == pytest.approx(0.02)
    assert scale_factor("1-5") == 4 and scale_factor("1-5 → 0-1") == 1
    assert scale_factor("count") == 1 and scale_factor("0/1") == 1


def test_a_new_blocker_and_a_new_disqualification_always_regress(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    entry = case_entries(report, MODEL, "entity")[0]
    entry["blockers"] = ["config_adherence"]
    entry["blocked"] = True
    report["models"][MODEL]["tasks"]["entity"].update(blocked_cases=1, disqualified=True)
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "fail"
    kinds = {(r["kind"], r["metric"]) for r in gate["regressions"]}
    assert kinds == {("new blocker", "config_adherence"),
                     ("new disqualification", "disqualified")}
    blocker = next(r for r in gate["regressions"] if r["kind"] == "new blocker")
    assert [m["case_id"] for m in blocker["moved_cases"]] == [entry["case_id"]]
    text = "\n".join(gate_lines(gate))
    assert f"new blocker on {entry['case_id']}" in text
    assert "newly disqualified" in text


def test_added_and_removed_cases_and_models_are_listed(report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    gone = case_entries(report, MODEL, "qa")[0]
    # Deleted from the case files, and a model from the configuration, as a run records them.
    report["cases"].remove(gone)
    report["run"]["catalogue_cases"].remove(["qa", gone["case_id"]])
    added = copy.deepcopy(case_entries(report, MODEL, "entity")[0])
    added["case_id"] = "entity-new-case"
    report["cases"].append(added)
    report["run"]["catalogue_cases"].append(["entity", "entity-new-case"])
    del report["models"]["budget-7b"]
    report["run"]["settings"]["models"].remove("budget-7b")
    report["cases"] = [c for c in report["cases"] if c["model"] != "budget-7b"]
    gate = compare_reports(report, baseline)
    assert gate["removed_cases"] == [{"model": MODEL, "task": "qa",
                                      "case_id": gone["case_id"]}]
    assert gate["added_cases"] == [{"model": MODEL, "task": "entity",
                                    "case_id": "entity-new-case"}]
    assert gate["removed_models"] == ["budget-7b"] and gate["added_models"] == []
    assert gate["verdict"] == "pass"
    qa = next(c for c in gate["checks"] if (c["model"], c["task"], c["metric"])
              == (MODEL, "qa", "score"))
    assert qa["shared_cases"] == 4
    assert "1 case added, 1 case removed, 1 model removed" in "\n".join(gate_lines(gate))


def test_a_new_blocker_on_a_case_with_a_judge_error_still_regresses(
        report: dict[str, Any]) -> None:
    # The case was left out of the gate with its judge error, the blocker that fired on
    # another metric with it: the verdict was "pass".
    baseline = copy.deepcopy(report)
    entry = case_entries(report, MODEL, "entity")[0]
    entry.update(blockers=["config_adherence"], blocked=True,
                 judge_errors=["evidence_backed_reasoning"])
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "fail"
    assert [(r["kind"], r["metric"]) for r in gate["regressions"]] == [
        ("new blocker", "config_adherence")]


def test_cases_with_judge_errors_are_left_out_of_what_they_touch_and_named(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    entry = case_entries(report, MODEL, "qa")[0]
    entry.update(judge_errors=["evidence_backed_reasoning"], score=None)
    gate = compare_reports(report, baseline, min_cases=1)
    checks = {c["metric"]: c for c in gate["checks"] if (c["model"], c["task"]) == (MODEL, "qa")}
    assert checks["score"]["shared_cases"] == 4
    assert checks["score"]["judge_error_cases"] == 1
    assert checks["score"]["status"] == "incomplete"
    # A metric the judge did score on that case is compared on every case.
    assert checks["question_score_accuracy"]["shared_cases"] == 5
    assert checks["question_score_accuracy"]["status"] == "unchanged"
    assert gate["verdict"] == "incomplete"
    assert [(e["metric"], e["run"], e["baseline"]) for e in gate["incomplete"]] == [
        ("score", [entry["case_id"]], []),
        ("evidence_backed_reasoning", [entry["case_id"]], [])]


def test_another_version_or_metric_set_is_compared_on_what_is_shared(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    baseline["run"]["versions"]["pytest_callqa"] = "0.0.9"
    baseline["metric_specs"]["qa"] = [s for s in baseline["metric_specs"]["qa"]
                                      if s["id"] != "evidence_backed_reasoning"]
    for model in baseline["models"].values():
        model["tasks"]["qa"]["metrics"].pop("evidence_backed_reasoning")
    gate = compare_reports(report, baseline, baseline_name="old.json")
    assert gate["verdict"] == "pass"
    assert any("old.json has pytest_callqa '0.0.9'" in w for w in gate["warnings"])
    assert any(w.startswith("qa: another metric set than old.json")
               and "evidence_backed_reasoning" in w for w in gate["warnings"])
    assert "evidence_backed_reasoning" not in {c["metric"] for c in gate["checks"]}
    assert "question_score_accuracy" in {c["metric"] for c in gate["checks"]}


def test_a_metric_this_run_has_no_value_for_is_a_comparison_not_made(
        report: dict[str, Any]) -> None:
    """The baseline scored call intent on every text case; the new outputs leave the
    heuristic judge without an estimate (the text score holds, renormalised): a warning
    line, no check, and PASS — no regression."""
    model = "northwind-large"
    baseline = copy.deepcopy(report)
    entries = case_entries(report, model, "text")
    for entry in entries:
        entry["metrics"]["call_intent_match"].update(
            value=None, scored=False, rating=None,
            reason="not scored: the heuristic judge cannot estimate it")
    report["models"][model]["tasks"]["text"]["metrics"]["call_intent_match"]["value"] = None
    gate = compare_reports(report, baseline, baseline_name="main.json")
    assert gate["verdict"] == "incomplete" and gate["regressions"] == []
    [check] = [c for c in gate["checks"] if (c["model"], c["task"], c["metric"]) ==
               (model, "text", "call_intent_match")]
    assert check["status"] == "incomplete"
    [unmade] = [e for e in gate["incomplete"] if e["metric"] == "call_intent_match"]
    ids = sorted(e["case_id"] for e in entries)
    assert (unmade["reason"], unmade["run"], unmade["baseline"]) == (
        "metrics not scored", ids, [])
    assert gate_lines(gate)[0].startswith(
        "callqa gate: INCOMPLETE — no regression in what could be compared, but 1 comparison "
        f"could not be made for metrics not scored on {len(ids)} cases")
    # Some cases only: the same, naming them (it was "too few cases", or a pass).
    report = copy.deepcopy(baseline)
    lost = case_entries(report, model, "text")[:2]
    for entry in lost:
        entry["metrics"]["call_intent_match"].update(value=None, scored=False, rating=None)
    gate = compare_reports(report, baseline)
    [unmade] = [e for e in gate["incomplete"] if e["metric"] == "call_intent_match"]
    assert unmade["run"] == sorted(e["case_id"] for e in lost)
    # One that no longer applies to the new output misses nothing: no comparison left out.
    for entry in lost:
        entry["metrics"]["call_intent_match"]["reason"] = "n/a: nothing to compare"
    gate = compare_reports(report, baseline)
    assert not [e for e in gate["incomplete"] if e["metric"] == "call_intent_match"]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r.update(schema="callqa-report/0"), "main.json: key 'schema' is"),
    (lambda r: r.pop("cases"), "main.json: missing key 'cases'"),
    (lambda r: r.update(models=[]), "main.json: key 'models' should be an object, not an array"),
    (lambda r: r["cases"][3].pop("metrics"), "main.json: cases[3]: missing key 'metrics'"),
    (lambda r: r["cases"][0].update(model=None), "main.json: cases[0]: key 'model'"),
    (lambda r: r["models"]["budget-7b"]["tasks"]["qa"].pop("metrics"),
     "main.json: models.budget-7b.tasks.qa: missing key 'metrics'"),
    # Keys present with a type the gate cannot read: each ended a run after its last test
    # in a TypeError or AttributeError (or, for a string of blockers, counted each letter).
    (lambda r: r["cases"][0].update(score=[1]),
     "main.json: cases[0]: key 'score' should be a number or null, not an array"),
    (lambda r: r["cases"][0].update(score="x"),
     "main.json: cases[0]: key 'score' should be a number or null, not a string"),
    (lambda r: r["cases"][0].update(score=float("nan")),
     "main.json: cases[0]: key 'score' should be a number or null, not NaN"),
    # Before: math.isfinite raised OverflowError, a traceback after the last test.
    (lambda r: r["cases"][0].update(score=10 ** 400),
     "main.json: cases[0]: key 'score' should be a number or null, not a number too large "
     "for a float"),
    # Finite, but its sum with the other cases' overflowed: the run, and a merge, ended in
    # a ValueError writing the gate's infinite change.
    (lambda r: r["cases"][0]["metrics"]["question_score_accuracy"].update(value=1.7e308),
     "main.json: cases[0].metrics.question_score_accuracy: key 'value' should be a number "
     "or null, not a number beyond ±1e+15, which no measurement reaches"),
    (lambda r: r["cases"][0]["metrics"]["question_score_accuracy"].update(value="x"),
     "main.json: cases[0].metrics.question_score_accuracy: key 'value' should be a number "
     "or null, not a string"),
    (lambda r: r["cases"][0]["metrics"]["question_score_accuracy"].update(value=[0.5]),
     "main.json: cases[0].metrics.question_score_accuracy: key 'value' should be a number "
     "or null, not an array"),
    (lambda r: r["cases"][0]["metrics"].update(question_score_accuracy=0.5),
     "main.json: cases[0].metrics: key 'question_score_accuracy' should be an object or "
     "null, not a number"),
    (lambda r: r["cases"][0]["metrics"]["compliance_false_pass_rate"]["details"].update(
        numerator="x"),
     "main.json: cases[0].metrics.compliance_false_pass_rate.details: key 'numerator' should "
     "be a number, not a string"),
    (lambda r: r["cases"][0].update(blockers="question_score_accuracy"),
     "main.json: cases[0]: key 'blockers' should be an array or null, not a string"),
    (lambda r: r["cases"][0].update(valid="yes"),
     "main.json: cases[0]: key 'valid' should be true or false, not a string"),
    (lambda r: r["models"]["budget-7b"]["tasks"]["qa"]["metrics"].update(
        question_score_accuracy=5),
     "main.json: models.budget-7b.tasks.qa.metrics: key 'question_score_accuracy' should be "
     "an object or null, not a number"),
    (lambda r: r["models"]["budget-7b"]["tasks"]["qa"].update(score="0.9"),
     "main.json: models.budget-7b.tasks.qa: key 'score' should be a number or null, not a "
     "string"),
    (lambda r: r["models"]["budget-7b"]["tasks"]["qa"]["metrics"]["question_score_accuracy"]
     .update(value=True),
     "main.json: models.budget-7b.tasks.qa.metrics.question_score_accuracy: key 'value' "
     "should be a number or null, not a boolean"),
    (lambda r: r["metric_specs"].update(qa=5),
     "main.json: metric_specs: key 'qa' should be an array, not a number"),
    (lambda r: r["metric_specs"]["qa"][0].update(bands="x"),
     "main.json: metric_specs.qa[0]: key 'bands' should be an object or null, not a string"),
    (lambda r: r["metric_specs"]["qa"][0].update(scale=5),
     "main.json: metric_specs.qa[0]: key 'scale' should be a string or null, not a number"),
    (lambda r: r["metric_specs"]["qa"][0].update(id=["x"]),
     "main.json: metric_specs.qa[0]: key 'id' should be a string, not an array"),
    (lambda r: r["metric_specs"]["qa"][0].update(regression_tolerance=-1),
     "main.json: metric_specs.qa[0]: key 'regression_tolerance' should be a number >= 0 or "
     "null, not -1"),
    (lambda r: r["run"].update(versions=["x"]),
     "main.json: run: key 'versions' should be an object or null, not an array"),
    (lambda r: r["run"].update(judge="heuristic"),
     "main.json: run: key 'judge' should be an object or null, not a string"),
    (lambda r: r.update(run=[]), "main.json: key 'run' should be an object, not an array"),
    (lambda r: r["run"].update(catalogue_cases="qa-refund"),
     "main.json: run: key 'catalogue_cases' should be an array or null, not a string"),
    (lambda r: r["run"]["catalogue_cases"].insert(0, ["qa", 7]),
     "main.json: run.catalogue_cases[0] should be a task and a case id (two strings), not "
     "[a string, a number]"),
    (lambda r: r["run"]["catalogue_cases"].insert(0, "qa-refund"),
     "main.json: run.catalogue_cases[0] should be a task and a case id (two strings), not "
     "a string"),
])
def test_a_bad_baseline_names_the_file_and_key(report: dict[str, Any], edit: Any,
                                               message: str) -> None:
    baseline = copy.deepcopy(report)
    # The QA cases first: the edits of a case's metrics name QA metrics.
    baseline["cases"].sort(key=lambda case: case["task"] != "qa")
    edit(baseline)
    with pytest.raises(ValueError) as info:
        compare_reports(report, baseline, baseline_name="main.json")
    assert message in str(info.value)


def test_a_baseline_that_is_not_an_object_is_refused(report: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"main\.json: not a callqa report"):
        compare_reports(report, [], baseline_name="main.json")  # type: ignore[arg-type]


@pytest.mark.parametrize(("options", "message"), [
    ({"tolerance": -0.1}, "regression tolerance: -0.1"),
    ({"tolerance": float("nan")}, "regression tolerance: nan is not a number >= 0"),
    ({"tolerance": float("inf")}, "regression tolerance: inf is not a number >= 0"),
    ({"tolerances": {"qa.score": "high"}}, "regression tolerance for 'qa.score'"),
    ({"tolerances": {"qa.score": float("nan")}}, "regression tolerance for 'qa.score': nan"),
    ({"resamples": 100}, "resamples: 100 is below 1000"),
    ({"confidence": 95}, "confidence: 95 is not between 0 and 1"),
])
def test_bad_settings_are_refused(report: dict[str, Any], options: dict[str, Any],
                                  message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compare_reports(report, report, **options)


def test_the_gate_records_its_bootstrap_and_labels_the_interval_by_it(
        report: dict[str, Any]) -> None:
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "qa", 0.6)
    gate = compare_reports(report, baseline, confidence=0.9, resamples=1000, seed=7)
    assert gate["bootstrap"] == {"resamples": 1000, "seed": 7, "confidence": 0.9,
                                 "min_cases": 5}
    text = "\n".join(gate_lines(gate))
    assert "90 % interval" in text and "95 %" not in text


def test_the_paired_bootstrap_in_blocks_gives_the_intervals_of_one_whole_draw(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    old, new = rng.random(401), rng.random(401)
    pairs_old = np.column_stack([rng.integers(0, 5, 401), rng.integers(1, 5, 401)]).astype(float)
    pairs_new = np.column_stack([rng.integers(0, 5, 401), rng.integers(1, 5, 401)]).astype(float)
    # One draw of every resample at once: what the blocks must reproduce.
    whole = np.random.default_rng(20261123).integers(0, 401, size=(2000, 401))
    boot = _Bootstrap(2000, 20261123, 0.95)
    monkeypatch.setattr(stats, "_BLOCK", 401 * 7)  # blocks of 7 rows, the last one short
    assert boot.mean_diff(old.tolist(), new.tolist()) == boot._interval(
        (new - old)[whole].mean(axis=1))
    expected = (pairs_new[:, 0][whole].sum(axis=1) / pairs_new[:, 1][whole].sum(axis=1)
                - pairs_old[:, 0][whole].sum(axis=1) / pairs_old[:, 1][whole].sum(axis=1))
    assert boot.pooled_diff([tuple(p) for p in pairs_old.tolist()],
                            [tuple(p) for p in pairs_new.tolist()]) == boot._interval(expected)


def test_the_paired_bootstrap_of_many_cases_holds_no_whole_draw() -> None:
    values = np.random.default_rng(4).random(20_000).tolist()
    tracemalloc.start()
    try:
        assert _Bootstrap(2000, 20261123, 0.95).mean_diff(values, values[::-1]) is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20  # one whole draw of indices alone is 320 MB


def test_a_case_none_of_whose_metrics_could_be_scored_is_left_out_not_counted_zero(
        report: dict[str, Any]) -> None:
    # A task score with nothing scored (unknown, valid) counted 0 in the gate's case score:
    # a drop from the baseline's score that read as a regression of the model.
    baseline = copy.deepcopy(report)
    entry = case_entries(report, MODEL, "qa")[0]
    entry.update(score=None, valid=True)
    gate = compare_reports(report, baseline)
    assert gate["regressions"] == []
    assert _statuses(gate, MODEL, "qa")["score"] == "incomplete"
    [unmade] = [e for e in gate["incomplete"] if (e["task"], e["metric"]) == ("qa", "score")]
    assert (unmade["reason"], unmade["run"]) == ("metrics not scored", [entry["case_id"]])


def test_the_layer_2_criteria_are_gated_as_metrics_of_their_own(
        report: dict[str, Any]) -> None:
    # The gate compared tasks only: faithfulness and answer correctness at 0 on every case
    # (Benchmark Score 1.000 -> 0.500, Final Score A 1.000 -> 0.850) passed it, "no
    # regression" — a model that keeps its task scores but invents its reasons.
    baseline = copy.deepcopy(report)
    hit = ("faithfulness", "answer_correctness")
    for entry in report["cases"]:
        if entry["model"] == MODEL:
            for bid in hit:
                if (entry["metrics"].get(bid) or {}).get("value") is not None:
                    entry["metrics"][bid]["value"] = 0.0
    for bid in hit:
        report["models"][MODEL]["benchmarks"][bid]["value"] = 0.0
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "fail"
    found = {(r["task"], r["metric"]) for r in gate["regressions"] if r["model"] == MODEL}
    assert found == {("benchmarks", bid) for bid in hit}
    statuses = _statuses(gate, MODEL, "benchmarks")
    assert {statuses[bid] for bid in hit} == {"regression"}
    assert "consistency" not in statuses
    # Unchanged, every criterion is compared and passes.
    same = compare_reports(copy.deepcopy(baseline), baseline)
    assert same["verdict"] == "pass"
    compared = _statuses(same, MODEL, "benchmarks")
    scored = {bid for bid, b in baseline["models"][MODEL]["benchmarks"].items()
              if b["value"] is not None}
    assert set(compared) == scored - {"consistency"}
    assert set(compared.values()) <= {"unchanged", "too few cases"}
    assert any(gate_line.startswith(f"  regression: {MODEL} · benchmarks · faithfulness: ")
               for gate_line in gate_lines(gate))


def _benchmarks_off(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` as a run with ``--no-callqa-benchmarks`` writes it; the report before."""
    baseline = copy.deepcopy(report)
    ids = {bid for model in report["models"].values() for bid in model["benchmarks"]}
    for entry in report["cases"]:
        for bid in ids:
            entry["metrics"].pop(bid, None)
    for model in report["models"].values():
        model["benchmarks"] = {}
    report["run"]["benchmarks"] = False
    return baseline


def test_a_run_with_the_benchmarks_off_does_not_pass_a_baseline_that_scored_them(
        report: dict[str, Any]) -> None:
    # A faithfulness drop failed the gate; the same run with --no-callqa-benchmarks passed
    # it, "no regression", without a word: a pull request could pass by switching them off.
    for entry in report["cases"]:
        if (entry["metrics"].get("faithfulness") or {}).get("value") is not None:
            entry["metrics"]["faithfulness"]["value"] = 0.0
    baseline = _benchmarks_off(report)
    gate = compare_reports(report, baseline, baseline_name="main.json")
    assert gate["verdict"] == "incomplete" and gate["regressions"] == []
    for model, figures in baseline["models"].items():
        scored = {bid for bid, b in figures["benchmarks"].items()
                  if b["value"] is not None} - {"consistency"}
        unmade = [e for e in gate["incomplete"] if e["model"] == model]
        assert {e["metric"] for e in unmade} == scored
        assert {(e["kind"], e["task"], e["reason"]) for e in unmade} == {
            ("metric", "benchmarks", "benchmarks off")}
        faithful = next(e for e in unmade if e["metric"] == "faithfulness")
        assert faithful["run"] == sorted(
            c["case_id"] for c in baseline["cases"] if c["model"] == model
            and (c["metrics"].get("faithfulness") or {}).get("value") is not None)
    assert "main.json was run with the Layer 2 benchmarks, this run without them " \
        "(--no-callqa-benchmarks): those main.json scored are not compared" in gate["warnings"]
    gate.update(baseline="main.json", mode="fail")
    lines = gate_lines(gate)
    assert lines[0].startswith("callqa gate against main.json: INCOMPLETE")
    assert lines[0].endswith("Layer 2 benchmarks the baseline scored, off in this run: not a "
                             "pass, nor the model's failure: the run exits 4 unless it failed")
    assert f"  incomplete: {MODEL} · benchmarks · faithfulness: benchmarks off on " in \
        "\n".join(lines)
    assert "**Gate: ⚠️ incomplete**" in render_markdown(report, gate)


def test_benchmarks_off_with_too_few_cases_to_compare_them_is_a_warning(
        report: dict[str, Any]) -> None:
    # With too few shared cases the benchmarks could not have been compared anyway, as a
    # metric not scored now: nothing is missed, but the gate still names them.
    baseline = _benchmarks_off(report)
    gate = compare_reports(report, baseline, min_cases=10_000)
    assert gate["verdict"] == "pass" and gate["incomplete"] == []
    assert any(w.startswith(f"{MODEL}: Layer 2 benchmarks the baseline scored and this run "
                            "did not, not compared: faithfulness, ") for w in gate["warnings"])


def test_benchmarks_only_this_run_scored_or_only_the_baseline_are_named(
        report: dict[str, Any]) -> None:
    # Switched on now: nothing to compare them with, a pass that says so.
    current = copy.deepcopy(report)
    baseline = report
    _benchmarks_off(baseline)
    gate = compare_reports(current, baseline)
    assert gate["verdict"] == "pass"
    assert "baseline was run without the Layer 2 benchmarks, this run with them: they are " \
        "not compared" in gate["warnings"]
    # On in both, a criterion the baseline scored and this run has not (another version's
    # set) is named, and the rest compared.
    baseline, current = copy.deepcopy(current), current
    for model in current["models"].values():
        del model["benchmarks"]["exact_match"]
    gate = compare_reports(current, baseline)
    assert gate["verdict"] == "pass"
    assert f"{MODEL}: Layer 2 benchmarks the baseline scored and this run did not, not " \
        "compared: exact_match" in gate["warnings"]
    assert "faithfulness" in _statuses(gate, MODEL, "benchmarks")


def _disable_fabricated_entity_count(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` as a run whose policy disables the entity count; the report before."""
    baseline = copy.deepcopy(report)
    for spec in report["metric_specs"]["entity"]:
        if spec["id"] == "fabricated_entity_count":
            spec.update(bands=None, blocker=False, shown=False, threshold="disabled by policy")
    return baseline


def test_a_metric_the_policy_disabled_is_not_gated_and_the_gate_says_so(
        report: dict[str, Any]) -> None:
    # Disabled, a lower-is-better count lost its bands and so its direction: fabricated
    # entities going from 0 to 1.6 per case were an "improvement".
    baseline = _disable_fabricated_entity_count(report)
    for entry in case_entries(report, MODEL, "entity"):
        entry["metrics"]["fabricated_entity_count"]["value"] = 2.0
    report["models"][MODEL]["tasks"]["entity"]["metrics"]["fabricated_entity_count"][
        "value"] = 2.0
    gate = compare_reports(report, baseline)
    assert "fabricated_entity_count" not in _statuses(gate, MODEL, "entity")
    assert "not compared, disabled by the run's policy: entity.fabricated_entity_count" in \
        gate["warnings"]


def test_a_disabled_blocker_with_judge_errors_leaves_the_gate_complete(
        report: dict[str, Any]) -> None:
    # Disabled now but a blocker in the baseline, its judge errors made the "new blocker"
    # check unmade: the gate was INCOMPLETE (exit 4) over a metric it said it left out.
    baseline = _disable_fabricated_entity_count(report)
    for entry in case_entries(report, MODEL, "entity"):
        entry["metrics"]["fabricated_entity_count"].update(
            value=None, scored=False, judge_error=True, reason="judge error: timeout")
        entry["judge_errors"] = ["fabricated_entity_count"]
    gate = compare_reports(report, baseline)
    assert not [e for e in gate["incomplete"] if e["metric"] == "fabricated_entity_count"]
    assert gate["verdict"] == "pass"


def test_a_rates_change_is_shown_in_percentage_points_everywhere(
        report: dict[str, Any]) -> None:
    # The HTML cell showed "100.0%" with "Δ +1.000" under it, and the gate lines, the
    # markdown and the HTML's table gave the rate as a fraction (0.000 → 1.000): a rise read
    # as a tenth of a point. In the metric's units now, as the scorecard shows it.
    baseline = _every_question_falsely_passed(report)
    gate = compare_reports(report, baseline)
    reg = next(r for r in gate["regressions"] if r["metric"] == "compliance_false_pass_rate")
    assert reg["percent"] is True
    [line] = [g for g in gate_lines(gate) if "compliance_false_pass_rate" in g]
    assert f"{reg['old'] * 100:.1f}% → 100.0% (Δ +{reg['delta'] * 100:.1f} pts, 95 % interval [+" \
        in line and "] pts, " in line
    gate.update(baseline="main.json", mode="fail")
    markdown = render_markdown(report, gate)
    assert f"| {reg['old'] * 100:.1f}% → 100.0% | [+" in markdown
    html = render_html(report, gate)
    assert f"Δ +{reg['delta'] * 100:.1f} pts regression" in html
    # A metric on a 0-1 scale keeps its three decimals.
    score = next(c for c in gate["checks"] if (c["model"], c["task"], c["metric"]) ==
                 (MODEL, "qa", "score"))
    assert score["percent"] is False

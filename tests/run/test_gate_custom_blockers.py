"""The baseline gate on a project's custom blocker metric whose code raised: the scorecard
counts its verdict as undecided (it may or may not have fired), and so must the gate — the
comparison it affects is incomplete, never a pass and never a regression on its own.

The case entries and the scorecard figures come from the engine: each text case of the
example report is scored again with the custom metric registered, as a run would."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.core.results import TaskResult
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.loading import load_case_file
from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.tfidf import TfidfEmbedder
from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.gate_text import incomplete_line
from pytest_callqa.run.merge import scorecard_of
from pytest_callqa.run.summary import models_section

from .conftest import EXAMPLE, case_entries

MODEL = "northwind-large"
CUSTOM = MetricSpec(
    id="caller_verified", task="text", name="Caller Verified",
    description="1 when the summary says the caller's identity was checked.",
    scale="0/1", threshold="= 1", bands=Bands(good=1.0, blocker=0.5), blocker=True)

Compute = Callable[[GoldenCase, Any, TaskResult], float]


def _raises(case: GoldenCase, output: Any, result: TaskResult) -> float:
    raise KeyError("summary")


def _fires(case: GoldenCase, output: Any, result: TaskResult) -> float:
    return 0.0


def _passes(case: GoldenCase, output: Any, result: TaskResult) -> float:
    return 1.0


def scored_with_custom(report: dict[str, Any], computes: dict[str, Compute], *,
                       tolerance: int = 0) -> None:
    """Score MODEL's text cases again with CUSTOM registered — computed by ``computes`` for
    the case ids it names, passing on the others — and rebuild the report's scorecard
    figures (disqualifying over ``tolerance`` blocked cases), as a run would write them."""
    embedder = TfidfEmbedder()
    for entry in case_entries(report, MODEL, "text"):
        registry = default_registry().copy()
        registry.register_metric(CUSTOM, computes.get(entry["case_id"], _passes))
        [case] = load_case_file(Path(EXAMPLE, "cases", "text", f"{entry['case_id']}.yaml"))
        result = evaluate(case, entry["output"], embedder=embedder, model=MODEL,
                          registry=registry)
        entry.update(result.to_dict())
    report["metric_specs"]["text"].append(CUSTOM.describe())
    report["run"]["disqualify_tolerance"] = tolerance
    report["models"] = models_section(scorecard_of(report))


def pair(report: dict[str, Any], run: dict[str, Compute], baseline: dict[str, Compute], *,
         tolerance: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """This run's report and its baseline, CUSTOM computed in each as given."""
    then = copy.deepcopy(report)
    scored_with_custom(report, run, tolerance=tolerance)
    scored_with_custom(then, baseline, tolerance=tolerance)
    return report, then


def text_ids(report: dict[str, Any]) -> list[str]:
    return sorted(e["case_id"] for e in case_entries(report, MODEL, "text"))


def unmade(gate: dict[str, Any], kind: str) -> list[tuple[str, tuple[str, ...],
                                                          tuple[str, ...]]]:
    return [(e["reason"], tuple(e["run"]), tuple(e["baseline"])) for e in gate["incomplete"]
            if (e["model"], e["task"], e["kind"]) == (MODEL, "text", kind)]


def test_the_scorecard_counts_a_custom_blocker_whose_code_raised_as_undecided(
        report: dict[str, Any]) -> None:
    # What the gate is held to: the run's own scorecard, which the report records.
    raised = text_ids(report)[0]
    scored_with_custom(report, {raised: _raises}, tolerance=2)
    [entry] = [e for e in case_entries(report, MODEL, "text") if e["case_id"] == raised]
    metric = entry["metrics"][CUSTOM.id]
    assert (metric["judge_error"], metric["scored"]) == (False, False)
    assert metric["details"]["raised"] == "KeyError"
    assert metric["details"]["blocker_metric"] is True
    assert entry["judge_errors"] == [] and CUSTOM.id not in entry["blockers"]
    agg = report["models"][MODEL]["tasks"]["text"]
    assert (agg["blocker_unknown_cases"], agg["unknown_blockers"]) == (1, [CUSTOM.id])


def test_a_custom_blocker_whose_code_raised_in_this_run_is_incomplete_not_a_pass(
        report: dict[str, Any]) -> None:
    """The scorecard says one case's blocker is undecided (the tolerance of 2 keeps the
    disqualification decided): the gate read the blocker as not fired and said PASS."""
    raised = text_ids(report)[0]
    now, then = pair(report, {raised: _raises}, {}, tolerance=2)
    assert now["models"][MODEL]["tasks"]["text"]["disqualification_unknown"] is False
    gate = compare_reports(now, then)
    assert gate["verdict"] == "incomplete"
    assert gate["regressions"] == []
    assert unmade(gate, "new blocker") == [("metric code errors", (raised,), ())]
    assert unmade(gate, "new disqualification") == []
    entry = next(e for e in gate["incomplete"] if e["kind"] == "new blocker")
    assert incomplete_line(entry) == (
        f"{MODEL} · text · {CUSTOM.id} (new blocker check): metric code errors on 1 case "
        f"in this run ({raised})")


def test_an_undecided_custom_blocker_that_could_disqualify_names_its_case(
        report: dict[str, Any]) -> None:
    # With a tolerance of 0 the scorecard leaves the disqualification open; the gate said
    # so, but named no case and blamed the judge.
    raised = text_ids(report)[0]
    now, then = pair(report, {raised: _raises}, {})
    assert now["models"][MODEL]["tasks"]["text"]["disqualification_unknown"] is True
    gate = compare_reports(now, then)
    assert gate["verdict"] == "incomplete"
    assert unmade(gate, "new disqualification") == [("metric code errors", (raised,), ())]


def test_a_report_without_the_scorecard_field_is_open_on_an_undecided_custom_blocker(
        report: dict[str, Any]) -> None:
    # A report older than disqualification_unknown: the gate reads its cases instead.
    raised = text_ids(report)[0]
    now, then = pair(report, {raised: _raises}, {})
    del now["models"][MODEL]["tasks"]["text"]["disqualification_unknown"]
    gate = compare_reports(now, then)
    assert gate["verdict"] == "incomplete"
    assert unmade(gate, "new disqualification") == [("metric code errors", (raised,), ())]


def test_a_custom_blocker_whose_code_raised_in_the_baseline_is_no_new_blocker(
        report: dict[str, Any]) -> None:
    """Nobody knows whether the baseline's blocker fired on that case: its firing now failed
    the gate as "new blocker" and "newly disqualified"."""
    raised = text_ids(report)[0]
    now, then = pair(report, {raised: _fires}, {raised: _raises})
    assert now["models"][MODEL]["tasks"]["text"]["disqualified"] is True
    gate = compare_reports(now, then)
    assert gate["regressions"] == []
    assert gate["verdict"] == "incomplete"
    assert unmade(gate, "new blocker") == [("metric code errors", (), (raised,))]
    assert unmade(gate, "new disqualification") == [("metric code errors", (), (raised,))]


def test_a_custom_blocker_firing_on_a_case_the_baseline_decided_still_regresses(
        report: dict[str, Any]) -> None:
    raised, decided = text_ids(report)[:2]
    now, then = pair(report, {raised: _fires, decided: _fires}, {raised: _raises})
    gate = compare_reports(now, then)
    assert gate["verdict"] == "fail"
    new = [r for r in gate["regressions"] if r["kind"] == "new blocker"]
    assert [(r["metric"], [m["case_id"] for m in r["moved_cases"]]) for r in new] == [
        (CUSTOM.id, [decided])]
    assert unmade(gate, "new blocker") == [("metric code errors", (), (raised,))]


def test_a_blocker_undecided_for_both_causes_names_both(report: dict[str, Any]) -> None:
    # One case's custom blocker raised in this run; another's fired in this run, but in the
    # baseline it was a judge error (the custom metric read a value the judge left unknown).
    raised, judged = text_ids(report)[:2]
    now, then = pair(report, {raised: _raises, judged: _fires}, {})
    entry = next(e for e in case_entries(then, MODEL, "text") if e["case_id"] == judged)
    entry["metrics"][CUSTOM.id].update(
        value=None, scored=False, rating=None, judge_error=True,
        reason="judge error: the custom metric returned no value while the judge could not "
               "score summary_score",
        details={"blocker_metric": True, "threshold": CUSTOM.threshold})
    entry["judge_errors"] = [CUSTOM.id]
    then["models"] = models_section(scorecard_of(then))
    gate = compare_reports(now, then)
    assert gate["regressions"] == []
    assert gate["verdict"] == "incomplete"
    both = ("judge errors and metric code errors", (raised,), (judged,))
    assert unmade(gate, "new blocker") == unmade(gate, "new disqualification") == [both]


def test_the_verdict_line_counts_comparisons_a_raised_blocker_left_unmade() -> None:
    from pytest_callqa.run.gate_text import incomplete_summary

    gate = {"incomplete": [
        {"reason": "metric code errors", "model": "m", "task": "text", "run": ["c1"],
         "baseline": []},
        {"reason": "judge errors and metric code errors", "model": "m", "task": "qa",
         "run": ["c2"], "baseline": ["c2", "c3"]},
        {"reason": "judge errors", "model": "n", "task": "qa", "run": [], "baseline": ["c4"]}]}
    assert incomplete_summary(gate) == (
        "1 comparison could not be made for judge errors on 1 case; "
        "1 comparison could not be made for metric code errors on 1 case; "
        "1 comparison could not be made for judge errors and metric code errors on 2 cases")


def _no_value(case: GoldenCase, output: Any, result: TaskResult) -> float | None:
    return None


def test_a_blocker_left_without_an_estimate_is_incomplete_not_a_pass(
        report: dict[str, Any]) -> None:
    """A custom blocker that returns no value (or a policy blocker the heuristic judge cannot
    estimate) may have fired: the scorecard counted it as decided, and the gate passed."""
    unknown = text_ids(report)[0]
    now, then = pair(report, {unknown: _no_value}, {}, tolerance=2)
    [entry] = [e for e in case_entries(now, MODEL, "text") if e["case_id"] == unknown]
    metric = entry["metrics"][CUSTOM.id]
    assert (metric["scored"], metric["judge_error"]) == (False, False)
    assert metric["details"] == {"blocker_metric": True, "threshold": "= 1"}
    agg = now["models"][MODEL]["tasks"]["text"]
    assert (agg["blocker_unknown_cases"], agg["unknown_blockers"]) == (1, [CUSTOM.id])
    gate = compare_reports(now, then)
    assert gate["verdict"] == "incomplete" and gate["regressions"] == []
    assert unmade(gate, "new blocker") == [("metrics not estimated", (unknown,), ())]
    entry = next(e for e in gate["incomplete"] if e["kind"] == "new blocker")
    assert incomplete_line(entry) == (
        f"{MODEL} · text · {CUSTOM.id} (new blocker check): metrics not estimated on 1 case "
        f"in this run ({unknown})")

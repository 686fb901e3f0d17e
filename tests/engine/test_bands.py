"""Rating bands and blocker rules of seed 000, tested at their boundaries."""

from __future__ import annotations

import math

import pytest

from pytest_callqa.engine.core.metrics import (
    BAND_DIGITS,
    BAND_EDGES,
    CASE_BAR,
    Bands,
    beside_edges,
    rated_edges,
)
from pytest_callqa.engine.core.results import MetricResult
from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.tasks.benchmark_specs import BENCHMARK_SPECS

# (task, metric, value, expected rating) — each band edge and the value just past it.
CASES = [
    ("qa", "question_score_accuracy", 0.95, "good"),
    ("qa", "question_score_accuracy", 19 / 20, "good"),
    ("qa", "question_score_accuracy", 0.9499, "acceptable"),
    ("qa", "question_score_accuracy", 0.90, "acceptable"),
    ("qa", "question_score_accuracy", 0.8999, "fail"),
    ("qa", "score_gap_accuracy", 0.90, "good"),
    ("qa", "score_gap_accuracy", 0.80, "acceptable"),
    ("qa", "score_gap_accuracy", 0.7999, "fail"),
    ("qa", "evidence_backed_reasoning", 0.90, "good"),
    ("qa", "evidence_backed_reasoning", 0.80, "acceptable"),
    ("qa", "evidence_backed_reasoning", 0.7999, "fail"),
    ("qa", "compliance_false_pass_rate", 0.0, "good"),
    ("qa", "compliance_false_pass_rate", 0.01, "good"),
    ("qa", "compliance_false_pass_rate", 0.0101, "acceptable"),
    ("qa", "compliance_false_pass_rate", 0.03, "acceptable"),
    ("qa", "compliance_false_pass_rate", 0.0301, "blocker"),
    ("qa", "response_structure_compliance", 1.0, "good"),
    ("qa", "response_structure_compliance", 0.0, "blocker"),
    ("entity", "keyword_f1", 0.90, "good"),
    ("entity", "keyword_f1", 0.85, "acceptable"),
    ("entity", "keyword_f1", 0.8499, "fail"),
    ("entity", "keyword_precision", 0.85, "acceptable"),
    ("entity", "keyword_recall", 0.8499, "fail"),
    ("entity", "topic_f1", 0.88, "good"),
    ("entity", "topic_f1", 0.80, "acceptable"),
    ("entity", "topic_f1", 0.7999, "fail"),
    ("entity", "topic_precision", 0.88, "good"),
    ("entity", "topic_recall", 0.7999, "fail"),
    ("entity", "config_adherence", 1.0, "good"),
    ("entity", "config_adherence", 0.99, "acceptable"),
    ("entity", "config_adherence", 0.95, "acceptable"),
    ("entity", "config_adherence", 0.9499, "blocker"),
    ("entity", "fabricated_entity_count", 0, "good"),
    ("entity", "fabricated_entity_count", 1, "acceptable"),
    ("entity", "fabricated_entity_count", 2, "acceptable"),
    ("entity", "fabricated_entity_count", 3, "blocker"),
    ("entity", "cross_language_match_rate", 0.90, "good"),
    ("entity", "cross_language_match_rate", 0.8999, "fail"),
    ("text", "sentiment_accuracy", 0.88, "good"),
    ("text", "sentiment_accuracy", 0.875, "acceptable"),
    ("text", "sentiment_accuracy", 0.80, "acceptable"),
    ("text", "sentiment_accuracy", 0.7999, "fail"),
    ("text", "sentiment_macro_f1", 0.85, "good"),
    ("text", "sentiment_macro_f1", 0.75, "acceptable"),
    ("text", "sentiment_macro_f1", 0.29, "fail"),
    ("text", "missing_sentiment_labels", 0, "good"),
    ("text", "missing_sentiment_labels", 2, "acceptable"),
    ("text", "missing_sentiment_labels", 3, "blocker"),
    ("text", "call_intent_match", 1.0, "good"),
    ("text", "call_intent_match", 0.5, "acceptable"),
    ("text", "call_intent_match", 0.0, "blocker"),
    ("text", "highlight_recall", 0.85, "good"),
    ("text", "highlight_recall", 0.75, "acceptable"),
    ("text", "highlight_recall", 0.7499, "fail"),
    ("text", "highlight_correctness", 0.90, "good"),
    ("text", "highlight_correctness", 0.80, "acceptable"),
    ("text", "highlight_correctness", 2 / 3, "fail"),
    ("text", "required_field_presence", 0.90, "good"),
    ("text", "required_field_presence", 0.75, "acceptable"),
    ("text", "required_field_presence", 0.7499, "fail"),
    ("text", "fabrication_free_rate", 1.0, "good"),
    ("text", "fabrication_free_rate", 0.985, "acceptable"),
    ("text", "fabrication_free_rate", 0.98, "acceptable"),
    ("text", "fabrication_free_rate", 0.975, "fail"),
    ("text", "fabrication_free_rate", 0.97, "fail"),
    ("text", "fabrication_free_rate", 0.9699, "blocker"),
    ("text", "dominant_emotion_correctness", 1.0, "good"),
    ("text", "dominant_emotion_correctness", 0.0, "fail"),
    ("translation", "translation_completeness", 1.0, "good"),
    ("translation", "translation_completeness", 0.95, "acceptable"),
    ("translation", "translation_completeness", 55 / 60, "fail"),
    ("translation", "sentence_meaning_accuracy", 0.85, "good"),
    ("translation", "sentence_meaning_accuracy", 0.803, "acceptable"),
    ("translation", "sentence_meaning_accuracy", 0.7499, "fail"),
    ("translation", "target_fluency", 0.85, "good"),
    ("translation", "target_fluency", 0.70, "acceptable"),
    ("translation", "target_fluency", 0.25, "fail"),
    ("translation", "domain_term_preservation", 0.95, "good"),
    ("translation", "domain_term_preservation", 0.92, "acceptable"),
    ("translation", "domain_term_preservation", 0.90, "acceptable"),
    ("translation", "domain_term_preservation", 0.8999, "blocker"),
    ("translation", "proper_noun_preservation", 0.95, "good"),
    ("translation", "proper_noun_preservation", 0.90, "acceptable"),
    ("translation", "proper_noun_preservation", 0.8999, "fail"),
    ("translation", "critical_fact_preservation", 1.0, "good"),
    ("translation", "critical_fact_preservation", 0.98, "acceptable"),
    ("translation", "critical_fact_preservation", 0.97, "acceptable"),
    # SPEC 5.1: the seed's "Fail 0.90–0.97" band is superseded by its blocker rule.
    ("translation", "critical_fact_preservation", 0.95, "blocker"),
]


@pytest.mark.parametrize(("task", "metric", "value", "rating"), CASES)
def test_band(task: str, metric: str, value: float, rating: str) -> None:
    assert default_registry().metric(task, metric).rate(value) == rating


@pytest.mark.parametrize(("task", "metric", "value", "rating"), CASES)
def test_the_figure_shown_has_the_rating_shown(task: str, metric: str, value: float,
                                                rating: str) -> None:
    # Each value at or just past an edge, shown with the table's digits or more, reads back
    # with its own rating: 0.9499 was "0.950" rated acceptable under ">= 0.95".
    spec = default_registry().metric(task, metric)
    assert spec.bands is not None
    shown = beside_edges(value, spec.bands.edges, 1 if spec.percent else 3,
                         percent=spec.percent)
    read = float(shown.rstrip("%")) / (100 if spec.percent else 1)
    assert spec.rate(read) == rating, shown


@pytest.mark.parametrize(("value", "edges", "shown"), [
    (19 / 20, (0.95, 0.9), "0.950"),       # at the edge but for float arithmetic
    (0.9504, (0.95,), "0.9504"),           # not at it: not shown at it
    (0.91234, (0.95, 0.9), "0.912"),       # away from the edges: the usual digits
    (0.91234, (), "0.912"),
    (0.1, (0.1 - 1e-6,), "0.100"),         # past the edge a strict "< 0.1" is rated by
    (0.0996, (0.1 - 1e-6,), "0.0996"),
])
def test_a_figure_keeps_its_side_of_each_edge(value: float, edges: tuple[float, ...],
                                              shown: str) -> None:
    assert beside_edges(value, edges) == shown


BENCHMARK_EDGES = [
    ("faithfulness", 0.90, True), ("faithfulness", 0.8999, False),
    ("hallucination_rate", 0.02, True), ("hallucination_rate", 0.0201, False),
    ("answer_relevancy", 0.85, True), ("answer_relevancy", 0.8499, False),
    ("answer_correctness", 0.85, True), ("answer_correctness", 0.8499, False),
    ("contextual_precision", 0.85, True), ("contextual_recall", 0.8499, False),
    ("contextual_relevancy", 0.85, True), ("argument_correctness", 0.8499, False),
    ("instruction_following", 0.95, True), ("instruction_following", 0.9499, False),
    ("exact_match", 0.90, True), ("exact_match", 0.8999, False),
    ("consistency", 0.90, True), ("consistency", 0.8999, False),
]


@pytest.mark.parametrize(("metric", "value", "passed"), BENCHMARK_EDGES)
def test_benchmark_binarisation(metric: str, value: float, passed: bool) -> None:
    bands = BENCHMARK_SPECS[metric].bands
    assert bands is not None
    assert bands.passes(value) is passed


def test_weights_sum_to_one_per_level() -> None:
    registry = default_registry()
    for task in ("qa", "entity", "translation"):
        top = [s.weight for s in registry.metrics_for(task) if s.weight and s.parent is None]
        assert sum(top) == pytest.approx(1.0), task
    text = registry.metrics_for("text")
    for parent in (None, "sentiment_score", "summary_score", "emotion_score"):
        weights = [s.weight for s in text if s.weight and s.parent == parent]
        assert sum(weights) == pytest.approx(1.0), parent


def test_the_edges_that_rated_a_metric_are_its_definitions_and_those_recorded_on_it() -> None:
    assert rated_edges({}, (0.9, 0.8)) == (0.9, 0.8)
    # A policy's bands, or a case's own limit, recorded when they rated the value.
    assert rated_edges({BAND_EDGES: [0.97, 0.5]}, (0.9,)) == (0.9, 0.97, 0.5)
    # A case's own numeric bar.
    assert rated_edges({CASE_BAR: True, "threshold": 0.12}, (0.1,)) == (0.1, 0.12)
    # A list match's similarity threshold rated nothing: no edge (an extraction F1 of 0.8
    # was given more digits for it).
    assert rated_edges({"threshold": 0.8, "method": "jaccard"}, (0.9,)) == (0.9,)
    # What a hand-edited report may hold instead of numbers is left out, not a crash.
    assert rated_edges({BAND_EDGES: ["x", None, float("nan"), True, 0.5],
                        CASE_BAR: True, "threshold": ">= 0.9"}, ()) == (0.5,)
    assert rated_edges({BAND_EDGES: "0.9"}, ()) == ()


@pytest.mark.parametrize("bands", [
    Bands(good=0.95, acceptable=0.9, blocker=0.5),
    Bands(good=0.01, acceptable=0.03, blocker=0.1 - 1e-6, higher_is_better=False),
    Bands(good=1.0, blocker=1.0),
])
def test_a_value_is_rated_as_its_rounded_figure_near_an_edge_or_far_from_all(
        bands: Bands) -> None:
    # Only a value near an edge is rounded before comparing: anywhere else rounding to
    # BAND_DIGITS cannot move it across one. Rating the rounded figure (which is rounded
    # again, to itself) is what rounding every value gave.
    values = [0.0, 1.0, 0.5, 19 / 20, 1 / 3, 2 / 3, 0.0999999, 0.1, 1e-12, 1.5, -0.25,
              1e300, math.inf, -math.inf, math.nan]
    values += [edge + step for edge in bands.edges
               for step in (0.0, 4e-10, -4e-10, 6e-10, -6e-10, 1e-9, -1e-9, 9e-9, -9e-9,
                            1.1e-8, -1.1e-8, 1e-7, -1e-7)]
    for value in values:
        assert bands.rate(value) == bands.rate(round(value, BAND_DIGITS)), value


def test_a_value_that_is_no_float_is_rated_as_before() -> None:
    # A caller of the engine may pass a Decimal, or an int too large for a float: the
    # distance to an edge is a float's shortcut only, and they are rounded and compared as
    # they were (the shortcut first raised TypeError and OverflowError on them).
    from decimal import Decimal

    bands = Bands(good=0.95, acceptable=0.9, blocker=0.5)
    assert [bands.rate(Decimal("0.9499999999")), bands.rate(Decimal("0.4")),
            bands.rate(10**400), bands.rate(True)] == ["good", "blocker", "good", "good"]


def test_a_scored_result_holds_what_it_was_given() -> None:
    spec = BENCHMARK_SPECS["faithfulness"]
    details = {"a": 1}
    result = spec.result(0.25, "why", **details)
    assert (result.value, result.scored, result.rating, result.reason, result.details,
            result.blocker, result.flagged, result.judge_error) == (
        0.25, True, spec.rate(0.25), "why", {"a": 1}, spec.rate(0.25) == "blocker", False,
        False)
    assert result.details is not details
    blocked = default_registry().task("qa").spec("response_structure_compliance").result(0.0)
    assert (blocked.rating, blocked.blocker, blocked.reason) == ("blocker", True, None)


def test_an_unscored_result_holds_what_it_was_given() -> None:
    details = {"a": 1}
    for make, error in ((MetricResult.not_scored, False), (MetricResult.judge_failed, True)):
        result = make("why", **details)
        assert (result.value, result.scored, result.rating, result.reason, result.details,
                result.blocker, result.flagged, result.judge_error) == (
            None, False, None, "why", {"a": 1}, False, False, error)
        assert result.details is not details

"""Bad model outputs give an invalid result with a clear reason; they never raise."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from pytest_callqa.assertions import assert_metric, assert_no_blockers
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.context import parse_output
from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.core.results import (
    EvaluationUnavailable,
    MetricCodeError,
    MetricResult,
    TaskResult,
)
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.registry import default_registry

from .helpers import TFIDF, FixedJudge, asked, make_case, question

QA_EXPECTED = {"questions": [question("Q1", 5, qtype="PASS_FAIL"), question("Q2", 3)]}
GOOD_QA = copy.deepcopy(QA_EXPECTED)


def _qa(output: Any) -> Any:
    return evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)), output, embedder=TFIDF)


def _renamed() -> dict[str, Any]:
    out = copy.deepcopy(GOOD_QA)
    out["questions"][0]["reasoning"] = out["questions"][0].pop("reason")
    return out


def _extra() -> dict[str, Any]:
    out = copy.deepcopy(GOOD_QA)
    out["questions"][1]["confidence"] = 0.9
    return out


def _missing() -> dict[str, Any]:
    out = copy.deepcopy(GOOD_QA)
    del out["questions"][0]["max_score"]
    return out


def _with(field: str, value: Any, index: int = 1) -> dict[str, Any]:
    out = copy.deepcopy(GOOD_QA)
    out["questions"][index][field] = value
    return out


BAD_OUTPUTS = [
    ("Sure! Here is my analysis: the agent did well.", "not valid JSON"),
    ("", "output is empty"),
    ("[1, 2, 3]", "must be a JSON object"),
    (None, "neither JSON text nor an object"),
    (42, "neither JSON text nor an object"),
    (b"\xff\xfe", "not UTF-8"),
    ('{"questions": [', "not valid JSON"),
    (_renamed(), "questions[0].reasoning"),
    (_extra(), "questions[1].confidence"),
    (_missing(), "questions[0].max_score"),
    (_with("score", "3"), "questions[1].score"),
    (_with("score", True), "questions[1].score"),
    (_with("score", float("nan")), "questions[1].score"),
    ('{"questions": [{"question_id": "Q1", "score": NaN, "max_score": 5, "type": "SCORE", '
     '"reason": "x"}]}', "questions[0].score"),
    (_with("type", "BINARY"), "questions[1].type"),
    (_with("question_id", "Q99"), "unknown question_id 'Q99'"),
    (_with("question_id", "Q1"), "duplicate question_id: Q1"),
    ({"questions": "all good"}, "questions"),
    ({}, "questions"),
]


@pytest.mark.parametrize(("output", "needle"), BAD_OUTPUTS)
def test_bad_qa_output_is_invalid_not_an_exception(output: Any, needle: str) -> None:
    result = _qa(output)
    structure = result.metrics["response_structure_compliance"]
    assert structure.value == 0.0
    assert structure.rating == "blocker"
    assert needle in (structure.reason or "")
    assert result.valid is False
    assert result.score is None
    assert result.blocked and result.blockers == ["response_structure_compliance"]
    assert all(not m.scored for k, m in result.metrics.items()
               if k != "response_structure_compliance")


# SPEC 5.1: a score outside 0..max_score is a wrong answer, not a structure error. The
# scorecard's Q1 is a compliance question (expected 0 of 2), Q2 a SCORE question (3 of 5).
RANGE_EXPECTED = {"questions": [question("Q1", 0, max_score=2, qtype="PASS_FAIL"),
                                question("Q2", 3)]}


def _range(q1: float, q2: float) -> Any:
    output = copy.deepcopy(RANGE_EXPECTED)
    output["questions"][0]["score"] = q1
    output["questions"][1]["score"] = q2
    case = make_case("qa", RANGE_EXPECTED, config=asked(RANGE_EXPECTED))
    return evaluate(case, output, embedder=TFIDF)


def test_score_above_max_score_is_a_wrong_answer_with_valid_structure() -> None:
    result = _range(5, 3)
    assert result.metrics["response_structure_compliance"].value == 1.0
    accuracy = result.metrics["question_score_accuracy"]
    assert accuracy.value == 0.5
    assert accuracy.details["out_of_range"] == ["Q1"]
    assert "score outside 0..max_score: Q1" in (accuracy.reason or "")
    q1 = accuracy.details["questions"][0]
    assert (q1["correct"], q1["normalized_gap"]) == (False, 1.0)  # |5 - 0| / 2 clipped to 1
    assert result.metrics["score_gap_accuracy"].value == 0.5
    # Claiming more than full marks on a failed compliance question is a false pass.
    assert result.metrics["compliance_false_pass_rate"].value == 1.0
    assert result.score is not None


def _one_score_question(expected_score: float, model_score: float) -> Any:
    expected = {"questions": [question("Q1", expected_score, max_score=5)]}
    output = copy.deepcopy(expected)
    output["questions"][0]["score"] = model_score
    return evaluate(make_case("qa", expected, config=asked(expected)), output, embedder=TFIDF)


def test_negative_score_is_wrong_although_within_the_tolerance() -> None:
    result = _one_score_question(0, -0.2)  # within ±0.5 of 0, but below 0
    assert result.metrics["response_structure_compliance"].value == 1.0
    assert result.metrics["question_score_accuracy"].value == 0.0
    assert result.metrics["question_score_accuracy"].details["out_of_range"] == ["Q1"]
    assert result.metrics["score_gap_accuracy"].value == pytest.approx(1 - 0.2 / 5)


def test_score_just_above_max_score_is_wrong_although_within_the_tolerance() -> None:
    result = _one_score_question(5, 5.3)  # within ±0.5 of 5, but above max_score
    assert result.metrics["response_structure_compliance"].value == 1.0
    assert result.metrics["question_score_accuracy"].value == 0.0
    assert result.metrics["score_gap_accuracy"].value == pytest.approx(1 - 0.3 / 5)


def test_in_range_score_within_the_tolerance_stays_correct() -> None:
    result = _one_score_question(5, 4.6)
    assert result.metrics["question_score_accuracy"].value == 1.0
    assert result.metrics["question_score_accuracy"].details["out_of_range"] == []


def test_fenced_json_is_accepted_and_noted() -> None:
    import json

    result = _qa("```json\n" + json.dumps(GOOD_QA) + "\n```")
    assert result.metrics["response_structure_compliance"].value == 1.0
    assert any("code fence" in note for note in result.notes)


def test_parse_output_reports_position() -> None:
    value, problem, _ = parse_output('{"a": 1,}')
    assert value is None
    assert problem is not None and "at char" in problem


@pytest.mark.parametrize(("text", "reason"), [
    ("[" * 100_000 + "]" * 100_000, "it is nested deeper than Python reads"),
    ('{"questions": ' + "7" * 5000 + "}", "Exceeds the limit (4300 digits)"),
])
def test_json_past_pythons_limits_is_an_invalid_output_not_an_exception(
        text: str, reason: str) -> None:
    value, problem, _ = parse_output(text)
    assert value is None and problem is not None
    assert problem.startswith("output cannot be read as JSON (") and reason in problem
    result = _qa(text)
    assert not result.valid
    assert result.metrics["response_structure_compliance"].value == 0.0


def test_empty_question_list_is_valid_but_scores_every_question_missing() -> None:
    result = _qa({"questions": []})
    assert result.metrics["response_structure_compliance"].value == 1.0
    assert result.metrics["question_score_accuracy"].value == 0.0
    assert result.metrics["question_score_accuracy"].details["missing"] == ["Q1", "Q2"]
    assert result.metrics["score_gap_accuracy"].value == 0.0


def test_entity_nothing_detected_nothing_expected_is_perfect() -> None:
    case = make_case("entity", {"detected_keywords": [], "detected_topics": [],
                                "valid_entity_set": []}, config={"keywords": ["refund"]})
    result = evaluate(case, {"detected_keywords": [], "detected_topics": [],
                             "valid_entity_set": []}, embedder=TFIDF)
    for metric in ("keyword_precision", "keyword_recall", "keyword_f1", "topic_f1",
                   "config_adherence"):
        assert result.metrics[metric].value == 1.0, metric
    assert result.score == pytest.approx(1.0)


def test_entity_nothing_detected_but_expected_scores_zero() -> None:
    case = make_case("entity", {"detected_keywords": ["refund"], "detected_topics": [],
                                "valid_entity_set": ["refund"]},
                     config={"keywords": ["refund"]}, transcript="customer: refund please")
    result = evaluate(case, {"detected_keywords": [], "detected_topics": [],
                             "valid_entity_set": []}, embedder=TFIDF)
    assert result.metrics["keyword_precision"].value == 0.0
    assert result.metrics["keyword_recall"].value == 0.0
    assert result.metrics["config_adherence"].value == 1.0


def test_entity_names_are_normalised() -> None:
    case = make_case("entity", {"detected_keywords": ["Refund Request"],
                                "detected_topics": ["account_management"],
                                "valid_entity_set": []},
                     config={"keywords": ["refund request"], "topics": ["Account-Management"]})
    result = evaluate(case, {"detected_keywords": ["REFUND_request", "refund-request"],
                             "detected_topics": ["account  management"],
                             "valid_entity_set": []}, embedder=TFIDF)
    assert result.metrics["keyword_f1"].value == 1.0
    assert result.metrics["topic_f1"].value == 1.0
    assert result.metrics["config_adherence"].value == 1.0


def test_entity_three_fabricated_voids_the_score() -> None:
    case = make_case("entity", {"detected_keywords": ["refund"], "detected_topics": [],
                                "valid_entity_set": ["refund"]},
                     config={"keywords": ["refund", "loan", "insurance", "mortgage"]},
                     transcript="customer: I want a refund")
    result = evaluate(case, {"detected_keywords": ["refund", "loan", "insurance", "mortgage"],
                             "detected_topics": [], "valid_entity_set": []}, embedder=TFIDF)
    assert result.metrics["fabricated_entity_count"].value == 3
    assert not result.valid and result.score is None
    assert "fabricated_entity_count" in result.blockers
    assert any("would have been" in n for n in result.notes)


def test_cross_language_match_rate() -> None:
    case = make_case("entity", {"detected_keywords": ["fever", "cough"], "detected_topics": [],
                                "valid_entity_set": []},
                     config={"keywords": ["fever", "cough"], "entity_language": "en",
                             "entity_mentions": {"fever": {"text": "fiebre", "lang": "es"},
                                                 "cough": "खांसी"}},
                     transcript="patient: tengo fiebre y खांसी")
    result = evaluate(case, {"detected_keywords": ["fever"], "detected_topics": [],
                             "valid_entity_set": []}, embedder=TFIDF)
    cross = result.metrics["cross_language_match_rate"]
    assert cross.value == pytest.approx(0.5)
    assert sorted(cross.details["cross_language"]) == ["cough", "fever"]


def test_cross_language_is_not_applicable_without_foreign_mentions() -> None:
    case = make_case("entity", {"detected_keywords": ["refund"], "detected_topics": [],
                                "valid_entity_set": []}, config={"keywords": ["refund"]})
    result = evaluate(case, {"detected_keywords": ["refund"], "detected_topics": [],
                             "valid_entity_set": []}, embedder=TFIDF)
    assert not result.metrics["cross_language_match_rate"].scored


TEXT_EXPECTED = {
    "sentiment": [{"sentence_id": i, "text": f"s{i}", "label": "neutral"} for i in range(1, 6)],
    "summary": {"call_purpose": "Customer requesting refund for duplicate charge",
                "highlights": ["Agent confirmed duplicate charge", "Refund initiated for $49"],
                "call_extracted_info": {"customer_name": "Priya Sharma", "follow_up": "3 days"}},
    "emotion": {"anger": 60, "neutral": 30},
}
TEXT_TRANSCRIPT = ("customer: Hi, this is Priya Sharma, I was charged twice.\n"
                   "agent: I confirmed the duplicate charge and initiated a refund of $49.\n"
                   "agent: You will see it in 3 days.")


def _text(output: dict[str, Any], judge: Any = None) -> Any:
    case = make_case("text", TEXT_EXPECTED, transcript=TEXT_TRANSCRIPT)
    return evaluate(case, output, embedder=TFIDF, judge=judge)


def test_text_three_missing_labels_void_the_score() -> None:
    out = copy.deepcopy(TEXT_EXPECTED)
    for item in out["sentiment"][:3]:
        item["label"] = None
    result = _text(out)
    assert result.metrics["missing_sentiment_labels"].value == 3
    assert not result.valid and "missing_sentiment_labels" in result.blockers


def test_text_two_missing_labels_warn_only() -> None:
    out = copy.deepcopy(TEXT_EXPECTED)
    out["sentiment"] = out["sentiment"][2:]
    result = _text(out)
    assert result.metrics["missing_sentiment_labels"].value == 2
    assert result.metrics["missing_sentiment_labels"].rating == "acceptable"
    assert result.valid


def test_text_wrong_intent_voids_the_score() -> None:
    result = _text(copy.deepcopy(TEXT_EXPECTED), judge=FixedJudge({"call_intent_match": 0.0}))
    assert not result.valid and "call_intent_match" in result.blockers


def test_text_fabricated_amount_in_highlight_is_caught_offline() -> None:
    out = copy.deepcopy(TEXT_EXPECTED)
    out["summary"]["highlights"] = ["Agent confirmed duplicate charge", "Refund of $99"]
    result = _text(out)
    correctness = result.metrics["highlight_correctness"]
    assert correctness.value == pytest.approx(0.5)
    assert "$99" in (correctness.reason or "")
    fabrication = result.metrics["fabrication_free_rate"]
    assert fabrication.rating == "blocker"
    assert not result.valid


def test_text_unknown_sentence_id_is_a_structure_failure() -> None:
    out = copy.deepcopy(TEXT_EXPECTED)
    out["sentiment"].append({"sentence_id": 99, "text": "x", "label": "neutral"})
    result = _text(out)
    assert result.metrics["response_structure_compliance"].value == 0
    assert "99" in (result.metrics["response_structure_compliance"].reason or "")


def test_text_free_form_maps_must_be_objects() -> None:
    out = copy.deepcopy(TEXT_EXPECTED)
    out["emotion"] = ["anger"]
    assert _text(out).metrics["response_structure_compliance"].value == 0
    out = copy.deepcopy(TEXT_EXPECTED)
    out["summary"]["call_extracted_info"] = "Priya"
    assert _text(out).metrics["response_structure_compliance"].value == 0


def test_text_emotion_tie_in_expected_accepts_either() -> None:
    expected = copy.deepcopy(TEXT_EXPECTED)
    expected["emotion"] = {"anger": 40, "sadness": 40, "neutral": 20}
    case = make_case("text", expected, transcript=TEXT_TRANSCRIPT)
    out = copy.deepcopy(expected)
    out["emotion"] = {"sadness": 70, "neutral": 30}
    result = evaluate(case, out, embedder=TFIDF)
    assert result.metrics["dominant_emotion_correctness"].value == 1.0
    out["emotion"] = {"neutral": 70, "anger": 30}
    assert evaluate(case, out, embedder=TFIDF).metrics["dominant_emotion_correctness"].value == 0


def test_text_emotions_all_0_in_expected_have_no_dominant_one() -> None:
    # Every emotion tied at 0 made each "dominant": a model's anger 90 was correct (1.0).
    expected = copy.deepcopy(TEXT_EXPECTED)
    expected["emotion"] = {"anger": 0, "neutral": 0, "joy": 0}
    case = make_case("text", expected, transcript=TEXT_TRANSCRIPT)
    out = copy.deepcopy(expected)
    out["emotion"] = {"anger": 90, "neutral": 0, "joy": 0}
    metric = evaluate(case, out, embedder=TFIDF).metrics["dominant_emotion_correctness"]
    assert not metric.scored and metric.value is None
    assert metric.reason == ("n/a: expected_outcome gives every emotion 0, so no emotion is "
                             "dominant")
    # A model that feels nothing names no dominant emotion: it does not tie with anger.
    expected["emotion"] = {"anger": 60, "neutral": 40}
    out["emotion"] = {"anger": 0, "neutral": 0}
    metric = evaluate(make_case("text", expected, transcript=TEXT_TRANSCRIPT), out,
                      embedder=TFIDF).metrics["dominant_emotion_correctness"]
    assert (metric.value, metric.reason) == (0.0, "model top none vs expected top ['anger']")


def test_emotions_all_0_in_expected_leave_the_dominant_emotion_out_of_exact_match() -> None:
    # As dominant_emotion_correctness: all labels tied at 0 were compared as the dominant
    # emotion, a free match for the same zeros (1.0) and a miss for anything else (0.5).
    expected = copy.deepcopy(TEXT_EXPECTED)
    expected["emotion"] = {"anger": 0, "neutral": 0, "joy": 0}
    case = make_case("text", expected, transcript=TEXT_TRANSCRIPT)
    labelled = sum(1 for s in expected["sentiment"] if s["label"] is not None)
    out = copy.deepcopy(expected)
    for emotion in ({"anger": 0, "neutral": 0, "joy": 0}, {"anger": 90, "neutral": 10}):
        out["emotion"] = emotion
        metric = evaluate(case, out, embedder=TFIDF).metrics["exact_match"]
        assert (metric.value, metric.reason) == (
            1.0, f"{labelled} of {labelled} closed-form fields match exactly"), emotion


def test_text_highlight_recall_matches_only_above_the_threshold() -> None:
    # Seed 002 and SPEC 5.4 match pairs strictly above 0.4: 2 shared of 5 words (0.4)
    # counted as capturing "Agent confirmed duplicate charge".
    out = copy.deepcopy(TEXT_EXPECTED)
    out["summary"]["highlights"] = ["Agent confirmed refund", "Refund initiated for $49"]
    metric = _text(out).metrics["highlight_recall"]
    assert (metric.value, metric.details["missed"]) == (0.5, ["Agent confirmed duplicate charge"])
    out["summary"]["highlights"][0] = "Agent confirmed duplicate"
    assert _text(out).metrics["highlight_recall"].value == 1.0


def test_text_not_scored_metric_renormalises_and_says_so() -> None:
    result = _text(copy.deepcopy(TEXT_EXPECTED), judge=FixedJudge({
        "call_intent_match": 1.0, "highlight_correctness": None,
        "fabrication_free_rate": 1.0}))
    assert not result.metrics["highlight_correctness"].scored
    assert result.renormalised
    assert "highlight_correctness" in result.not_scored
    assert any("renormalised" in n for n in result.notes)
    assert result.score == pytest.approx(1.0)


TRANSLATION_EXPECTED = {
    "full_translation": "KYC पूरा हुआ। प्रिया शर्मा को ₹49 वापस मिलेंगे।",
    "sentence_translations": [
        {"source_id": 1, "source_text": "KYC is complete.", "translated_text": "KYC पूरा हुआ।"},
        {"source_id": 2, "source_text": "Priya Sharma gets ₹49 back.",
         "translated_text": "प्रिया शर्मा को ₹49 वापस मिलेंगे।"},
    ],
    "domain_terms_handled": [{"term": "KYC", "handled_as": "KYC"}],
    "named_entities_handled": [{"entity": "Priya Sharma", "handled_as": "प्रिया शर्मा"}],
}


def _translation(output: dict[str, Any]) -> Any:
    case = make_case("translation", TRANSLATION_EXPECTED, config={"target_language": "hi"})
    return evaluate(case, output, embedder=TFIDF)


def test_translation_domain_term_translated_is_a_voiding_blocker() -> None:
    out = copy.deepcopy(TRANSLATION_EXPECTED)
    out["domain_terms_handled"] = [{"term": "KYC", "handled_as": "ग्राहक सत्यापन"}]
    result = _translation(out)
    assert result.metrics["domain_term_preservation"].value == 0.0
    assert not result.valid and "domain_term_preservation" in result.blockers


@pytest.mark.parametrize(("given", "preserved"), [
    ("KYC-AML", 1.0), ("  kyc-aml ", 1.0),  # case and whitespace normalised away (SPEC 5.1)
    ("KYC_AML", 0.0), ("KYC AML", 0.0),     # a dash is not an underscore or a space
])
def test_translation_domain_terms_are_compared_after_nfkc_casefold_and_whitespace_only(
        given: str, preserved: float) -> None:
    # Dashes and underscores were read as spaces (the entity task's rule, not SPEC's for
    # translation): "KYC_AML" passed for an expected "KYC-AML".
    expected = copy.deepcopy(TRANSLATION_EXPECTED)
    expected["domain_terms_handled"] = [{"term": "KYC-AML", "handled_as": "KYC-AML"}]
    out = copy.deepcopy(expected)
    out["domain_terms_handled"] = [{"term": "KYC-AML", "handled_as": given}]
    case = make_case("translation", expected, config={"target_language": "hi"})
    metric = evaluate(case, out, embedder=TFIDF).metrics["domain_term_preservation"]
    assert metric.value == preserved


def test_a_critical_fact_added_where_none_is_expected_drifts() -> None:
    # The seed's drift, added or omitted facts over the expected ones: an amount invented
    # where the expected translation has no fact went unscored, so it voided the score only
    # beside some unrelated fact elsewhere in the case.
    expected = {
        "full_translation": "रिफंड स्वीकृत। धन्यवाद।",
        "sentence_translations": [
            {"source_id": 1, "source_text": "Refund approved.", "translated_text": "रिफंड स्वीकृत।"},
            {"source_id": 2, "source_text": "Thank you.", "translated_text": "धन्यवाद।"},
        ],
        "domain_terms_handled": [], "named_entities_handled": [],
    }
    case = make_case("translation", expected, config={"target_language": "hi"})
    plain = evaluate(case, copy.deepcopy(expected), embedder=TFIDF)
    assert not plain.metrics["critical_fact_preservation"].scored
    added = copy.deepcopy(expected)
    added["sentence_translations"][1]["translated_text"] = "धन्यवाद, ₹500 वापस।"
    result = evaluate(case, added, embedder=TFIDF)
    metric = result.metrics["critical_fact_preservation"]
    assert metric.value == 0.0 and "where the expected translation has none" in (metric.reason
                                                                                  or "")
    assert not result.valid and "critical_fact_preservation" in result.blockers


def test_translation_dropped_surname_is_not_preserved() -> None:
    out = copy.deepcopy(TRANSLATION_EXPECTED)
    out["named_entities_handled"] = [{"entity": "Priya Sharma", "handled_as": "प्रिया"}]
    assert _translation(out).metrics["proper_noun_preservation"].value == 0.0


@pytest.mark.parametrize(("expected", "given", "preserved"), [
    # A changed surname: 0.92 alike as a whole, it was "1 of 1 proper nouns preserved".
    ("प्रिया शर्मा", "प्रिया वर्मा", 0.0), ("Priya Sharma", "Priya Verma", 0.0),
    # Transliteration's variants of a vowel or a letter still pass.
    ("प्रिया शर्मा", "प्रीया शर्मा", 1.0), ("Priya Sharma", "Pria Sharma", 1.0),
    ("Priya Verma", "Priya Varma", 1.0), ("Alexander Smith", "Aleksander Smith", 1.0),
    # A word 0.73 alike whose consonants agree: the same name spelled by its vowels.
    ("Yousef Al Rahman", "Yusuf Al Rahman", 1.0),
])
def test_translation_proper_nouns_are_compared_word_by_word(
        expected: str, given: str, preserved: float) -> None:
    truth = copy.deepcopy(TRANSLATION_EXPECTED)
    truth["named_entities_handled"] = [{"entity": "Priya Sharma", "handled_as": expected}]
    out = copy.deepcopy(truth)
    out["named_entities_handled"] = [{"entity": "Priya Sharma", "handled_as": given}]
    case = make_case("translation", truth, config={"target_language": "hi"})
    metric = evaluate(case, out, embedder=TFIDF).metrics["proper_noun_preservation"]
    assert metric.value == preserved, metric.reason



@pytest.mark.parametrize(("field", "entries"), [
    ("domain_terms_handled", [{"term": "KYC", "handled_as": "ग्राहक सत्यापन"},
                              {"term": "kyc", "handled_as": "KYC"}]),
    ("domain_terms_handled", [{"term": "KYC", "handled_as": "KYC"},
                              {"term": "KYC", "handled_as": "ग्राहक सत्यापन"}]),
    ("named_entities_handled", [{"entity": "Priya Sharma", "handled_as": "प्रिया"},
                                {"entity": "Priya Sharma", "handled_as": "प्रिया शर्मा"}]),
])
def test_translation_a_name_handled_two_ways_is_a_structure_failure(
        field: str, entries: list[dict[str, str]]) -> None:
    # Before, the last entry won: listed one way round the output passed, the other way it
    # was blocked. Which one to score is ambiguous, as with a duplicate source_id.
    out = copy.deepcopy(TRANSLATION_EXPECTED)
    out[field] = entries
    result = _translation(out)
    assert not result.valid and result.score is None
    assert "handled in two different ways" in (
        result.metrics["response_structure_compliance"].reason or "")


def test_translation_a_name_repeated_the_same_way_is_no_conflict() -> None:
    out = copy.deepcopy(TRANSLATION_EXPECTED)
    out["domain_terms_handled"] = [{"term": "KYC", "handled_as": "KYC"},
                                   {"term": " kyc", "handled_as": "kyc "}]
    result = _translation(out)
    assert result.valid and result.metrics["domain_term_preservation"].value == 1.0

def test_translation_unknown_source_ids_are_not_counted() -> None:
    out = copy.deepcopy(TRANSLATION_EXPECTED)
    out["sentence_translations"] = [
        {"source_id": 7, "source_text": "?", "translated_text": "कुछ"},
        out["sentence_translations"][0],
    ]
    result = _translation(out)
    assert result.metrics["response_structure_compliance"].value == 1.0
    assert result.metrics["translation_completeness"].value == 0.5


def test_translation_empty_translated_text_counts_as_missing() -> None:
    out = copy.deepcopy(TRANSLATION_EXPECTED)
    out["sentence_translations"][1]["translated_text"] = "  "
    result = _translation(out)
    assert result.metrics["translation_completeness"].value == 0.5
    assert result.metrics["sentence_meaning_accuracy"].details["per_sentence"]["2"] == 0.0


def test_translation_fluency_is_not_scored_offline() -> None:
    result = _translation(copy.deepcopy(TRANSLATION_EXPECTED))
    fluency = result.metrics["target_fluency"]
    assert not fluency.scored and fluency.value is None
    assert "heuristic judge cannot" in (fluency.reason or "")
    assert result.score is not None and result.renormalised


def _with_politeness(returned: Any) -> TaskResult:
    """A QA result with a custom metric ``politeness`` that returns ``returned``."""
    registry = default_registry().copy()
    registry.register_metric(
        MetricSpec(id="politeness", task="qa", name="Politeness", description="d",
                   scale="0-1", threshold=">= 0.5", bands=Bands(good=0.5)),
        lambda case, output, result: returned)
    return evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)), GOOD_QA,
                    embedder=TFIDF, registry=registry)


@pytest.mark.parametrize(("returned", "reason"), [
    (float("nan"), "custom metric returned nan, not a finite number"),
    (float("inf"), "custom metric returned inf, not a finite number"),
    ("abc", "custom metric returned 'abc', not a finite number"),
    (MetricResult(value=float("nan")), "custom metric returned nan, not a finite number"),
    # An int past a float's range ended the evaluation in an OverflowError.
    (10 ** 400, "custom metric returned a number too large for a float, not a finite number"),
    # Two of them summed to infinity in the scorecard: the report was lost at the run's end.
    (1.7e308, "custom metric returned 1.7e+308, beyond 1e+15 either side of zero"),
    # True scored 1.0: a check's truth value is not a score on its scale.
    (True, "custom metric returned True, a truth value, not a number: return 1.0 or 0.0"),
    (MetricResult(value=False),  # type: ignore[arg-type]
     "custom metric returned False, a truth value, not a number: return 1.0 or 0.0"),
], ids=["nan", "inf", "text", "result-nan", "huge-int", "huge-float", "bool", "result-bool"])
def test_a_custom_metric_that_returns_no_number_is_not_scored(returned: Any,
                                                              reason: str) -> None:
    # NaN passed every bound of assert_metric; a string crashed the evaluation.
    result = _with_politeness(returned)
    metric = result.metrics["politeness"]
    assert (metric.scored, metric.value, metric.reason, metric.flagged) == (
        False, None, reason, False)
    # An error of the metric's code, as a raise is, not the judge abstaining.
    assert metric.details["returned"] == reason.removeprefix("custom metric returned ")
    # Nor is it the model's failure: the check cannot be made.
    with pytest.raises(EvaluationUnavailable, match="politeness could not be estimated"):
        assert_metric(result, "politeness", min=1.0)


@pytest.mark.parametrize(("returned", "value"), [
    (np.float32(0.75), 0.75), (np.int64(1), 1.0), (np.float64(0.5), 0.5), (Fraction(1, 4), 0.25),
    (MetricResult(value=np.float32(0.25)), 0.25),  # type: ignore[arg-type]
], ids=["float32", "int64", "float64", "fraction", "result-float32"])
def test_a_custom_metric_may_return_any_real_number(returned: Any, value: float) -> None:
    # A numpy scalar was "not scored — returned np.float32(0.75), not a finite number".
    result = _with_politeness(returned)
    metric = result.metrics["politeness"]
    assert (metric.scored, metric.value, type(metric.value), metric.rating) == (
        True, value, float, "good" if value >= 0.5 else "fail")


def test_a_custom_metric_whose_code_raises_is_an_error_of_the_evaluation() -> None:
    # Its assertion failed as "not scored", a failure of the model; and as a blocker it let
    # assert_no_blockers pass, though it may have fired.
    registry = default_registry().copy()

    def broken(case: Any, output: Any, result: Any) -> float:
        raise KeyError("questions")

    registry.register_metric(
        MetricSpec(id="script_followed", task="qa", name="Script Followed", description="d",
                   scale="0/1", threshold="= 1", bands=Bands(good=1.0), blocker=True),
        broken)
    result = evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)), GOOD_QA,
                      embedder=TFIDF, registry=registry)
    metric = result.metrics["script_followed"]
    assert (metric.scored, metric.value) == (False, None)
    assert metric.details == {"raised": "KeyError", "blocker_metric": True, "threshold": "= 1"}
    assert metric.reason == "custom metric raised KeyError: 'questions'"
    message = ("the custom metric code raised for model .*, so it could not be scored \\(an "
               "error in the evaluation, not a model failure\\): script_followed: custom "
               "metric raised KeyError")
    with pytest.raises(MetricCodeError, match=message):
        assert_metric(result, "script_followed", min=1.0)
    with pytest.raises(MetricCodeError, match=message):
        assert_no_blockers(result)
    assert isinstance(MetricCodeError("x"), EvaluationUnavailable)


def test_unpaired_surrogates_in_an_output_are_scored_as_replacement_characters() -> None:
    # JSON's "\\ud800" escape alone: the TF-IDF vectoriser's UTF-32 encoding, the result
    # spool and the report all ended in a UnicodeEncodeError on it (the run in an
    # INTERNALERROR). Each is now U+FFFD, and the result says so.
    output = copy.deepcopy(GOOD_QA)
    output["questions"][0]["reason"] = "greeted \ud800 the caller"
    value, problem, notes = parse_output(json.dumps(output))
    assert problem is None and value["questions"][0]["reason"] == "greeted \ufffd the caller"
    assert notes == ["output held unpaired UTF-16 surrogates (not valid Unicode) in 1 "
                     "string(s); each was replaced by U+FFFD"]
    result = evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)), output,
                      embedder=TFIDF)
    assert result.valid and result.score is not None
    assert any("unpaired UTF-16 surrogates" in note for note in result.notes)
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")


def test_an_unpaired_surrogate_deep_in_an_output_is_replaced_not_a_crash() -> None:
    # Nested 600 deep (json.loads reads it): the recursive replacement ran out of frames
    # from a depth of ~500 and the evaluation raised RecursionError, so the pair was left
    # out of the task's score instead of being scored as the invalid output it is.
    deep = "[" * 600 + '"\\ud800"' + "]" * 600
    value, problem, notes = parse_output('{"questions": ' + deep + "}")
    assert problem is None and len(notes) == 1
    inner = value["questions"]
    for _ in range(599):
        inner = inner[0]
    assert inner == ["\ufffd"]
    result = evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)),
                      '{"questions": ' + deep + "}", embedder=TFIDF)
    assert not result.valid and result.blockers == ["response_structure_compliance"]


@pytest.mark.parametrize(("text", "value", "may_hold"), [
    ('{"a": "\\uD800x"}', {"a": "\ufffdx"}, True),
    ('{"\\udfff": 1}', {"\ufffd": 1}, True),
    ('["\ud800"]', ["\ufffd"], True),
    # A pair's escapes make one character: looked for, and nothing replaced.
    ('["\\ud83d\\ude00", "\\u00e9"]', ["\U0001f600", "\u00e9"], True),
    ('["caf\u00e9 \\u00e9", "\\\\ud800"]', ["caf\u00e9 \u00e9", "\\ud800"], True),
    ('{"plain": ["caf\u00e9", 1]}', {"plain": ["caf\u00e9", 1]}, False),
])
def test_json_text_without_a_surrogate_or_its_escape_skips_the_walk(
        text: str, value: Any, may_hold: bool) -> None:
    from pytest_callqa.engine.core.unicode_text import json_may_hold_lone

    assert json_may_hold_lone(text) is may_hold
    assert parse_output(text)[0] == value


@pytest.mark.parametrize(("value", "replaced", "count", "where"), [
    ({"a": ["x", "\ud800", {"\udc00k": "v", "b": ["ok", "\ud801z"]}]},
     {"a": ["x", "\ufffd", {"\ufffdk": "v", "b": ["ok", "\ufffdz"]}]}, 3, "a[1]"),
    ("\ud800", "\ufffd", 1, "(value)"),
    (["a", ["\ud800"]], ["a", ["\ufffd"]], 1, "[1][0]"),
    # Two keys that become one: the later one's value stays, as a dict keeps it.
    (dict([("\ud800", 1), ("\ud801", 2)]), {"\ufffd": 2}, 2, "'\\ud800'"),
    ({"a.b": {"c": "\ud800"}}, {"a.b": {"c": "\ufffd"}}, 1, "a.b.c"),
    ({"x": {"\ud800": 1}}, {"x": {"\ufffd": 1}}, 1, "x.'\\ud800'"),
    ({"clean": ["text", 1, None, 2.5, True]}, {"clean": ["text", 1, None, 2.5, True]}, 0,
     None),
])
def test_surrogates_are_replaced_and_located_as_a_walk_from_the_top_meets_them(
        value: Any, replaced: Any, count: int, where: str | None) -> None:
    from pytest_callqa.engine.core.unicode_text import (
        first_lone_surrogate,
        without_lone_surrogates,
    )

    assert without_lone_surrogates(value) == (replaced, count)
    assert first_lone_surrogate(value) == where
    below = first_lone_surrogate({"out": value})
    assert below == (None if where is None else "out" if where == "(value)"
                     else f"out{where}" if where.startswith("[") else f"out.{where}")


@pytest.mark.parametrize("count", [-3, 99])
def test_a_fact_count_off_the_facts_shown_is_a_judge_error_not_a_rate(count: int) -> None:
    # Before: -3 unsupported facts made a hallucination rate of -300 % (rated good), 99 of
    # 5 facts a fabrication rate past 100 %. A judge that counts no fact of these is the
    # tool's failure: the metrics are judge errors, and the text score unknown.
    judge = FixedJudge({"fabrication_free_rate": 0.0, "call_intent_match": 1.0,
                        "highlight_correctness": 1.0},
                       fabrication_free_rate={"unsupported": count})
    result = _text(copy.deepcopy(TEXT_EXPECTED), judge=judge)
    metric = result.metrics["fabrication_free_rate"]
    assert metric.judge_error and metric.value is None
    assert f"the judge counted {count} unsupported facts of the 5 it was shown" in metric.reason
    assert "fabrication_free_rate" in result.judge_errors and result.score is None
    qa = evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)), GOOD_QA,
                  embedder=TFIDF, benchmarks=True,
                  judge=FixedJudge({"faithfulness": 0.0, "evidence_backed_reasoning": 1.0},
                                   faithfulness={"unsupported": count}))
    for mid in ("faithfulness", "hallucination_rate"):
        assert qa.metrics[mid].judge_error and qa.metrics[mid].value is None, mid


def test_a_judge_giving_no_fact_count_leaves_the_share_its_score_gives_unrounded() -> None:
    # Before: round((1 - 0.5) * 1) = 0 (Python rounds half to even): half a fact unsupported
    # was counted as none, and the pooled rate as 0 %.
    out = copy.deepcopy(TEXT_EXPECTED)
    judge = FixedJudge({"fabrication_free_rate": 0.9, "call_intent_match": 1.0,
                        "highlight_correctness": 1.0})
    metric = _text(out, judge=judge).metrics["fabrication_free_rate"]
    assert metric.details["unsupported"] == pytest.approx(0.5)
    assert metric.details["numerator"] == pytest.approx(4.5)
    assert metric.details["denominator"] == 5


def test_a_blank_reference_translation_is_a_case_error() -> None:
    # A model that copied the blank reference was scored as leaving the sentence out (0.5).
    expected = copy.deepcopy(TRANSLATION_EXPECTED)
    expected["sentence_translations"][1]["translated_text"] = "  "
    case = GoldenCase.model_validate({"id": "t", "task": "translation",
                                      "transcript": "customer: KYC is complete.",
                                      "config": {"target_language": "hi"},
                                      "expected_outcome": expected})
    assert default_registry().task("translation").check_case(case) == [
        "expected_outcome.sentence_translations[1].translated_text: blank (source_id 2); a "
        "reference translation is needed"]


@pytest.mark.parametrize(("task", "where", "blank", "problem"), [
    # An expected call_purpose "" failed an identical output as a blocker.
    ("text", ("expected_outcome", "summary", "call_purpose"), "",
     "expected_outcome.summary.call_purpose: String should have at least 1 character"),
    ("text", ("expected_outcome", "summary", "call_purpose"), "  ",
     "expected_outcome.summary.call_purpose: Value error, is only whitespace: write the text"),
    ("text", ("expected_outcome", "summary", "highlights", 1), " ",
     "expected_outcome.summary.highlights[1]: Value error, is only whitespace: write the text"),
    # A critical fact "" was never found: a blocker on an identical translation.
    ("translation", ("config", "critical_facts", 0), "",
     "config.critical_facts[0]: String should have at least 1 character"),
    ("translation", ("config", "target_language"), " ",
     "config.target_language: Value error, is only whitespace: write the text"),
    # A proper noun handled_as "" passed a translation that dropped the name.
    ("translation", ("expected_outcome", "named_entities_handled", 0, "handled_as"), "",
     "expected_outcome.named_entities_handled[0].handled_as: String should have at least 1 "
     "character"),
    ("translation", ("expected_outcome", "domain_terms_handled", 0, "term"), " ",
     "expected_outcome.domain_terms_handled[0].term: Value error, is only whitespace: write "
     "the text"),
])
def test_a_blank_text_a_case_states_is_a_case_error(task: str, where: tuple[Any, ...],
                                                   blank: str, problem: str) -> None:
    case: dict[str, Any] = copy.deepcopy({
        "text": {"config": {}, "expected_outcome": TEXT_EXPECTED,
                 "transcript": TEXT_TRANSCRIPT},
        "translation": {"config": {"target_language": "hi", "critical_facts": ["₹49"]},
                        "expected_outcome": TRANSLATION_EXPECTED,
                        "transcript": "customer: KYC is complete."}}[task])
    parent = case
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = blank
    golden = GoldenCase.model_validate({"id": "c", "task": task, **case})
    assert default_registry().task(task).check_case(golden) == [problem]


def test_a_blocker_a_policy_adds_to_a_voiding_metric_voids_the_score() -> None:
    # The policy's path (evaluate._apply_overrides) had no engine test: one missing label,
    # under a team bar of none at all, is a blocker that voids the text score, and every
    # metric the policy redefines records the bar it was rated by, scored or not.
    from pytest_callqa.engine.policy import apply_policy

    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {
        "text.call_intent_match": {"threshold": 1.0},
        "missing_sentiment_labels": {"threshold": 0, "acceptable": 0, "blocker": True}}},
                 "team.toml")
    out = copy.deepcopy(TEXT_EXPECTED)
    out["sentiment"][0]["label"] = None
    case = make_case("text", TEXT_EXPECTED, transcript=TEXT_TRANSCRIPT)
    result = evaluate(case, out, embedder=TFIDF, registry=registry)
    missing = result.metrics["missing_sentiment_labels"]
    assert (missing.value, missing.rating, missing.blocker) == (1, "blocker", True)
    assert missing.details["threshold"] == registry.metric("text", "missing_sentiment_labels"
                                                         ).threshold
    assert result.metrics["call_intent_match"].details["threshold"] == registry.metric(
        "text", "call_intent_match").threshold
    assert (result.score, result.valid) == (None, False)
    assert result.blockers == ["missing_sentiment_labels"]
    assert result.notes[-1].startswith("score void (invalid) because of blocker: "
                                       "missing_sentiment_labels; it would have been ")


def test_highlights_written_without_spaces_match_by_their_character_pairs() -> None:
    # An unspaced Chinese highlight was one token: "客服确认了重复扣款" against "客服确认重复扣款"
    # shared none, and highlight recall was 0 where the English paraphrase scored 1.
    expected = copy.deepcopy(TEXT_EXPECTED)
    expected["summary"]["highlights"] = ["客服确认重复扣款", "已发起49元退款"]
    case = make_case("text", expected, transcript=TEXT_TRANSCRIPT)
    out = copy.deepcopy(expected)
    out["summary"]["highlights"] = ["客服确认了重复扣款", "已经发起49元的退款"]
    recall = evaluate(case, out, embedder=TFIDF).metrics["highlight_recall"]
    assert recall.value == 1.0, recall.reason
    out["summary"]["highlights"] = ["客服取消了订阅"]
    assert evaluate(case, out, embedder=TFIDF).metrics["highlight_recall"].value == 0.0


def test_text_without_highlights_asks_no_judge_for_highlight_correctness() -> None:
    # Before: the LLM judge was asked for accurate highlights / highlights returned over
    # none, and its answer scored (0.0 made the summary score 0.8; 1.0 would reward an empty
    # summary) where the offline judge said "not scored: no highlight returned".
    out = copy.deepcopy(TEXT_EXPECTED)
    out["summary"]["highlights"] = []
    judge = FixedJudge({"call_intent_match": 1.0, "highlight_correctness": 0.0,
                        "fabrication_free_rate": 1.0})
    result = _text(out, judge=judge)
    offline = _text(copy.deepcopy(out), judge=HeuristicJudge())
    assert "highlight_correctness" not in {r.metric for r in judge.seen}
    for judged in (result, offline):
        metric = judged.metrics["highlight_correctness"]
        assert not metric.scored and metric.reason == "not scored: no highlight returned"
    assert "highlight_correctness" in result.not_scored


def test_text_stating_no_fact_asks_no_judge_for_the_fabrication_rates() -> None:
    # Before: the LLM judge scored the fabrication-free rate (and so faithfulness and the
    # hallucination rate) over no fact; the offline judge left it "n/a".
    out = copy.deepcopy(TEXT_EXPECTED)
    out["summary"] = {"call_purpose": "", "highlights": [], "call_extracted_info": {}}
    judge = FixedJudge({"call_intent_match": 0.0, "fabrication_free_rate": 1.0})
    case = make_case("text", TEXT_EXPECTED, transcript=TEXT_TRANSCRIPT)
    result = evaluate(case, out, embedder=TFIDF, judge=judge, benchmarks=True)
    offline = evaluate(case, copy.deepcopy(out), embedder=TFIDF, judge=HeuristicJudge(),
                       benchmarks=True)
    assert "fabrication_free_rate" not in {r.metric for r in judge.seen}
    for judged in (result, offline):
        for mid in ("fabrication_free_rate", "faithfulness", "hallucination_rate"):
            metric = judged.metrics[mid]
            assert metric.not_applicable and metric.reason == "n/a: the output states no fact"
            assert metric.value is None and not metric.blocker, mid


def test_benchmarks_over_no_claim_ask_no_judge() -> None:
    # Faithfulness and contextual precision over an output that claims nothing, and
    # contextual recall over a truth that claims nothing, have no share to take.
    case = make_case("entity", {"detected_keywords": [], "detected_topics": [],
                                "valid_entity_set": []}, config={"keywords": ["refund"]})
    output = {"detected_keywords": [], "detected_topics": [], "valid_entity_set": []}
    judge = FixedJudge({"faithfulness": 1.0, "contextual_precision": 1.0,
                        "contextual_recall": 1.0}, faithfulness={"unsupported": 0})
    result = evaluate(case, output, embedder=TFIDF, judge=judge, benchmarks=True)
    assert {r.metric for r in judge.seen}.isdisjoint(
        {"faithfulness", "contextual_precision", "contextual_recall"})
    for mid in ("faithfulness", "hallucination_rate", "contextual_precision",
                "contextual_recall", "contextual_relevancy"):
        assert not result.metrics[mid].scored and result.metrics[mid].value is None, mid
    assert result.metrics["faithfulness"].reason == "n/a: the output states no fact"


def test_qa_without_questions_asks_no_judge_for_evidence() -> None:
    judge = FixedJudge({"evidence_backed_reasoning": 1.0})
    result = evaluate(make_case("qa", QA_EXPECTED, config=asked(QA_EXPECTED)),
                      {"questions": []}, embedder=TFIDF, judge=judge)
    offline = _qa({"questions": []})
    assert "evidence_backed_reasoning" not in {r.metric for r in judge.seen}
    for judged in (result, offline):
        metric = judged.metrics["evidence_backed_reasoning"]
        assert not metric.scored and metric.reason == "not scored: the output gives no reason"


@pytest.mark.parametrize("metric_id, whole, why", [
    ("argument_correctness", "steps", "no reasoning step"),
    ("contextual_precision", "referenced", "the output uses no piece of the call"),
    ("contextual_recall", "needed", "expected_outcome needs no piece of the call"),
    ("instruction_following", "instructions", "no instruction listed")])
def test_a_benchmark_verdict_counting_none_of_its_whole_is_not_scored(
        metric_id: str, whole: str, why: str) -> None:
    # Before: argument correctness of 0.5 over 0 steps (a text or translation output has no
    # reasoning step) was accepted; the seed's mean of no step score is no number.
    judge = FixedJudge({"call_intent_match": 1.0, "highlight_correctness": 1.0,
                        "fabrication_free_rate": 1.0, metric_id: 0.5},
                       **{metric_id: {whole: 0}})
    case = make_case("text", TEXT_EXPECTED, transcript=TEXT_TRANSCRIPT)
    result = evaluate(case, copy.deepcopy(TEXT_EXPECTED), embedder=TFIDF, judge=judge,
                      benchmarks=True)
    metric = result.metrics[metric_id]
    assert not metric.scored and metric.value is None and not metric.judge_error
    assert metric.reason == f"not scored: {why}"
    counted = FixedJudge({metric_id: 0.5}, **{metric_id: {whole: 2}})
    assert evaluate(case, copy.deepcopy(TEXT_EXPECTED), embedder=TFIDF, judge=counted,
                    benchmarks=True).metrics[metric_id].value == 0.5


def test_the_hallucination_rate_leaves_out_the_facts_the_judge_left_undecided() -> None:
    # Before: 1 unsupported and 1 undecided of the 5 facts gave a hallucination rate of 1 of
    # 5 (0.2) beside a fabrication-free rate of 3 of 4 (0.75), from one verdict.
    case = make_case("text", TEXT_EXPECTED, transcript=TEXT_TRANSCRIPT)
    judge = FixedJudge({"call_intent_match": 1.0, "highlight_correctness": 1.0,
                        "fabrication_free_rate": 0.75},
                       fabrication_free_rate={"unsupported": 1, "undecided": 1})
    result = evaluate(case, copy.deepcopy(TEXT_EXPECTED), embedder=TFIDF, judge=judge,
                      benchmarks=True)
    fabrication, hallucination = (result.metrics[m] for m in (
        "fabrication_free_rate", "hallucination_rate"))
    assert fabrication.details["denominator"] == hallucination.details["denominator"] == 4
    assert hallucination.value == pytest.approx(0.25)
    assert hallucination.value == pytest.approx(1 - fabrication.value)
    none_decided = FixedJudge({"fabrication_free_rate": None},
                              fabrication_free_rate={"unsupported": 0, "undecided": 5})
    undecided = evaluate(case, copy.deepcopy(TEXT_EXPECTED), embedder=TFIDF,
                         judge=none_decided, benchmarks=True).metrics["hallucination_rate"]
    assert not undecided.scored and undecided.value is None and not undecided.judge_error


def test_a_policy_rates_every_metric_it_redefines_past_unscored_and_case_rated_ones() -> None:
    # A metric the policy could not rate (unscored) or must not (the case's own bar) ended
    # the loop for those after it; two voiding blockers are named apart; a result without a
    # voiding blocker keeps its score, and one whose score is already unknown gets no note.
    from pytest_callqa.engine.core.metrics import CASE_BAR
    from pytest_callqa.engine.core.results import MetricResult, TaskResult
    from pytest_callqa.engine.evaluate import _apply_overrides
    from pytest_callqa.engine.policy import apply_policy

    registry = default_registry().copy()
    bar = {"threshold": 0.95, "blocker": True}
    apply_policy(registry, {"metrics": {f"text.{mid}": bar for mid in (
        "call_intent_match", "highlight_correctness", "fabrication_free_rate",
        "sentiment_accuracy", "highlight_recall")}}, "team.toml")
    spec = registry.task("text")

    def result(score: float | None, **metrics: MetricResult) -> TaskResult:
        return TaskResult(task="text", case_id="c", score=score, valid=True, blocked=False,
                          blockers=[], model="m", metrics=dict(metrics))

    first = result(0.8, call_intent_match=MetricResult.not_scored("no key word"),
                   highlight_correctness=MetricResult(value=0.9, rating="good",
                                                      details={CASE_BAR: True}),
                   fabrication_free_rate=MetricResult(value=0.9, rating="good"),
                   missing_sentiment_labels=MetricResult(value=1.0, rating="blocker",
                                                         blocker=True))
    _apply_overrides(first, spec, registry)
    assert (first.metrics["fabrication_free_rate"].rating,
            first.metrics["fabrication_free_rate"].blocker) == ("blocker", True)
    assert first.metrics["highlight_correctness"].rating == "good"
    assert first.score is None and first.notes == [
        "score void (invalid) because of blocker: fabrication_free_rate, "
        "missing_sentiment_labels; it would have been 0.800"]
    kept = result(0.8, sentiment_accuracy=MetricResult(value=0.9, rating="good"),
                  highlight_recall=MetricResult(value=0.97, rating="acceptable"))
    _apply_overrides(kept, spec, registry)
    assert (kept.score, kept.notes) == (0.8, [])
    assert kept.metrics["highlight_recall"].rating == "good"
    unknown = result(None, fabrication_free_rate=MetricResult(value=0.5, rating="fail"))
    _apply_overrides(unknown, spec, registry)
    assert unknown.blockers == ["fabrication_free_rate"] and unknown.notes == []

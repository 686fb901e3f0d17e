"""The entity task end to end: the task score is the seed's 0.47/0.29/0.24 blend of what the
task itself computed (the worked example checks the metric specs' weights, not the task), and
each metric's reason and details say which entities it counted."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.evaluate import evaluate

from .helpers import TFIDF, make_case

TRANSCRIPT = "customer: hello, I want a refund and to cancel my billing plan"
CONFIG = {"keywords": ["hello", "refund", "account", "balance", "cancel"],
          "topics": ["billing"]}


def test_the_task_score_blends_the_three_f1_and_adherence_values_by_the_seed_weights() -> None:
    case = make_case("entity", {
        "detected_keywords": ["hello", "refund", "account", "balance"],
        "detected_topics": ["billing"],
        "valid_entity_set": [],
    }, config=CONFIG, transcript=TRANSCRIPT)
    result = evaluate(case, {
        "detected_keywords": ["Hello", "refund", "cancel", "refund"],
        "detected_topics": ["billing", "weather"],
        "valid_entity_set": [],
    }, embedder=TFIDF)
    m = result.metrics
    # keywords: 2 of 3 detected expected, 2 of 4 expected detected
    keyword_f1 = 2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2)
    # topics: 1 of 2 detected expected, the 1 expected detected
    topic_f1 = 2 * (1 / 2) * 1 / (1 / 2 + 1)
    # five distinct detections, "weather" is not configured
    adherence = 4 / 5
    assert m["keyword_f1"].value == pytest.approx(keyword_f1)
    assert m["topic_f1"].value == pytest.approx(topic_f1)
    assert m["config_adherence"].value == pytest.approx(adherence)
    assert result.score == pytest.approx(0.47 * keyword_f1 + 0.29 * topic_f1 + 0.24 * adherence)

    assert m["keyword_precision"].reason == "2 of 3 detected keywords expected; extra: cancel"
    assert m["keyword_recall"].reason == \
        "2 of 4 expected keywords detected; missed: account, balance"
    assert m["keyword_f1"].reason == "P=0.67 R=0.50"
    for metric in ("keyword_precision", "keyword_recall", "keyword_f1"):
        assert m[metric].details == {"matched": ["hello", "refund"], "extra": ["cancel"],
                                     "missed": ["account", "balance"]}
    assert m["topic_precision"].reason == "1 of 2 detected topics expected; extra: weather"
    assert m["topic_recall"].reason == "1 of 1 expected topics detected"
    assert m["topic_f1"].details == {"matched": ["billing"], "extra": ["weather"], "missed": []}
    assert m["config_adherence"].reason == \
        "4 of 5 detected entities are configured; not configured: weather"
    assert m["config_adherence"].details == {"not_configured": ["weather"]}
    assert m["fabricated_entity_count"].value == 1
    assert m["fabricated_entity_count"].reason == "fabricated: weather"
    assert m["fabricated_entity_count"].details == {"fabricated": ["weather"]}
    assert not m["cross_language_match_rate"].scored
    assert m["cross_language_match_rate"].reason == \
        "n/a: no expected entity is mentioned in another script or language"


def test_nothing_detected_is_adherent_and_fabricates_nothing() -> None:
    case = make_case("entity", {
        "detected_keywords": ["refund"], "detected_topics": [], "valid_entity_set": [],
    }, config=CONFIG, transcript=TRANSCRIPT)
    result = evaluate(case, {"detected_keywords": [], "detected_topics": [],
                             "valid_entity_set": []}, embedder=TFIDF)
    m = result.metrics
    assert m["config_adherence"].value == 1.0
    assert m["config_adherence"].reason == "nothing detected"
    assert m["fabricated_entity_count"].value == 0
    assert m["fabricated_entity_count"].reason == "no fabricated entity"
    assert m["keyword_recall"].reason == "0 of 1 expected keywords detected; missed: refund"
    assert m["keyword_precision"].reason == "0 of 0 detected keywords expected"


def test_an_entity_said_in_another_language_is_neither_fabricated_nor_missed_by_the_rate() -> None:
    config = {"keywords": ["refund", "account"], "entity_language": "en",
              "entity_mentions": {"account": {"text": "cuenta", "lang": "es"},
                                  "refund": "refund"}}
    case = make_case("entity", {
        "detected_keywords": ["refund", "account"], "detected_topics": [],
        "valid_entity_set": [],
    }, config=config, transcript="customer: quiero un refund para mi cuenta")
    with_account = evaluate(case, {"detected_keywords": ["refund", "account"],
                                   "detected_topics": [], "valid_entity_set": []},
                            embedder=TFIDF).metrics
    assert with_account["fabricated_entity_count"].value == 0
    assert with_account["cross_language_match_rate"].value == 1.0
    assert with_account["cross_language_match_rate"].reason == \
        "1 of 1 cross-language entities detected"
    assert with_account["cross_language_match_rate"].details == {
        "cross_language": ["account"], "detected": ["account"]}
    without = evaluate(case, {"detected_keywords": ["refund"], "detected_topics": [],
                              "valid_entity_set": []}, embedder=TFIDF).metrics
    assert without["cross_language_match_rate"].value == 0.0
    assert without["cross_language_match_rate"].details == {
        "cross_language": ["account"], "detected": []}


def test_a_mention_absent_from_the_transcript_does_not_excuse_a_detection() -> None:
    config = {"keywords": ["refund", "account"],
              "entity_mentions": {"account": {"text": "cuenta", "lang": "es"}}}
    case = make_case("entity", {
        "detected_keywords": ["refund"], "detected_topics": [], "valid_entity_set": [],
    }, config=config, transcript="customer: I want a refund")
    m = evaluate(case, {"detected_keywords": ["refund", "account"], "detected_topics": [],
                        "valid_entity_set": []}, embedder=TFIDF).metrics
    assert m["fabricated_entity_count"].details == {"fabricated": ["account"]}


def test_lists_in_the_reasons_are_comma_separated() -> None:
    case = make_case("entity", {
        "detected_keywords": ["hello"], "detected_topics": [], "valid_entity_set": [],
    }, config={"keywords": ["hello", "refund", "cancel"]}, transcript=TRANSCRIPT)
    m = evaluate(case, {"detected_keywords": ["hello", "refund", "cancel", "loan", "visa"],
                        "detected_topics": [], "valid_entity_set": []}, embedder=TFIDF).metrics
    assert m["keyword_precision"].reason == \
        "1 of 5 detected keywords expected; extra: refund, cancel, loan, visa"
    assert m["config_adherence"].reason == \
        "3 of 5 detected entities are configured; not configured: loan, visa"
    assert m["fabricated_entity_count"].reason == "fabricated: loan, visa"


def test_all_detections_configured_names_none_outside() -> None:
    case = make_case("entity", {
        "detected_keywords": ["hello", "refund"], "detected_topics": [], "valid_entity_set": [],
    }, config=CONFIG, transcript=TRANSCRIPT)
    m = evaluate(case, {"detected_keywords": ["hello", "refund"], "detected_topics": [],
                        "valid_entity_set": []}, embedder=TFIDF).metrics
    assert m["config_adherence"].reason == "2 of 2 detected entities are configured"


def test_an_unexpected_detection_said_by_its_mention_is_not_fabricated() -> None:
    # "account" is in no expected list and not in the transcript, but its configured mention
    # "cuenta" is; "visa" after it is fabricated all the same.
    config = {"keywords": ["refund", "account", "visa"],
              "entity_mentions": {"account": {"text": "cuenta", "lang": "es"}}}
    case = make_case("entity", {
        "detected_keywords": ["refund"], "detected_topics": [], "valid_entity_set": [],
    }, config=config, transcript="customer: quiero un refund para mi cuenta")
    m = evaluate(case, {"detected_keywords": ["refund", "account", "visa"],
                        "detected_topics": [], "valid_entity_set": []}, embedder=TFIDF).metrics
    assert m["fabricated_entity_count"].details == {"fabricated": ["visa"]}


def test_an_entity_said_in_the_possessive_is_not_fabricated() -> None:
    # "Visa's" lost its apostrophe to "visas", so visa, amex and paypal were fabricated, which
    # blocked the case and voided its score. They are still not expected: precision counts them.
    case = make_case("entity", {
        "detected_keywords": ["statement"], "detected_topics": [], "valid_entity_set": [],
    }, config={"keywords": ["visa", "amex", "paypal", "statement", "loan"]},
        transcript="customer: I saw Visa's fee, Amex\u2019s fee and PayPal's fee on my statement.")
    result = evaluate(case, {"detected_keywords": ["visa", "amex", "paypal", "statement"],
                             "detected_topics": [], "valid_entity_set": []}, embedder=TFIDF)
    m = result.metrics
    assert m["fabricated_entity_count"].value == 0
    assert m["keyword_precision"].value == pytest.approx(1 / 4)
    assert result.valid and not result.blocked and result.score is not None
    absent = evaluate(case, {"detected_keywords": ["visa", "loan"], "detected_topics": [],
                             "valid_entity_set": []}, embedder=TFIDF).metrics
    assert absent["fabricated_entity_count"].details == {"fabricated": ["loan"]}


def test_nothing_expected_and_nothing_detected_is_not_compared_by_similarity() -> None:
    # A call without entities, answered with none: the blank pair's cosine was scored 0, so
    # answer relevancy (0.0) and answer correctness (0.5) failed an output equal to its truth.
    case = make_case("entity", {"detected_keywords": [], "detected_topics": [],
                                "valid_entity_set": []},
                     config={"keywords": ["refund", "loan"], "topics": ["billing"]},
                     transcript="customer: hello there, just checking in.")
    empty = {"detected_keywords": [], "detected_topics": [], "valid_entity_set": []}
    result = evaluate(case, empty, embedder=TFIDF)
    for metric in ("answer_relevancy", "answer_correctness"):
        found = result.metrics[metric]
        assert found.value is None and found.not_applicable, metric
        assert found.reason == "n/a: the output and the truth are both empty"
    assert result.score == 1.0
    wrong = evaluate(case, {**empty, "detected_keywords": ["loan"]}, embedder=TFIDF).metrics
    assert wrong["answer_relevancy"].value == 0.0


@pytest.mark.parametrize(("field", "blank"), [
    ("detected_keywords", ""), ("detected_keywords", "  "), ("detected_topics", "-"),
    ("valid_entity_set", "_"),
])
def test_a_blank_name_is_a_structure_failure(field: str, blank: str) -> None:
    # Before, blank names were dropped in silence: a model padding its list with "" kept a
    # precision and adherence of 1.0 while the seed divides by every name it detected.
    case = make_case("entity", {"detected_keywords": ["refund"], "detected_topics": [],
                                "valid_entity_set": []}, config=CONFIG, transcript=TRANSCRIPT)
    output = {"detected_keywords": ["refund"], "detected_topics": [], "valid_entity_set": []}
    output[field] = [*output[field], blank]
    result = evaluate(case, output, embedder=TFIDF)
    assert not result.valid and result.score is None
    assert f"{blank!r} is a blank name" in (
        result.metrics["response_structure_compliance"].reason or "")


def test_a_truth_naming_an_entity_outside_the_configuration_is_a_case_error() -> None:
    # The model that copied such a truth was disqualified by config adherence (0.333).
    from pytest_callqa.engine.core.cases import GoldenCase
    from pytest_callqa.engine.registry import default_registry

    case = GoldenCase.model_validate({
        "id": "fee", "task": "entity", "transcript": "customer: I want a refund of the fee.",
        "config": {"keywords": ["Refund"], "topics": ["billing"]},
        "expected_outcome": {"detected_keywords": ["refund", "late fee"],
                             "detected_topics": ["fees"], "valid_entity_set": []}})
    assert default_registry().task("entity").check_case(case) == [
        "expected_outcome.detected_keywords[1]: 'late fee' is not in config.keywords or "
        "config.topics, and a model may report only configured entities",
        "expected_outcome.detected_topics[0]: 'fees' is not in config.keywords or "
        "config.topics, and a model may report only configured entities"]


def test_an_entity_listed_as_keyword_and_topic_is_one_detection() -> None:
    # Two configured entities never said, each listed as a keyword and as a topic, counted
    # four fabrications: past the blocker's two, the score void.
    config = {"keywords": ["refund", "promotions", "defect"],
              "topics": ["billing", "promotions", "defect"]}
    case = make_case("entity", {
        "detected_keywords": ["refund"], "detected_topics": ["billing"],
        "valid_entity_set": [],
    }, config=config, transcript=TRANSCRIPT)
    result = evaluate(case, {
        "detected_keywords": ["refund", "promotions", "defect"],
        "detected_topics": ["billing", "promotions", "defect"],
        "valid_entity_set": [],
    }, embedder=TFIDF)
    m = result.metrics
    assert m["fabricated_entity_count"].value == 2
    assert m["fabricated_entity_count"].reason == "fabricated: promotions, defect"
    assert m["config_adherence"].reason == "4 of 4 detected entities are configured"
    assert result.valid and not result.blocked

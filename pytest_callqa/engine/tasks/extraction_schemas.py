"""Typed signal lists of the extraction family (seed 002) and their evaluation table.

Each signal type names the field its items are matched on, the similarity threshold of that
match (the seed's table where it gives one), and the fields compared on matched pairs:
categorical (agreement), numeric in [0, 1] (absolute error) and ordinal (ordinal agreement).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from .call_schemas import LooseConfig, StrictModel


class _Signal(StrictModel):
    # The turns the signal was read from; the judge is shown only those (seed: send only
    # the relevant utterances).
    source_utterance_indices: list[int] = Field(default_factory=list)


class Entity(_Signal):
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)


class Topic(_Signal):
    name: str = Field(min_length=1)


class Aspect(_Signal):
    name: str = Field(min_length=1)
    polarity: Literal["positive", "negative", "neutral", "mixed"]
    intensity: float = Field(ge=0, le=1)


class KeyPhrase(_Signal):
    text: str = Field(min_length=1)
    relevance: float = Field(ge=0, le=1)


class VocabularyTerm(_Signal):
    term: str = Field(min_length=1)


class Metaphor(_Signal):
    text: str = Field(min_length=1)


class Objection(_Signal):
    objection: str = Field(min_length=1)
    response: str
    outcome: Literal["resolved", "partially_resolved", "unresolved"]


class CompetitorMention(_Signal):
    name: str = Field(min_length=1)
    sentiment: Literal["positive", "neutral", "negative"]
    context: str


ParticipationLevel = Literal["low", "medium", "high"]
QuestionDepth = Literal["shallow", "moderate", "deep"]
Energy = Literal["low", "medium", "high"]


class EngagementPhase(_Signal):
    phase: str = Field(min_length=1)
    participation_level: ParticipationLevel
    question_depth: QuestionDepth
    energy: Energy


@dataclass(frozen=True)
class SignalType:
    """How one signal type is evaluated."""

    name: str
    key: str
    threshold: float
    threshold_source: str
    categorical: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    ordinal: dict[str, tuple[str, ...]] = field(default_factory=dict)
    rubric_metric: str | None = None


ORDINAL_SCALES: dict[str, tuple[str, ...]] = {
    "participation_level": ("low", "medium", "high"),
    "question_depth": ("shallow", "moderate", "deep"),
    "energy": ("low", "medium", "high"),
}

SIGNAL_TYPES: dict[str, SignalType] = {
    t.name: t for t in (
        SignalType("entities", "name", 0.8, "seed: entity names", categorical=("type",)),
        SignalType("topics", "name", 0.5, "seed: topic names"),
        SignalType("aspects", "name", 0.6, "seed: aspect names", categorical=("polarity",),
                   numeric=("intensity",), rubric_metric="aspect_granularity"),
        SignalType("key_phrases", "text", 0.4, "seed: key phrases", numeric=("relevance",)),
        SignalType("vocabulary", "term", 0.8, "seed: vocabulary"),
        SignalType("metaphors", "text", 0.5, "seed: metaphors"),
        # The seed's table has no row for these; objections are paraphrased like topics and
        # competitors are names like entities.
        SignalType("objections", "objection", 0.5, "as topic names", categorical=("outcome",),
                   rubric_metric="objection_completeness"),
        SignalType("competitors", "name", 0.8, "as entity names", categorical=("sentiment",),
                   rubric_metric="competitor_context"),
        SignalType("engagement", "phase", 0.5, "as topic names", ordinal=ORDINAL_SCALES),
    )
}


def _known_types(data: Any) -> Any:
    if isinstance(data, dict):
        unknown = [k for k in data if k not in SIGNAL_TYPES]
        if unknown:
            raise ValueError(
                f"unknown signal type {', '.join(map(repr, unknown))} (known: "
                f"{', '.join(SIGNAL_TYPES)})")
    return data


class ExtractionOutput(StrictModel):
    """Signal lists by type; a type left out was not extracted (an empty list when
    evaluated)."""

    entities: list[Entity] | None = None
    topics: list[Topic] | None = None
    aspects: list[Aspect] | None = None
    key_phrases: list[KeyPhrase] | None = None
    vocabulary: list[VocabularyTerm] | None = None
    metaphors: list[Metaphor] | None = None
    objections: list[Objection] | None = None
    competitors: list[CompetitorMention] | None = None
    engagement: list[EngagementPhase] | None = None

    @model_validator(mode="before")
    @classmethod
    def _check_types(cls, data: Any) -> Any:
        return _known_types(data)

    def signals(self, signal_type: str) -> list[_Signal]:
        items: list[_Signal] | None = getattr(self, signal_type)
        return list(items or [])

    def given(self) -> list[str]:
        return [name for name in SIGNAL_TYPES if getattr(self, name) is not None]


Similarity = Literal["jaccard", "ratio", "token_set", "embedding"]
Baseline = Literal["entity_recall", "keyphrase_overlap", "sentiment_agreement"]
BASELINES: tuple[Baseline, ...] = ("entity_recall", "keyphrase_overlap", "sentiment_agreement")


class ExtractionConfig(LooseConfig):
    signal_types: list[str] | None = None
    similarity: Similarity = "jaccard"
    thresholds: dict[str, float] = Field(default_factory=dict)
    skip_llm_judge: bool = False
    baselines: bool | list[Baseline] = False

    @model_validator(mode="after")
    def _check(self) -> ExtractionConfig:
        for where, names in (("signal_types", self.signal_types or []),
                             ("thresholds", list(self.thresholds))):
            unknown = [n for n in names if n not in SIGNAL_TYPES]
            if unknown:
                raise ValueError(f"{where}: unknown signal type "
                                 f"{', '.join(map(repr, unknown))} (known: "
                                 f"{', '.join(SIGNAL_TYPES)})")
        listed = self.signal_types or []
        twice = sorted({n for n in listed if listed.count(n) > 1})
        if twice:
            # Each listed type is one term of the signal F1's mean: a type listed twice
            # weighed double.
            raise ValueError(f"signal_types: {', '.join(map(repr, twice))} listed more than "
                             "once")
        bad = [k for k, v in self.thresholds.items() if not 0 <= v < 1]
        if bad:
            # A pair matches only above its threshold, and no similarity exceeds 1.
            raise ValueError(f"thresholds: {', '.join(bad)} must be at least 0 and below 1 "
                             "(only pairs above the threshold match, so 1 would match nothing)")
        return self

    def threshold(self, signal_type: str) -> float:
        return self.thresholds.get(signal_type, SIGNAL_TYPES[signal_type].threshold)

    def enabled_baselines(self) -> tuple[Baseline, ...]:
        if self.baselines is True:
            return BASELINES
        if self.baselines is False:
            return ()
        return tuple(self.baselines)

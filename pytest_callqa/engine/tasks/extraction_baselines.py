"""Optional NLP baselines of the extraction family: spaCy entities, YAKE key phrases and
TextBlob polarity compared with what the model extracted. Each library is imported only when
its baseline runs, and a missing one leaves its baseline not scored."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Sequence
from typing import Any

from ..core.cases import GoldenCase
from ..core.memo import batch_memoised
from ..core.results import MetricResult
from ..text import token_jaccard
from .extraction_schemas import SIGNAL_TYPES, Aspect, Entity, ExtractionOutput, KeyPhrase

_INSTALL = {
    "spacy": "pip install spacy && python -m spacy download en_core_web_sm",
    "yake": "pip install yake",
    "textblob": "pip install textblob",
}
_SPACY_LABELS = frozenset({"PERSON", "ORG", "GPE", "LOC", "PRODUCT", "NORP", "FAC", "EVENT",
                           "WORK_OF_ART"})


@batch_memoised
def _installed(name: str) -> bool:
    # Searching the import path is most of a baseline's cost when its library is missing,
    # and every case of a batch asked again: the batch asks once per library.
    return importlib.util.find_spec(name) is not None


def optional_module(name: str) -> Any | None:
    """The module when it is installed, else None; imported only when a baseline asks."""
    if not _installed(name):
        return None
    return importlib.import_module(name)


@functools.cache
def _spacy_model() -> Any | None:
    spacy = optional_module("spacy")
    if spacy is None:
        return None
    try:
        return spacy.load("en_core_web_sm")
    except OSError:
        return None


def _missing(library: str, what: str) -> MetricResult:
    return MetricResult.not_scored(
        f"baseline skipped: {what} is not available ({_INSTALL[library]})")


def _covered(references: Sequence[str], extracted: Sequence[str], threshold: float) -> float:
    # As in the family's matching, a reference is covered only above the threshold.
    hits = sum(1 for r in references if any(token_jaccard(r, e) > threshold for e in extracted))
    return hits / len(references)


def baseline_entity_recall(transcript: str, output: ExtractionOutput) -> MetricResult:
    if optional_module("spacy") is None:
        return _missing("spacy", "spaCy")
    nlp = _spacy_model()
    if nlp is None:
        return _missing("spacy", "spaCy's en_core_web_sm model")
    found = list(dict.fromkeys(e.text for e in nlp(transcript).ents if e.label_ in _SPACY_LABELS))
    if not found:
        return MetricResult.not_scored("n/a: spaCy found no entity in the transcript")
    names = [s.name for s in output.signals("entities") if isinstance(s, Entity)]
    value = _covered(found, names, SIGNAL_TYPES["entities"].threshold)
    return MetricResult(value=value, reason=f"{value:.0%} of {len(found)} spaCy entities "
                        "extracted", details={"spacy_entities": found})


def baseline_keyphrase_overlap(transcript: str, output: ExtractionOutput,
                               top: int = 10) -> MetricResult:
    yake = optional_module("yake")
    if yake is None:
        return _missing("yake", "YAKE")
    phrases = [str(k[0]) for k in
               yake.KeywordExtractor(lan="en", n=3, top=top).extract_keywords(transcript)]
    if not phrases:
        return MetricResult.not_scored("n/a: YAKE found no key phrase in the transcript")
    extracted = [s.text for s in output.signals("key_phrases") if isinstance(s, KeyPhrase)]
    value = _covered(phrases, extracted, SIGNAL_TYPES["key_phrases"].threshold)
    return MetricResult(value=value, reason=f"{value:.0%} of YAKE's top {len(phrases)} "
                        "phrases extracted", details={"yake_phrases": phrases})


# TextBlob polarity beyond this counts as positive or negative.
_POLARITY_BAND = 0.1


def baseline_sentiment_agreement(case: GoldenCase, output: ExtractionOutput) -> MetricResult:
    textblob = optional_module("textblob")
    if textblob is None:
        return _missing("textblob", "TextBlob")
    checks = []
    for aspect in output.signals("aspects"):
        if not isinstance(aspect, Aspect):
            continue
        polarity = aspect.polarity
        turns = [case.transcript[i].text for i in aspect.source_utterance_indices
                 if 0 <= i < len(case.transcript)]
        if not turns or polarity == "mixed":
            continue
        score = sum(float(textblob.TextBlob(t).sentiment.polarity) for t in turns) / len(turns)
        label = ("positive" if score > _POLARITY_BAND
                 else "negative" if score < -_POLARITY_BAND else "neutral")
        checks.append({"aspect": aspect.name, "extracted": polarity,
                       "textblob": label, "agree": label == polarity})
    if not checks:
        return MetricResult.not_scored("n/a: no aspect with source turns and a single "
                                       "polarity")
    agree = sum(1 for c in checks if c["agree"])
    return MetricResult(value=agree / len(checks),
                        reason=f"{agree} of {len(checks)} aspects agree with TextBlob",
                        details={"aspects": checks})

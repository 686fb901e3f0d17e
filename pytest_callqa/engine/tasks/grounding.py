"""Grounding verdict: relevance, completeness and claim-based hallucination (seed 003).

**Golden case.** ``config.query`` is the question asked; the context the answer must be
grounded in is ``config.context`` (a passage or a list of passages) or, when absent, the
call ``transcript``. ``expected_outcome`` is ``{"answer": "..."}``, a reference answer: the
verdict does not use it (seed 003 is reference-free); ``reference_similarity`` reports how
close the answer is to it.

**Model output** — ``{"answer": "..."}``.

**Scores.** ``relevance = (TF-IDF cosine(query, answer) + token Jaccard(query, answer)) / 2``
(the TF-IDF space is fitted on the two texts); ``completeness`` = share of the query's
keywords (content words) present in the answer; ``hallucination = max(unsupported anchors /
anchors, drift penalty)``, where the anchors are the answer's numbers, dates and assertive
subject–verb–object claims, each checked against the context (a claim's subject and object
must occur close together inside one passage), and the drift penalty is 0.2 when fewer than
20 % of the answer's word bigrams occur in a passage. The verdict, in
order: FAIL if hallucination > 0.5, FAIL if relevance < 0.1, WARN if completeness < 0.6,
PASS otherwise (SPEC 5.5: the verdict's 0.5 stands over the 0.6 of the seed's hallucination
section). The task score maps the verdict: PASS 1.0, WARN 0.5, FAIL 0.0. Hallucination over
the case's threshold (``hallucination_fail_above``, default 0.5) is also a blocker.

The claims are found by English fact verbs and hedges: in an answer not in English
(:func:`reads_as_english`) none would be found and a made-up one passed, so its hallucination
is *not scored* and its verdict, which checks hallucination first, is undecided (not
scored, the task score unknown) unless relevance fails it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from ..anchor_units import figure_held, figures_of, held_per_anchor
from ..core.judging import JudgeVerdict
from ..core.memo import batch_memoised
from ..core.metrics import BAND_EDGES, CASE_BAR, Bands, MetricSpec
from ..core.results import MetricResult
from ..core.unicode_text import has_words
from ..text import content_units, token_jaccard, units, unsegmented
from ..tfidf import word_tfidf_cosine
from .base import structure_spec
from .call_schemas import LooseConfig, StrictModel
from .family_base import FamilyTask
from .grounding_claims import (
    as_passages,
    claim_supported,
    claim_word,
    claim_words,
    extract_claims,
    reads_as_english,
    word_stem,
)

if TYPE_CHECKING:
    from ..core.cases import GoldenCase
    from ..core.context import EvalContext

TASK = "grounding"
RELEVANCE_FAIL_BELOW = 0.1
COMPLETENESS_WARN_BELOW = 0.6
HALLUCINATION_FAIL_ABOVE = 0.5
# The seed's hallucination section names 0.6; its verdict section (which SPEC 5.5 keeps)
# fails above 0.5. Kept for reference in the docs and tests.
SECTION_HALLUCINATION_THRESHOLD = 0.6
DRIFT_OVERLAP_BELOW = 0.2
DRIFT_PENALTY = 0.2
VERDICT_SCORES = {"PASS": 1.0, "WARN": 0.5, "FAIL": 0.0}

Verdict = Literal["PASS", "WARN", "FAIL"]


def hallucination_bands(fail_above: float) -> Bands:
    """Hallucination is a blocker exactly when it fails the verdict: above ``fail_above``."""
    return Bands(good=0.0, acceptable=fail_above, blocker=fail_above, higher_is_better=False)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(id="relevance", task=TASK, name="Relevance",
               description="(TF-IDF cosine + token Jaccard) / 2 of query and answer.",
               scale="0-1", threshold="< 0.10 → FAIL", bands=Bands(good=RELEVANCE_FAIL_BELOW)),
    MetricSpec(id="completeness", task=TASK, name="Completeness",
               description="Share of the query's keywords present in the answer.",
               scale="0-1", threshold="< 0.60 → WARN",
               bands=Bands(good=COMPLETENESS_WARN_BELOW, acceptable=0.0)),
    MetricSpec(id="hallucination", task=TASK, name="Hallucination",
               description="max(unsupported anchors / anchors, drift penalty); anchors are "
                           "numbers, dates and assertive claims checked against the context.",
               scale="0-1", threshold="> 0.50 → FAIL (blocker)",
               bands=hallucination_bands(HALLUCINATION_FAIL_ABOVE), blocker=True),
    MetricSpec(id="grounding_verdict", task=TASK, name="Grounding Verdict",
               description="PASS 1.0 / WARN 0.5 / FAIL 0.0 by the seed's ordered rules.",
               scale="1/0.5/0", threshold="PASS", bands=Bands(good=1.0, acceptable=0.5),
               weight=1.0),
    MetricSpec(id="reference_similarity", task=TASK, name="Reference Similarity",
               description="TF-IDF cosine of the answer and expected_outcome.answer "
                           "(reported, not part of the verdict).",
               scale="0-1", threshold="reference only"),
    structure_spec(TASK),
)


class GroundingOutput(StrictModel):
    answer: str


class GroundingConfig(LooseConfig):
    query: str = Field(min_length=1)
    context: list[str] | None = None
    relevance_fail_below: float = Field(default=RELEVANCE_FAIL_BELOW, ge=0, le=1)
    completeness_warn_below: float = Field(default=COMPLETENESS_WARN_BELOW, ge=0, le=1)
    hallucination_fail_above: float = Field(default=HALLUCINATION_FAIL_ABOVE, ge=0, le=1)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is blank")
        return value

    @field_validator("context", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


# --- the seed's scores -------------------------------------------------------------------------


def tfidf_cosine(a: str, b: str) -> float:
    """Cosine of two texts in a word TF-IDF space fitted on the pair (0.0 when neither has
    a word of two letters or more); a run of a script written without spaces counts as its
    character pairs, as every score of this family reads it."""
    return word_tfidf_cosine(_pairs_as_words(a), _pairs_as_words(b))


def _pairs_as_words(text: str) -> str:
    # The word space would take a run such as "隔夜运费是多少" for one word, which no
    # other text shares.
    return " ".join(units(text)) if unsegmented(text) else text


def relevance(query: str, response: str) -> tuple[float, float, float]:
    """``(S_rel, S_cosine, S_jaccard)`` with ``S_rel = (S_cosine + S_jaccard) / 2``; the
    Jaccard of the two texts' :func:`~pytest_callqa.engine.text.units`, 0.0 for a word-less
    text (it answers nothing)."""
    cosine = tfidf_cosine(query, response)
    jaccard = token_jaccard(query, response)
    return (cosine + jaccard) / 2, cosine, jaccard


# Words that shape a question rather than name its topic ("how much", "tell me").
QUERY_FILLERS = frozenset({"much", "many", "tell", "please", "know", "explain", "describe",
                           "give", "let", "say", "want", "need", "like"})


def query_keywords(query: str) -> list[str]:
    """``ExtractKeywords(Q)``: the query's distinct content words, question fillers aside,
    a run of a script written without spaces as its character pairs ("运费" of "隔夜运费是多少")."""
    return list(dict.fromkeys(t for t in content_units(query) if t not in QUERY_FILLERS))


def completeness(query: str, response: str, *,
                 keywords: Sequence[str] | None = None) -> tuple[float, list[str]]:
    """``|K_Q ∩ Tokens(R)| / |K_Q|`` and the keywords missing; 1.0 when K_Q is empty.

    A keyword is present when the answer has it up to a plural or tense ending ("cost" and
    "costs"). ``keywords`` are the query's :func:`query_keywords`, when the caller has them.
    """
    if keywords is None:
        keywords = query_keywords(query)
    if not keywords:
        return 1.0, []
    present = {word_stem(t) for t in units(response)}
    missing = [k for k in keywords if word_stem(k) not in present]
    return (len(keywords) - len(missing)) / len(keywords), missing


def ngram_overlap(response: str, context: str | Sequence[str], n: int = 2) -> float:
    """Share of the response's word n-grams that occur in a passage of the context (unigrams
    for a one-word response; 0.0 for an empty one), a run of a script written without spaces
    read as its character pairs. No n-gram spans two passages."""
    r = units(response)
    size = n if len(r) >= n else 1
    grams = {tuple(r[i:i + size]) for i in range(len(r) - size + 1)}
    if not grams:
        return 0.0
    context_grams: set[tuple[str, ...]] = set()
    for passage in as_passages(context):
        context_grams.update(_grams(passage, size))
    return len(grams & context_grams) / len(grams)


@batch_memoised
def _grams(passage: str, size: int) -> frozenset[tuple[str, ...]]:
    """The word n-grams of a passage: every model's answer to a case reads the same ones."""
    c = units(passage)
    return frozenset(tuple(c[i:i + size]) for i in range(len(c) - size + 1))


def drift_penalty(overlap: float) -> float:
    """The seed's topic-drift gate: 0.2 when the n-gram overlap is below 0.2, else 0."""
    return DRIFT_PENALTY if overlap < DRIFT_OVERLAP_BELOW else 0.0


@dataclass
class HallucinationCheck:
    score: float
    claims_score: float
    drift: float
    overlap: float
    anchors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def unsupported(self) -> list[dict[str, Any]]:
        return [a for a in self.anchors if a["supported"] is False]

    @property
    def undecided(self) -> list[dict[str, Any]]:
        """Figures only a word no table maps may tell from the context's: out of the share."""
        return [a for a in self.anchors if a["supported"] is None]


def hallucination(response: str, context: str | Sequence[str]) -> HallucinationCheck:
    """``S_hall = max(S_claims, P_drift)`` with ``S_claims = unsupported / anchors``.

    ``context`` is one passage or a list of them; a number or date is supported when any
    passage has it (:func:`figure_held`), a claim only when one passage has its subject and
    object close together and every figure its object states is one a passage has. A figure
    :func:`figure_held` cannot decide is left out of the share, as translation's critical
    facts leave it.
    """
    passages = as_passages(context)
    told = [figures_of(passage) for passage in passages]
    figures = held_per_anchor((f[0], figure_held(f, told))
                              for f in figures_of(response)).items()
    anchors: list[dict[str, Any]] = [
        {"kind": "date" if a.kind in ("date", "time") else "numeric", "text": a.text,
         "supported": held} for a, held in figures]
    for claim in extract_claims(response):
        # Words close together cannot tell "25%" from "$25": the claim states its figure, in
        # its object or its subject ("The refund of $200 was approved": refund 200), a scaled
        # one by its amount ("40 billion" is the claim's "40000000000").
        stated = {claim_word(w) for w in claim.subject + claim.object}
        misstated = any(held is False and a.text in claim.sentence
                        and not stated.isdisjoint(claim_words(a.text))
                        for a, held in figures)
        anchors.append({"kind": "claim", "text": claim.sentence,
                        "subject": " ".join(claim.subject), "verb": claim.verb,
                        "object": " ".join(claim.object),
                        "supported": not misstated and claim_supported(claim, passages)})
    decided = [a["supported"] for a in anchors if a["supported"] is not None]
    claims_score = decided.count(False) / len(decided) if decided else 0.0
    overlap = ngram_overlap(response, passages)
    drift = drift_penalty(overlap)
    return HallucinationCheck(max(claims_score, drift), claims_score, drift, overlap, anchors)


def verdict(
    hallucination_score: float | None, relevance_score: float, completeness_score: float, *,
    hallucination_fail_above: float = HALLUCINATION_FAIL_ABOVE,
    relevance_fail_below: float = RELEVANCE_FAIL_BELOW,
    completeness_warn_below: float = COMPLETENESS_WARN_BELOW,
) -> tuple[Verdict | None, str]:
    """The seed's hierarchy: safety, then quality, then detail. Without a hallucination
    score (None: not scored) only an irrelevant answer is decided, FAIL either way; any
    other is undecided (None), as safety, which it cannot check, comes first."""
    if hallucination_score is not None and hallucination_score > hallucination_fail_above:
        return "FAIL", (f"hallucination {hallucination_score:.2f} > "
                        f"{hallucination_fail_above:g} (high hallucination risk)")
    if relevance_score < relevance_fail_below:
        return "FAIL", f"relevance {relevance_score:.2f} < {relevance_fail_below:g} (irrelevant)"
    if hallucination_score is None:
        return None, ("undecided: hallucination not scored, and the verdict checks it first; "
                      "relevance and completeness alone would give "
                      + ("WARN" if completeness_score < completeness_warn_below else "PASS"))
    if completeness_score < completeness_warn_below:
        return "WARN", (f"completeness {completeness_score:.2f} < {completeness_warn_below:g} "
                        "(potentially incomplete)")
    return "PASS", "grounded, relevant and complete"


def context_passages(case: GoldenCase, config: GroundingConfig) -> list[str]:
    """The passages of ``config.context`` that say something (a letter or a digit), or else
    the transcript as one passage (its turns are one conversation, so a claim may draw on
    neighbouring turns) if it says something: a passage of "..." grounds nothing."""
    passages = [p for p in (config.context or []) if has_words(p)]
    if passages:
        return passages
    return [case.transcript_plain] if has_words(case.transcript_plain) else []


# --- the task ----------------------------------------------------------------------------------


class GroundingTask(FamilyTask):
    name = TASK
    title = "Grounding"
    metrics = METRICS
    output_model = GroundingOutput
    config_model = GroundingConfig
    # The context may come from config.context instead of a transcript.
    needs_transcript = False

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        problems = []
        if config.context is not None and not any(p.strip() for p in config.context):
            problems.append("config.context: every passage is empty")
        elif config.context is not None and not any(map(has_words, config.context)):
            problems.append("config.context: no passage has a letter or a digit")
        if not context_passages(case, config):
            problems.append("config.context: no context — give passages in config.context or "
                            "a transcript; an answer cannot be grounded in nothing")
        if not expected.answer.strip():
            problems.append("expected_outcome.answer: empty reference answer")
        return problems

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        config: GroundingConfig = ctx.config  # type: ignore[assignment]
        answer: str = ctx.parsed.answer  # type: ignore[union-attr]
        reference: str = ctx.expected.answer  # type: ignore[attr-defined]
        context = context_passages(ctx.case, config)
        rel, cosine, jaccard = relevance(config.query, answer)
        # Worked out once: the metric reports them too.
        keywords = query_keywords(config.query)
        comp, missing = completeness(config.query, answer, keywords=keywords)
        hall = hallucination(answer, context)
        english = reads_as_english(answer)
        decided, why = verdict(
            hall.score if english else None, rel, comp,
            hallucination_fail_above=config.hallucination_fail_above,
            relevance_fail_below=config.relevance_fail_below,
            completeness_warn_below=config.completeness_warn_below)
        unsupported, undecided = hall.unsupported, hall.undecided
        counted = len(hall.anchors) - len(undecided)
        limit_bands = hallucination_bands(config.hallucination_fail_above)
        hall_spec = self.spec("hallucination")
        if limit_bands != hall_spec.bands:
            # Copied only for a case's own threshold: dataclasses.replace for every case
            # cost the family ~2 % (the default's bands are the spec's already).
            hall_spec = replace(hall_spec, bands=limit_bands)
        m = {
            "relevance": self.spec("relevance").result(
                rel, f"(cosine {cosine:.3f} + Jaccard {jaccard:.3f}) / 2",
                cosine=cosine, jaccard=jaccard),
            "completeness": self.spec("completeness").result(
                comp, f"{comp:.0%} of the query's keywords in the answer"
                + (f"; missing: {', '.join(missing)}" if missing else ""),
                keywords=keywords, missing=missing),
            # The case's threshold rates it too: a blocker fixed at the default would block a
            # verdict the case lets pass, or let through one it fails on safety.
            "hallucination": hall_spec.result(
                hall.score if english else None,
                _unread_claims(unsupported) if not english else
                f"{len(unsupported)} of {counted} anchors unsupported by the context "
                f"(S_claims {hall.claims_score:.2f}); n-gram overlap {hall.overlap:.2f}"
                + (f" < {DRIFT_OVERLAP_BELOW:g}: drift penalty {hall.drift:g}" if hall.drift
                   else "")
                + (": " + "; ".join(f"{a['kind']} {a['text']!r}" for a in unsupported)
                   if unsupported else "")
                + ("; undecided, left out (a word no table maps may be its unit): "
                   + ", ".join(repr(a["text"]) for a in undecided) if undecided else ""),
                claims_score=hall.claims_score, drift_penalty=hall.drift,
                ngram_overlap=hall.overlap, anchors=hall.anchors,
                numerator=len(unsupported), denominator=counted,
                **({CASE_BAR: True, BAND_EDGES: list(limit_bands.edges),
                    "threshold": f"> {config.hallucination_fail_above:g} → FAIL (blocker)"}
                   if config.hallucination_fail_above != HALLUCINATION_FAIL_ABOVE else {})),
        }
        score = None if decided is None else VERDICT_SCORES[decided]
        m["grounding_verdict"] = self.spec("grounding_verdict").result(
            score, why if decided is None else f"{decided}: {why}", verdict=decided,
            thresholds={"hallucination_fail_above": config.hallucination_fail_above,
                        "relevance_fail_below": config.relevance_fail_below,
                        "completeness_warn_below": config.completeness_warn_below})
        ref = tfidf_cosine(answer, reference)
        m["reference_similarity"] = self.spec("reference_similarity").result(
            ref, f"TF-IDF cosine {ref:.3f} to the reference answer")
        return m, score, []


def _unread_claims(unsupported: Sequence[Mapping[str, Any]]) -> str:
    """Why the hallucination of an answer not in English is not scored. Its numbers and
    dates are checked, but the seed's share counts its claims too: from the numbers alone it
    would be another metric."""
    missing = [repr(a["text"]) for a in unsupported if a["kind"] != "claim"]
    return ("not scored: the answer is not in English, whose fact verbs and hedges alone "
            "the claim check reads, so its claims cannot be checked offline"
            + ("; numbers and dates not in the context: " + ", ".join(missing)
               if missing else ""))

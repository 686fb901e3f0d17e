"""Layer 2 — the optional standard benchmarks of seed 000, computed per case of the four
call-intelligence tasks and binarised per model in the scorecard."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.judging import NO_FACT, JudgeRequest, JudgeVerdict, ReplyField
from ..core.memo import ByIdentity, batch_memoised
from ..core.numbers import finite_number
from ..core.results import NOT_APPLICABLE, MetricResult
from ..embeddings import pair_similarity
from ..matching import match_exact, match_lists
from ..text import content_tokens, normalize
from ..tfidf import is_blank
from .benchmark_specs import BENCHMARK_SPECS
from .instructions import COMMON_RULES, TASK_INSTRUCTIONS
from .text_analysis import (
    FACT_COUNTS,
    fact_counts,
    felt_top,
    summary_facts,
)

if TYPE_CHECKING:
    from ..core.context import EvalContext

CLAIM_MATCH_THRESHOLD = 0.5

_JUDGED = ("contextual_precision", "contextual_recall", "argument_correctness",
           "instruction_following")


@dataclass(frozen=True)
class Views:
    """What the generic criteria look at in one task's output and truth."""

    claims: tuple[str, ...]
    expected_claims: tuple[str, ...]
    closed: tuple[tuple[str, str | None, str], ...]
    answer: str
    expected_answer: str
    exact_claims: bool = False


@dataclass(frozen=True)
class Truth:
    """The truth's side of a task's views: the same for every model's output of a case, so
    worked out once per case in a batch (it was a third to a half of each output's views)."""

    claims: tuple[str, ...]
    answer: str
    # Each closed-form field: its name, the key the output's value is found under, and the
    # truth's value.
    closed: tuple[tuple[str, Any, str], ...]
    # The text task's dominant emotion as the truth gives it (None: the truth has none).
    top: str | None = None


def _qa_truth(exp: Any, config: Any) -> Truth:
    reasons = tuple(q.reason for q in exp.questions)
    return Truth(claims=reasons, answer=" ".join(reasons),
                 closed=tuple((q.question_id, q.question_id, f"{q.score:g}")
                              for q in exp.questions))


def _qa(out: Any, truth: Truth) -> Views:
    given = {q.question_id: q for q in out.questions}
    reasons = tuple(q.reason for q in out.questions)
    return Views(
        claims=reasons, expected_claims=truth.claims,
        closed=tuple((name, f"{given[key].score:g}" if key in given else None, want)
                     for name, key, want in truth.closed),
        answer=" ".join(reasons), expected_answer=truth.answer,
    )


def _entity_truth(exp: Any, config: Any) -> Truth:
    truth = (*exp.detected_keywords, *exp.detected_topics)
    truth_n = {normalize(x) for x in truth}
    configured = [*config.keywords, *config.topics]
    return Truth(claims=truth, answer=", ".join(truth),
                 closed=tuple((e, key, "present" if key in truth_n else "absent")
                              for e in configured for key in (normalize(e),)))


def _entity(out: Any, truth: Truth) -> Views:
    found = (*out.detected_keywords, *out.detected_topics)
    found_n = {normalize(x) for x in found}
    return Views(
        claims=found, expected_claims=truth.claims,
        closed=tuple((name, "present" if key in found_n else "absent", want)
                     for name, key, want in truth.closed),
        answer=", ".join(found), expected_answer=truth.answer, exact_claims=True,
    )


def _text_truth(exp: Any, config: Any) -> Truth:
    # The dominant emotion as its own metric reads it: a truth that gives every emotion 0
    # (or none) has none, and leaves the field out. Compared as all labels tied, it matched
    # an output of the same zeros and missed any other, where that metric is not scored.
    expected_top = felt_top(exp.emotion)
    return Truth(
        claims=tuple(summary_facts(exp)),
        answer=" ".join([exp.summary.call_purpose, *exp.summary.highlights]),
        closed=tuple((f"sentence {s.sentence_id}", str(s.sentence_id), s.label)
                     for s in exp.sentiment if s.label is not None),
        top="+".join(sorted(expected_top)) if expected_top else None,
    )


def _text(out: Any, truth: Truth) -> Views:
    labels = {str(s.sentence_id): s.label for s in out.sentiment}
    closed: list[tuple[str, str | None, str]] = [
        (name, labels.get(key), want) for name, key, want in truth.closed]
    if truth.top is not None:
        closed.append(("dominant_emotion", "+".join(sorted(felt_top(out.emotion))) or None,
                       truth.top))
    return Views(
        claims=tuple(summary_facts(out)), expected_claims=truth.claims,
        closed=tuple(closed),
        answer=" ".join([out.summary.call_purpose, *out.summary.highlights]),
        expected_answer=truth.answer,
    )


def _translation_truth(exp: Any, config: Any) -> Truth:
    # A term is looked up among the output's terms, an entity among its entities.
    return Truth(
        claims=tuple(s.translated_text for s in exp.sentence_translations),
        answer=exp.full_translation,
        closed=tuple(
            [(t.term, ("term", normalize(t.term)), t.handled_as)
             for t in exp.domain_terms_handled]
            + [(e.entity, ("entity", normalize(e.entity)), e.handled_as)
               for e in exp.named_entities_handled]),
    )


def _translation(out: Any, truth: Truth) -> Views:
    handled = {("term", normalize(t.term)): t.handled_as for t in out.domain_terms_handled}
    handled.update({("entity", normalize(e.entity)): e.handled_as
                    for e in out.named_entities_handled})
    return Views(
        claims=tuple(s.translated_text for s in out.sentence_translations),
        expected_claims=truth.claims,
        closed=tuple((name, handled.get(key), want) for name, key, want in truth.closed),
        answer=out.full_translation, expected_answer=truth.answer,
    )


# Each task's truth side, from its truth and the case config, and its output side, from a
# parsed output and that truth side.
TRUTHS: dict[str, Callable[[Any, Any], Truth]] = {
    "qa": _qa_truth, "entity": _entity_truth, "text": _text_truth,
    "translation": _translation_truth,
}
VIEWS: dict[str, Callable[[Any, Truth], Views]] = {
    "qa": _qa, "entity": _entity, "text": _text, "translation": _translation,
}


def _views(task: str, ctx: EvalContext) -> Views | None:
    """``ctx``'s views for ``task`` (None for a task without them): planning, prefetching
    and scoring an output each read them, worked out once per batch."""
    if task not in VIEWS:
        return None
    return _output_views(task, ByIdentity(ctx.parsed), ByIdentity(ctx.expected),
                         ByIdentity(ctx.config))


@batch_memoised
def _output_views(task: str, out: ByIdentity[Any], exp: ByIdentity[Any],
                  config: ByIdentity[Any]) -> Views:
    return VIEWS[task](out.value, _truth(task, exp, config))


@batch_memoised
def _truth(task: str, exp: ByIdentity[Any], config: ByIdentity[Any]) -> Truth:
    return TRUTHS[task](exp.value, config.value)


@batch_memoised
def _token_texts(claims: tuple[str, ...]) -> tuple[str, ...]:
    """Each claim as its content tokens joined by spaces: every model's output of a case is
    matched against the same truth claims."""
    return tuple(" ".join(content_tokens(c)) for c in claims)


def _nothing_to_count(views: Views) -> dict[str, str]:
    """The judged criteria whose seed ratio has nothing to count in ``views`` (a share of
    no claim, or of no piece of the call), by why they are not scored: no judge is asked
    them, so the LLM judge and the offline one leave them alike."""
    unasked = {}
    if not views.claims:
        unasked["faithfulness"] = NO_FACT
        unasked["contextual_precision"] = ("not scored: the output makes no claim, so it "
                                           "uses no piece of the call")
    if not views.expected_claims:
        unasked["contextual_recall"] = ("not scored: expected_outcome makes no claim, so it "
                                        "needs no piece of the call")
    return unasked


# Seed 000's Layer 2 criteria as the judge applies them: the formula, and the steps to it.
STEPS: dict[str, str] = {
    "faithfulness": (
        "Faithfulness = claims_supported / total_claims. Steps: 1. take each fact listed in "
        "focus.facts; 2. decide whether the transcript or expected_outcome supports it (a "
        "fact found in neither is unsupported, e.g. an offered voucher nobody mentioned); "
        "3. count supported and unsupported facts; 4. score supported / total."),
    "contextual_precision": (
        "Contextual precision = relevant_pieces_used / total_pieces_referenced. Steps: 1. "
        "take each piece of the call the output relies on (focus.claims); 2. decide whether "
        "expected_outcome needs it (it is among or supports focus.expected_claims); 3. score "
        "the needed pieces / all pieces used (1.0 when none is used)."),
    "contextual_recall": (
        "Contextual recall = relevant_pieces_used / total_relevant_in_input. Steps: 1. take "
        "each piece expected_outcome needs (focus.expected_claims); 2. decide whether the "
        "output uses it (focus.claims); 3. score the pieces used / pieces needed (1.0 when "
        "none is needed)."),
    "argument_correctness": (
        "Argument correctness = mean of step scores. Steps: 1. split the output's reasoning "
        "into its steps; 2. compare each with the reasoning of expected_outcome: 1.0 sound, "
        "0.5 partly right (e.g. the right conclusion for a wrong reason), 0.0 wrong; 3. score "
        "the mean of the step scores (steps 0 when the output gives no reasoning)."),
    "instruction_following": (
        "Instruction following = instructions_followed / total_instructions. Steps: 1. list "
        "every instruction of focus.instructions_given (the task's prompt, its output "
        "structure rules and the case config); 2. decide for each whether the output follows "
        "it, expected_outcome being a compliant output; 3. score followed / total."),
}
_STEP_COUNTS: dict[str, tuple[ReplyField, ...]] = {
    "faithfulness": FACT_COUNTS,
    "contextual_precision": (
        ("relevant_used", "count", "pieces used that expected_outcome needs"),
        ("referenced", "count", "pieces of the call the output uses")),
    "contextual_recall": (
        ("relevant_used", "count", "needed pieces the output uses"),
        ("needed", "count", "pieces expected_outcome needs")),
    "argument_correctness": (
        ("steps", "count", "reasoning steps judged"),),
    "instruction_following": (
        ("followed", "count", "instructions the output follows"),
        ("instructions", "count", "instructions listed")),
}


# What none of the count that is the whole of each judged criterion's share (the last of
# its _STEP_COUNTS) means: the seed's mean of no step score (a text or translation output
# reasons in no step) or share of no piece is no number, whatever score the judge gave.
_NONE_OF_THE_WHOLE: dict[str, str] = {
    "contextual_precision": "the output uses no piece of the call",
    "contextual_recall": "expected_outcome needs no piece of the call",
    "argument_correctness": "no reasoning step",
    "instruction_following": "no instruction listed",
}


# Each judged criterion's instructions: its description and its steps.
_CRITERION_INSTRUCTIONS = {metric_id: f"{BENCHMARK_SPECS[metric_id].description}\n\n{steps}"
                           for metric_id, steps in STEPS.items()}


def _request(task: str, ctx: EvalContext, metric_id: str,
             focus: dict[str, object]) -> JudgeRequest:
    # ``focus`` is the request's own: plan_benchmarks builds one per request.
    return JudgeRequest(
        case=ctx.case, task=task, metric=metric_id, scale="unit",
        instructions=_CRITERION_INSTRUCTIONS[metric_id],
        model_output=ctx.output, focus=focus, reply_fields=_STEP_COUNTS[metric_id],
    )


# What the model was asked, per task: the built-in prompt's instructions.
_RULES = COMMON_RULES.format(structure="(the task's output structure)")
_INSTRUCTIONS_GIVEN = {task: f"{TASK_INSTRUCTIONS.get(task, '')}\n\n{_RULES}" for task in VIEWS}


def plan_benchmarks(task: str, ctx: EvalContext) -> list[JudgeRequest]:
    """The judge requests of the benchmarks for an output of ``task`` (none for a task
    without a benchmark view)."""
    views = _views(task, ctx)
    if views is None:
        return []
    unasked = _nothing_to_count(views)
    requests = []
    claims = list(views.claims)
    # The text task already asks the judge about exactly these facts (fabrication).
    if task != "text" and "faithfulness" not in unasked:
        requests.append(_request(task, ctx, "faithfulness", {"facts": claims}))
    shared = {"claims": claims, "expected_claims": list(views.expected_claims)}
    for metric_id in _JUDGED:
        if metric_id in unasked:
            continue
        focus: dict[str, object] = dict(shared)
        if metric_id == "instruction_following":
            focus["instructions_given"] = _INSTRUCTIONS_GIVEN[task]
        requests.append(_request(task, ctx, metric_id, focus))
    return requests


def similarity_pairs(task: str, ctx: EvalContext) -> list[tuple[list[str], list[str]]]:
    """The ``pair_similarity`` arguments of :func:`score_benchmarks` for ``ctx`` (answer
    relevancy)."""
    views = _views(task, ctx)
    if views is None:
        return []
    return [([views.answer], [views.expected_answer])]


def _spec_result(
    metric_id: str, value: float | None, reason: str, **details: object
) -> MetricResult:
    return BENCHMARK_SPECS[metric_id].result(value, reason, **details)


def _counts_none(metric_id: str, verdict: JudgeVerdict) -> bool:
    """Whether ``verdict`` counts nothing in the whole of ``metric_id``'s share."""
    whole = _STEP_COUNTS[metric_id][-1][0]
    count = verdict.details.get(whole)
    return finite_number(count) and count == 0


def score_benchmarks(
    task: str, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
) -> dict[str, MetricResult]:
    views = _views(task, ctx)
    if views is None:
        return {}
    unasked = _nothing_to_count(views)
    m: dict[str, MetricResult] = {}
    facts = verdicts.get("fabrication_free_rate" if task == "text" else "faithfulness")
    if "faithfulness" in unasked:
        m["faithfulness"] = MetricResult.not_scored(unasked["faithfulness"])
        m["hallucination_rate"] = MetricResult.not_scored(unasked["faithfulness"])
    elif facts is None or facts.score is None:
        why = facts.reason if facts else "no judge verdict"
        # The rate is computed from the same verdict: the judge's failure, not a metric it
        # cannot estimate (which the benchmark score leaves out as if never asked).
        unknown = (MetricResult.judge_failed if facts is not None and facts.judge_error
                   else MetricResult.not_scored)
        m["faithfulness"] = unknown(why)
        m["hallucination_rate"] = unknown(why)
    else:
        # The facts the verdict decided, as the fabrication-free rate counts them.
        n, unsupported = fact_counts(facts.details, facts.score, len(views.claims))
        if unsupported is None:
            why = (f"the judge counted {facts.details.get('unsupported')!r} unsupported "
                   f"facts of the {n} it was shown")
            m["faithfulness"] = MetricResult.judge_failed(why)
            m["hallucination_rate"] = MetricResult.judge_failed(why)
        else:
            m["faithfulness"] = _spec_result("faithfulness", facts.score, facts.reason)
            m["hallucination_rate"] = _spec_result(
                "hallucination_rate", unsupported / n, facts.reason,
                numerator=unsupported, denominator=n)
            m["faithfulness"].flagged = m["hallucination_rate"].flagged = facts.flagged

    if is_blank(views.answer) and is_blank(views.expected_answer):
        # Nothing expected and nothing given (a call without entities): right, but the
        # cosine of two empty texts is no number. Scored 0, the blank pair failed two
        # criteria of an output that matched its truth.
        empty = f"{NOT_APPLICABLE[0]}: the output and the truth are both empty"
        m["answer_relevancy"] = MetricResult.not_scored(empty)
        m["answer_correctness"] = MetricResult.not_scored(empty)
    else:
        sim = float(pair_similarity(ctx.embedder, [views.answer], [views.expected_answer])[0])
        m["answer_relevancy"] = _spec_result(
            "answer_relevancy", sim, f"cosine {sim:.2f} ({ctx.embedder.name})")
        if views.exact_claims:
            match = match_exact(views.claims, views.expected_claims)
        else:
            match = match_lists(_token_texts(views.claims), _token_texts(views.expected_claims),
                                method="jaccard", threshold=CLAIM_MATCH_THRESHOLD)
        m["answer_correctness"] = _spec_result(
            "answer_correctness", 0.5 * match.f1 + 0.5 * sim,
            f"fact F1 {match.f1:.2f}, similarity {sim:.2f}", f1=match.f1, similarity=sim)

    for metric_id in _JUDGED:
        verdict = verdicts.get(metric_id)
        if metric_id in unasked:
            m[metric_id] = MetricResult.not_scored(unasked[metric_id])
        elif verdict is None or verdict.score is None:
            m[metric_id] = MetricResult.not_scored(verdict.reason if verdict else "no verdict")
        elif _counts_none(metric_id, verdict):
            m[metric_id] = MetricResult.not_scored(f"not scored: {_NONE_OF_THE_WHOLE[metric_id]}",
                                                   **verdict.details)
        else:
            m[metric_id] = _spec_result(metric_id, verdict.score, verdict.reason,
                                        **verdict.details)
            m[metric_id].flagged = verdict.flagged
    precision, recall = m["contextual_precision"], m["contextual_recall"]
    if precision.value is not None and recall.value is not None:
        m["contextual_relevancy"] = _spec_result(
            "contextual_relevancy", (precision.value + recall.value) / 2,
            "mean of contextual precision and recall")
    elif any(v is not None and v.judge_error for v in (
            verdicts.get("contextual_precision"), verdicts.get("contextual_recall"))):
        m["contextual_relevancy"] = MetricResult.judge_failed(
            "computed from contextual precision and recall, which the judge could not score")
    else:
        m["contextual_relevancy"] = MetricResult.not_scored(
            "contextual precision or recall not scored")

    if views.closed:
        hits = [f for f, got, want in views.closed
                if got is not None and (got == want or normalize(got) == normalize(want))]
        m["exact_match"] = _spec_result(
            "exact_match", len(hits) / len(views.closed),
            f"{len(hits)} of {len(views.closed)} closed-form fields match exactly")
    else:
        m["exact_match"] = MetricResult.not_scored("n/a: no closed-form field")
    return m

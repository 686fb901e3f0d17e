"""The evaluation phases around a task: the benchmarks it gets, and what a verdict the judge
could not give does to a result and to the scorecard."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.context import Deferred, EvalContext
from pytest_callqa.engine.core.judging import JudgeRequest, JudgeVerdict
from pytest_callqa.engine.core.metrics import MetricSpec
from pytest_callqa.engine.core.results import JudgeUnavailable, MetricResult, TaskResult
from pytest_callqa.engine.evaluate import evaluate, evaluate_many, finish, judge_batch, prepare
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import load_case_file
from pytest_callqa.engine.registry import Registry
from pytest_callqa.engine.scorecard import build_scorecard

from .helpers import TFIDF, make_case

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"


def example(case_id: str, model: str = "northwind-large") -> tuple[GoldenCase, Any]:
    task = case_id.split("-")[0]
    [case] = load_case_file(EXAMPLE / "cases" / task / f"{case_id}.yaml")
    output = json.loads((EXAMPLE / "outputs" / model / f"{case_id}.json").read_text())
    return case, output


class Output(BaseModel):
    answer: str


class OwnTask:
    """A project's own task spec, not built on the engine's task classes."""

    name = "qa"
    title = "Own QA"
    metrics = (MetricSpec(id="answer", task="qa", name="Answer", description="d",
                          scale="0-1", threshold=">= 1"),)
    output_model = Output
    config_model = Output

    def case_models(self, case: GoldenCase) -> tuple[BaseModel, BaseModel]:
        return Output(answer="x"), Output(answer="x")

    def check_case(self, case: GoldenCase) -> list[str]:
        return []

    def output_problems(self, ctx: EvalContext) -> list[str]:
        return []

    def plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        return []

    def score(self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]) -> TaskResult:
        return TaskResult(task="qa", case_id=ctx.case.id, score=0.0, valid=True, blocked=True,
                          blockers=[], metrics={"answer": MetricResult(value=None,
                                                                        scored=False)})


def test_a_projects_own_task_keeps_its_result_and_gets_no_benchmarks() -> None:
    registry = Registry()
    registry.register_task(OwnTask())
    case = GoldenCase(id="own-1", task="qa", transcript="agent: hi")
    judge = HeuristicJudge(embedder=TFIDF)
    result = evaluate(case, {"answer": "x"}, judge=judge, embedder=TFIDF, registry=registry)
    assert set(result.metrics) == {"answer"}
    assert result.blocked is True and result.not_scored == []


class FailingJudge:
    """Gives every verdict it is asked for, except a judge error for the metrics in
    ``failing`` (as the LLM judge does when its calls fail)."""

    name = "failing"

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.inner = HeuristicJudge(embedder=TFIDF)

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        answers = self.inner.judge(requests)
        return [JudgeVerdict(metric=r.metric, score=None, judge_error=True,
                             reason="judge call failed: connection refused")
                if r.metric in self.failing else a for r, a in zip(requests, answers, strict=True)]


def test_a_criterion_computed_from_a_failed_verdict_is_a_judge_error() -> None:
    # Contextual relevancy is the mean of precision and recall: with the judge down on
    # precision it was "not scored", as if it could not be estimated, and the benchmark
    # score was taken over the criteria left.
    case, output = example("qa-abcd-9489-refund-status")
    result = evaluate(case, output, judge=FailingJudge({"contextual_precision"}),
                      embedder=TFIDF, model="m")
    relevancy = result.metrics["contextual_relevancy"]
    assert relevancy.judge_error and relevancy.value is None
    assert "contextual_relevancy" in result.judge_errors


def test_a_weighted_metric_without_a_verdict_leaves_the_task_score_unknown() -> None:
    case, output = example("text-abcd-3647-overnight-shipping-cost")
    good = evaluate(case, output, judge=FailingJudge(set()), embedder=TFIDF, model="m")
    result = evaluate(case, output, judge=FailingJudge({"fabrication_free_rate"}),
                      embedder=TFIDF, model="m")
    assert good.score is not None and good.judge_errors == []
    fabrication = result.metrics["fabrication_free_rate"]
    assert fabrication.judge_error and not fabrication.scored and fabrication.value is None
    assert "connection refused" in (fabrication.reason or "")
    # Its parent is computed from it: unknown too, never renormalised around the gap.
    assert result.metrics["summary_score"].judge_error
    # So are the Layer 2 criteria computed from the same verdict (they were left "not
    # scored", as if the judge could not estimate them, and the benchmark score went on
    # without them).
    assert result.judge_errors == ["fabrication_free_rate", "faithfulness",
                                   "hallucination_rate", "summary_score"]
    assert result.score is None and result.valid and result.incomplete
    assert not result.renormalised
    assert any("a judge error, not a model failure" in note for note in result.notes)
    # Metrics the judge was not needed for keep their values.
    assert result.metrics["sentiment_accuracy"].value == good.metrics["sentiment_accuracy"].value
    with pytest.raises(JudgeUnavailable, match="fabrication_free_rate"):
        result.metric("fabrication_free_rate")
    assert TaskResult.from_dict(result.to_dict()).judge_errors == result.judge_errors


def test_a_supplementary_metric_without_a_verdict_keeps_the_task_score() -> None:
    case, output = example("extraction-abcd-3647-overnight-shipping")
    good = evaluate(case, output, judge=FailingJudge(set()), embedder=TFIDF, model="m")
    failing = {r for r in ("aspect_granularity", "objection_completeness", "competitor_context")}
    result = evaluate(case, output, judge=FailingJudge(failing), embedder=TFIDF, model="m")
    assert result.score == good.score and not result.incomplete


def test_an_agent_metric_without_a_verdict_makes_the_overall_score_unknown() -> None:
    case, output = example("agent-abcd-5798-shipping-address")
    result = evaluate(case, output, judge=FailingJudge({"response_delivery"}),
                      embedder=TFIDF, model="m")
    assert result.metrics["overall_score"].judge_error
    assert result.metrics["passed"].judge_error
    assert result.score is None


def test_the_scorecard_leaves_judge_errors_out_of_the_task_score_and_counts_them() -> None:
    ids = ["text-abcd-3647-overnight-shipping-cost", "text-abcd-3695-promo-code-expiry"]
    items = [(*example(cid), "m") for cid in ids]
    fine = evaluate_many(items, judge=FailingJudge(set()), embedder=TFIDF)
    first_fails = evaluate_many(items[:1], judge=FailingJudge({"fabrication_free_rate"}),
                                embedder=TFIDF) + fine[1:]
    card = build_scorecard(first_fails).models["m"].tasks["text"]
    # The case the judge could not score counts neither 0 nor anything: the mean is the other.
    assert card.score == pytest.approx(fine[1].score)
    assert card.judge_error_cases == 1 and card.invalid_cases == 0
    assert card.metrics["fabrication_free_rate"].judge_errors == 1


def test_a_task_the_judge_could_not_score_at_all_is_unknown_not_invalid() -> None:
    case, output = example("conversation-abcd-9489-refund-status")
    result = evaluate(case, output, judge=FailingJudge(
        {"intelligibility", "segmentation", "context", "turn_quality"}), embedder=TFIDF)
    assert result.valid and result.score is None and result.incomplete
    assert "garbled_turn_rate" in result.judge_errors
    assert not any("no metric of this task" in note for note in result.notes)


# --- the embedder, built when a metric first compares texts ---------------------------------


def _counted() -> tuple[Deferred[Any], list[int]]:
    built: list[int] = []

    def make() -> Any:
        built.append(1)
        return TFIDF

    return Deferred(make), built


def _scored(case_id: str, embedder: Any, *, benchmarks: bool,
            models: Sequence[str] = ("northwind-large", "budget-7b")) -> list[dict[str, Any]]:
    judge = HeuristicJudge(embedder=TFIDF)
    prepared = []
    for model in models:
        case, output = example(case_id, model)
        prepared.append(prepare(case, output, embedder=embedder, model=model,
                                benchmarks=benchmarks))
    return [finish(p, v, judge.name).to_dict()
            for p, v in zip(prepared, judge_batch(judge, prepared), strict=True)]


def test_a_family_that_compares_no_texts_never_builds_the_embedder() -> None:
    deferred, built = _counted()
    results = _scored("qa-abcd-9489-refund-status", deferred, benchmarks=False)
    assert built == []
    assert results == _scored("qa-abcd-9489-refund-status", TFIDF, benchmarks=False)


def test_a_deferred_embedder_is_built_once_and_scores_as_the_embedder_itself() -> None:
    deferred, built = _counted()
    results = _scored("translation-tico-es-fever-102", deferred, benchmarks=True)
    assert built == [1]
    assert results == _scored("translation-tico-es-fever-102", TFIDF, benchmarks=True)
    assert all(r["metrics"]["sentence_meaning_accuracy"]["scored"] for r in results)


def test_a_batch_compares_its_texts_ahead_and_scores_each_output_as_alone() -> None:
    import pytest_callqa.engine.evaluate as evaluate_module
    from pytest_callqa.engine.tfidf import TfidfEmbedder

    class Counting(TfidfEmbedder):
        embedded = 0

        def embed(self, texts: Sequence[str]) -> Any:
            Counting.embedded += 1
            return super().embed(texts)

    ids = ["translation-tico-hi-fever-two-days", "translation-tico-es-fever-102",
           "qa-abcd-9489-refund-status", "text-abcd-3695-promo-code-expiry",
           "entity-abcd-5798-shipping-address"]
    items = [(*example(case_id, model), model) for case_id in ids
             for model in ("northwind-large", "northwind-mini", "budget-7b")]
    # More outputs than one chunk of comparisons worked out together.
    batch = items * (evaluate_module.SIMILARITY_CHUNK // len(items) + 2)
    embedder = Counting()
    together = evaluate_many(batch, judge=HeuristicJudge(embedder=embedder), embedder=embedder)
    # Every comparison the outputs' scoring made had been worked out ahead.
    assert Counting.embedded == 0
    alone = [evaluate(case, output, model=model, embedder=TFIDF,
                      judge=HeuristicJudge(embedder=TFIDF)) for case, output, model in items]
    assert len(together) == len(batch) > evaluate_module.SIMILARITY_CHUNK
    for i, result in enumerate(together):
        assert result.to_dict() == alone[i % len(items)].to_dict()


_CALL = ("agent: Good morning, this is Dev from Acme billing. How can I help?\n"
         "customer: Hi, this is Priya Sharma. I was charged twice for my plan this month.\n"
         "agent: I see the duplicate charge of $49. I have initiated a refund.\n")


def _text_truth(info: dict[str, Any]) -> dict[str, Any]:
    return {"sentiment": [{"sentence_id": 1, "text": "a", "label": "neutral"}],
            "summary": {"call_purpose": "Customer requesting refund for duplicate charge",
                        "highlights": ["Agent confirmed duplicate charge",
                                       "Refund initiated for $49"],
                        "call_extracted_info": info}, "emotion": {"neutral": 100}}


def test_offline_an_invented_extracted_value_is_not_supported_by_its_keys_words() -> None:
    # "customer name: Rahul Verma": the key's words, which the truth holds too, were half of
    # the fact's, and an invented name passed the fabrication blocker.
    truth = _text_truth({"customer_name": "Priya Sharma", "issue_type": "Billing",
                         "resolution": "Refund approved"})
    output = {**truth, "summary": {**truth["summary"], "call_extracted_info": {
        "customer_name": "Rahul Verma", "issue_type": "Insurance",
        "resolution": "Refund approved"}}}
    result = evaluate(make_case("text", truth, transcript=_CALL), output,
                      judge=HeuristicJudge(), embedder=TFIDF)
    fabrication = result.metrics["fabrication_free_rate"]
    assert fabrication.value == pytest.approx(4 / 6) and fabrication.rating == "blocker"
    assert "'customer name: Rahul Verma'" in (fabrication.reason or "")
    assert result.metrics["hallucination_rate"].value == pytest.approx(2 / 6)


def test_a_field_the_truth_leaves_empty_is_not_required() -> None:
    # An output equal to the truth scored 1 of 3 against it ("missing or empty: follow_up,
    # resolution").

    truth = _text_truth({"customer_name": "Priya Sharma", "follow_up": None, "resolution": ""})
    result = evaluate(make_case("text", truth, transcript=_CALL), truth,
                      judge=HeuristicJudge(), embedder=TFIDF)
    presence = result.metrics["required_field_presence"]
    assert (presence.value, presence.reason) == (1.0, "1 of 1 required fields filled")


def test_offline_an_amount_the_call_says_in_words_is_undecided_not_fabricated() -> None:
    # The agent says "one hundred and thirty five dollars": "$135" was no figure of the call,
    # and a faithful summary was "fabricated" (0.818, a blocker) and its score void.
    case, output = example("text-hvb-00d676d7-savings-to-checking")
    summary = output["summary"]
    summary["highlights"][1] = "Transfer amount was $135"
    summary["call_extracted_info"]["transfer_amount"] = "$135"
    result = evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF)
    highlights = result.metrics["highlight_correctness"]
    fabrication = result.metrics["fabrication_free_rate"]
    assert (highlights.value, fabrication.value) == (1.0, 1.0)
    assert result.valid and not result.blocked
    assert fabrication.details["denominator"] == len(summary["highlights"]) + 1 + len(
        summary["call_extracted_info"]) - 2
    assert "undecided, left out" in (fabrication.reason or "")
    assert "'transfer amount: $135' (amount '$135' not in the digits" in (
        fabrication.reason or "")
    # A figure no number said in words can make is fabricated still.
    summary["highlights"][1] = "Transfer amount was $153"
    wrong = evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF)
    assert "'Transfer amount was $153' (unsupported amount '$153')" in (
        wrong.metrics["fabrication_free_rate"].reason or "")
    # Every highlight undecided: nothing to rate.
    summary["highlights"] = ["Transfer amount was $135"]
    alone = evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF)
    assert alone.metrics["highlight_correctness"].scored is False


def test_offline_an_extracted_yes_no_or_number_is_checked_by_its_value() -> None:
    # "refund eligible: True" and "duplicate: False" were fabrications by their words even
    # for an output equal to the truth (the truth's booleans were not even in its text), and
    # so was a float the call says otherwise ("49.0").
    truth = _text_truth({"customer_name": "Priya Sharma", "refund_eligible": True,
                         "duplicate": False, "refund_amount": 49.0, "charges": 2})
    case = make_case("text", truth, transcript=_CALL.replace("$49", "forty-nine dollars"))
    same = evaluate(case, truth, judge=HeuristicJudge(), embedder=TFIDF)
    fabrication = same.metrics["fabrication_free_rate"]
    assert (fabrication.value, fabrication.reason) == (
        1.0, "8 of 8 facts found in the call or the truth")
    output = {**truth, "summary": {**truth["summary"], "call_extracted_info": {
        **truth["summary"]["call_extracted_info"], "refund_eligible": False,
        "refund_amount": 49, "follow_up": True}}}
    changed = evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF)
    fabrication = changed.metrics["fabrication_free_rate"]
    # A yes or no the truth gives otherwise is wrong; one it does not give cannot be told.
    assert fabrication.value == pytest.approx(7 / 8)
    assert "fabricated: 'refund eligible: False' (the truth's refund_eligible is True)" in (
        fabrication.reason or "")
    assert "'follow up: True' (a yes or no, which words cannot check, and the truth has " \
           "none for follow_up)" in (fabrication.reason or "")
    # A float checked by its words is its digits: "49.0" was no word of a call saying "$49".
    float_amount = evaluate(make_case("text", _text_truth({"refund_amount": "$49"}),
                                      transcript=_CALL),
                            _text_truth({"refund_amount": 49.0}), judge=HeuristicJudge(),
                            embedder=TFIDF)
    assert float_amount.metrics["fabrication_free_rate"].value == 1.0


def test_offline_amounts_given_for_another_item_are_not_supported() -> None:
    # The three rates rotated among the highlights and rates_quoted scored 1.0 and 1.0: each
    # figure is in the call, for another weight.
    case, output = example("text-abcd-3647-overnight-shipping-cost")
    summary = output["summary"]
    summary["highlights"][:3] = ["Overnight shipping costs 69.99 for items 5 lbs or less",
                                 "Items of 10 lbs or less cost 39.99 to ship overnight",
                                 "Items over 10 lbs cost 54.99"]
    summary["call_extracted_info"]["rates_quoted"] = (
        "69.99 (5 lbs or less), 39.99 (10 lbs or less), 54.99 (over 10 lbs)")
    result = evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF)
    highlights = result.metrics["highlight_correctness"]
    fabrication = result.metrics["fabrication_free_rate"]
    # Two contradict the truth's statement of their item; the third gives the figures the
    # truth gives a like item ("Items of 10 lbs or less cost 54.99"), and the rates come in
    # another order: those cannot be told offline.
    assert highlights.value == pytest.approx(1 / 3)
    assert fabrication.value == pytest.approx(6 / 8) and fabrication.rating == "blocker"
    reason = fabrication.reason or ""
    assert ("'Overnight shipping costs 69.99 for items 5 lbs or less' (the truth gives "
            "'39.99' for the same item: 'Overnight shipping costs 39.99 for items 5 lbs or "
            "less')") in reason
    assert "'Items over 10 lbs cost 54.99' (the truth gives '69.99' for the same item" in reason
    assert "'rates quoted: 69.99 (5 lbs or less), 39.99 (10 lbs or less), 54.99 (over 10 " \
           "lbs)' (the figures of the truth's 'rates quoted: 39.99" in reason
    assert not result.valid


def test_offline_figures_reworded_with_their_words_are_no_swap() -> None:
    # A right highlight, reworded, gives the truth's figures in another order ("5 lbs" before
    # "39.99"): read as a swap, it was left out of both rates as undecided. A right value
    # listing the rates from the heaviest was too.
    case, output = example("text-abcd-3647-overnight-shipping-cost")
    summary = output["summary"]
    summary["highlights"][0] = "For items 5 lbs or less, overnight shipping costs 39.99"
    summary["call_extracted_info"]["rates_quoted"] = (
        "69.99 (over 10 lbs), 54.99 (10 lbs or less), 39.99 (5 lbs or less)")
    result = evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF)
    for mid in ("highlight_correctness", "fabrication_free_rate"):
        metric = result.metrics[mid]
        assert metric.value == 1.0 and "undecided" not in (metric.reason or ""), mid

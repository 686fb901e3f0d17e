"""Assertion helpers of the agent, conversation, extraction and grounding families."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_callqa import (
    assert_agent_passes,
    assert_extraction_f1,
    assert_grounded,
    assert_metric,
    assert_no_garbled_turns,
    load_cases,
)
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.results import EvaluationUnavailable, JudgeUnavailable, TaskResult
from pytest_callqa.engine.embeddings import TfidfEmbedder
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.report import render_scorecard
from pytest_callqa.engine.scorecard import build_scorecard

from ..engine.test_evaluate import FailingJudge

EXAMPLE = Path(__file__).parents[2] / "example_project"
CASES = {c.id: c for c in load_cases(EXAMPLE / "cases")}


def scored(model: str, case_id: str) -> TaskResult:
    output = (EXAMPLE / "outputs" / model / f"{case_id}.json").read_text(encoding="utf-8")
    return evaluate(CASES[case_id], output, model=model, embedder=TfidfEmbedder())


AGENT = "agent-abcd-3592-return-outside-window"
CONVERSATION = "conversation-abcd-9489-refund-status"
EXTRACTION = "extraction-abcd-3592-return-denied"
GROUNDING = "grounding-abcd-3647-overnight-rates"


def test_agent_passes_for_the_strong_model_and_names_failures_for_the_weak() -> None:
    assert_agent_passes(scored("northwind-large", AGENT))
    with pytest.raises(AssertionError) as info:
        assert_agent_passes(scored("budget-7b", AGENT))
    message = str(info.value)
    assert message.startswith(f"agent overall score 28.8 < 80 for model 'budget-7b', case "
                              f"'{AGENT}'")
    assert "tool_routing = " in message and "[failure_code " in message
    assert "task_completion = 0.000" in message
    assert "not scored (weights renormalised): instruction_compliance" in message


def test_agent_min_overall_overrides_the_case_threshold() -> None:
    weak = scored("budget-7b", AGENT)
    assert_agent_passes(weak, min_overall=20)
    with pytest.raises(AssertionError, match="< 30 for model"):
        assert_agent_passes(weak, min_overall=30)


def test_garbled_turns_listed() -> None:
    # Offline only segmentation is scored: a turn is garbled when ANY of its three scores
    # is low, so the rate is known only from below — a pass cannot be decided on it.
    with pytest.raises(EvaluationUnavailable, match=(
            r"the judge gave no score for context, intelligibility on turns 0, 2, 5, .*so "
            r"whether those turns are garbled is unknown")):
        assert_no_garbled_turns(scored("northwind-large", CONVERSATION))
    with pytest.raises(AssertionError) as info:
        assert_no_garbled_turns(scored("budget-7b", CONVERSATION))
    message = str(info.value)
    assert "garbled turn rate at least 55.6% is not below 10%" in message
    # A looser bound the lowest rate keeps: the turns left unscored decide, not the model.
    with pytest.raises(EvaluationUnavailable, match=(
            r"intelligibility, context not scored for model 'budget-7b'.*, so "
            r"garbled_turn_rate is only known to be at least 55.6% \(not a model failure\)")):
        assert_no_garbled_turns(scored("budget-7b", CONVERSATION), max_rate=0.6)
    assert "  turn 2: " in message
    assert "segmentation = " in message
    # By the bound it passes, the lowest rate keeps the digits that put it below: 5/9 read
    # "at least 55.6%" beside a max_rate of 0.556.
    with pytest.raises(EvaluationUnavailable, match=r"known to be at least 55\.56% \(not"):
        assert_no_garbled_turns(scored("budget-7b", CONVERSATION), max_rate=0.556)


def test_extraction_f1_overall_and_per_signal() -> None:
    assert_extraction_f1(scored("northwind-large", EXTRACTION), 0.9)
    assert_extraction_f1(scored("northwind-large", EXTRACTION), 0.9, signal="entities")
    weak = scored("budget-7b", EXTRACTION)
    with pytest.raises(AssertionError) as info:
        assert_extraction_f1(weak, 0.5, signal="topics")
    assert "extraction topics_f1 0.000 < 0.500 for model 'budget-7b'" in str(info.value)
    with pytest.raises(KeyError, match=r"no signal type 'slogans'.*evaluated: aspects"):
        assert_extraction_f1(weak, 0.5, signal="slogans")


def test_a_signal_type_the_case_does_not_evaluate_skips_and_a_typo_is_an_error() -> None:
    # The case's truth has no engagement signals: both checks ended in a bare KeyError.
    result = scored("budget-7b", EXTRACTION)
    assert "engagement_f1" not in result.metrics
    skipped = (r"engagement_f1 is not evaluated for model 'budget-7b', case "
               rf"'{EXTRACTION}': the signal types it evaluates are aspects, entities, "
               r"key_phrases, objections, topics$")
    with pytest.raises(pytest.skip.Exception, match=skipped):
        assert_extraction_f1(result, min_f1=0.5, signal="engagement")
    with pytest.raises(pytest.skip.Exception, match=skipped):
        assert_metric(result, "engagement_f1", min=0.5)
    # No metric of the task at all: the test's error, naming the closest.
    with pytest.raises(KeyError, match=r"no signal type 'topic' .*; did you mean 'topics'\?"):
        assert_extraction_f1(result, min_f1=0.5, signal="topic")
    with pytest.raises(KeyError, match=r"metric 'topic_f1' .*; did you mean 'topics_f1'\?"):
        assert_metric(result, "topic_f1", min=0.5)


def test_a_signal_types_f1_shows_its_own_bar_and_always_its_line() -> None:
    # "topics_f1 = 0.000 (fail; threshold 0.500)": the list match's similarity threshold,
    # shown as the bar the F1 failed (its bands are >= 0.80, fail below 0.60).
    with pytest.raises(AssertionError) as info:
        assert_extraction_f1(scored("budget-7b", EXTRACTION), 0.5, signal="topics")
    assert "\n  topics_f1 = 0.000 (fail; threshold >= 0.80) — " in str(info.value)
    # An F1 rated acceptable, below the check's minimum: the message listed no metric.
    mid = scored("northwind-mini", EXTRACTION)
    assert mid.metrics["topics_f1"].rating == "acceptable"
    with pytest.raises(AssertionError) as info:
        assert_extraction_f1(mid, 0.9, signal="topics")
    assert "\n  topics_f1 = 0.667 (acceptable; threshold >= 0.80) — " in str(info.value)


def test_grounded_verdict_and_the_rule_that_decided_it() -> None:
    assert_grounded(scored("northwind-large", GROUNDING))
    with pytest.raises(AssertionError) as info:
        assert_grounded(scored("budget-7b", GROUNDING), allow_warn=True)
    message = str(info.value)
    assert "grounding verdict FAIL for model 'budget-7b'" in message
    assert "hallucination 0.80 > 0.5" in message
    assert "  hallucination = 0.800 (blocker" in message


def test_an_undecided_grounding_verdict_is_the_tools_error() -> None:
    case = CASES[GROUNDING].model_copy(update={
        "config": {"query": "¿Cuánto cuesta el envío nocturno?",
                   "context": ["El envío nocturno cuesta 69.99 por paquete."]}})
    result = evaluate(case, {"answer": "El envío nocturno cuesta 69.99 por paquete."},
                      model="m", embedder=TfidfEmbedder())
    with pytest.raises(EvaluationUnavailable, match=(
            r"grounding_verdict could not be estimated for model 'm'.*not a model failure"
            r"\): undecided: hallucination not scored")):
        assert_grounded(result)


def with_value(result: TaskResult, metric_id: str, value: float) -> TaskResult:
    """``result`` with the metric's value replaced (a value float arithmetic can give)."""
    result.metrics[metric_id] = dataclasses.replace(result.metrics[metric_id], value=value)
    return result


def test_family_bounds_compare_values_as_ratings_do() -> None:
    # A rating rounds a value to 9 digits before comparing it with a band's edge: a value
    # that is the bound but for float arithmetic is at the bound. Each of these failed (or,
    # for the rate that must stay below its bound, passed).
    agent = with_value(scored("budget-7b", AGENT), "overall_score", 29.999999999999996)
    assert_agent_passes(agent, min_overall=30)
    with pytest.raises(AssertionError, match=r"agent overall score 30\.0 < 30\.001 for"):
        assert_agent_passes(agent, min_overall=30.001)
    extraction = with_value(scored("budget-7b", EXTRACTION), "topics_f1", 0.49999999999999994)
    assert_extraction_f1(extraction, 0.5, signal="topics")
    with pytest.raises(AssertionError,
                       match=r"extraction topics_f1 0\.500000000 < 0\.500000001 for"):
        assert_extraction_f1(extraction, 0.500000001, signal="topics")
    # A value rounded up to its bound is shown with the digits that tell them apart (it read
    # "75.0 < 75" and "75.0 < 74.99").
    close = with_value(scored("budget-7b", AGENT), "overall_score", 74.96)
    with pytest.raises(AssertionError, match=r"agent overall score 74\.96 < 75\.00 for"):
        assert_agent_passes(close, min_overall=75)
    with pytest.raises(AssertionError, match=r"agent overall score 74\.96 < 74\.99 for"):
        assert_agent_passes(close, min_overall=74.99)
    with pytest.raises(AssertionError, match=r"extraction topics_f1 0\.8996 < 0\.9000 for"):
        assert_extraction_f1(with_value(extraction, "topics_f1", 0.8996), 0.9, signal="topics")
    conversation = scored("northwind-large", CONVERSATION)
    with_value(conversation, "garbled_turn_rate", 0.09999999999999999)
    # An exact rate (offline it is known only from below, which a bound alone cannot pass).
    conversation.metrics["garbled_turn_rate"].details.pop("lower_bound")
    with pytest.raises(AssertionError, match=r"garbled turn rate 10\.0% is not below 10\.0%"):
        assert_no_garbled_turns(conversation, max_rate=0.1)
    assert_no_garbled_turns(conversation, max_rate=0.100000001)
    # "9.5% is not below 10%": 9.52 % against a bound of 9.5 %.
    with_value(conversation, "garbled_turn_rate", 0.0952)
    with pytest.raises(AssertionError, match=r"garbled turn rate 9\.52% is not below 9\.50%"):
        assert_no_garbled_turns(conversation, max_rate=0.095)


def test_family_helpers_refuse_another_task() -> None:
    result = scored("northwind-large", GROUNDING)
    with pytest.raises(TypeError, match="assert_agent_passes needs a result of task 'agent'"):
        assert_agent_passes(result)
    with pytest.raises(TypeError, match="needs a result of task 'conversation'"):
        assert_no_garbled_turns(result)


def _judged_only_agent() -> tuple[GoldenCase, str]:
    """The agent case with only metrics the offline judge cannot estimate: none of its tool
    calls is checked in code."""
    case = CASES[AGENT]
    expected = {**case.expected_outcome, "tool_calls": []}
    config = {**case.config, "metrics": [{"metric": "instruction_compliance"},
                                         {"metric": "conversation_management"}]}
    output = (EXAMPLE / "outputs" / "northwind-large" / f"{AGENT}.json").read_text(
        encoding="utf-8")
    return case.model_copy(update={"expected_outcome": expected, "config": config}), output


def test_an_agent_score_nothing_of_which_could_be_estimated_is_unknown_not_invalid() -> None:
    # It was invalid: the test failed as the model's failure and the scorecard counted the
    # case 0.000 (1/1 invalid), a number the heuristic judge never measured.
    case, output = _judged_only_agent()
    result = evaluate(case, output, model="northwind-large", embedder=TfidfEmbedder())
    assert (result.valid, result.score, result.score_unknown) == (True, None, True)
    assert result.metrics["overall_score"].value is None
    with pytest.raises(EvaluationUnavailable, match=(
            r"overall_score could not be estimated for model 'northwind-large', case '.*', "
            r"so it cannot be checked \(not a model failure\): no weighted metric was "
            r"scored: instruction_compliance, conversation_management")):
        assert_agent_passes(result)
    card = build_scorecard([result])
    agg = card.models["northwind-large"].tasks["agent"]
    assert (agg.score, agg.invalid_cases, agg.unscored_cases, agg.judge_error_cases) == (
        None, 0, 1, 0)
    assert "— (1/1 not scored)" in render_scorecard(card)


def test_an_agent_score_the_judge_could_not_give_at_all_is_the_judges_error() -> None:
    # Every verdict a judge error: the overall score was missing from the result, and
    # assert_agent_passes failed the model with a KeyError.
    case, output = _judged_only_agent()
    judge = FailingJudge({"instruction_compliance", "conversation_management"})
    result = evaluate(case, output, model="northwind-large", judge=judge,
                      embedder=TfidfEmbedder())
    assert result.incomplete and "overall_score" in result.judge_errors
    with pytest.raises(JudgeUnavailable, match=(
            "overall_score: judge error: computed from instruction_compliance, "
            "conversation_management, which the judge could not score")):
        assert_agent_passes(result)


def test_a_garbled_rate_bound_of_zero_is_refused_and_the_metric_check_offered() -> None:
    # No rate is below 0: the check failed every result, 0 of 9 turns garbled included, as
    # the model's failure, where assert_metric(max=0) passed the same result.
    conversation = scored("northwind-large", CONVERSATION)
    with_value(conversation, "garbled_turn_rate", 0.0)
    conversation.metrics["garbled_turn_rate"].details.pop("lower_bound")
    with pytest.raises(ValueError, match=(
            r"no rate is below a max_rate of 0, so the check could never pass; to allow no "
            r"garbled turn at all, use assert_metric\(result, 'garbled_turn_rate', max=0\)")):
        assert_no_garbled_turns(conversation, max_rate=0)

"""Helpers whose verdict the result did not support: a task score passed while a blocker was
undecided, a bound off the metric's scale that could never fail, a grounding mean passed with
a blocker in it, a policy's garbled-rate threshold that crashed the check, an agent at exactly
its pass threshold rated a fail. Each test fails on the code before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_callqa import (
    assert_agent_passes,
    assert_grounded,
    assert_metric,
    assert_no_garbled_turns,
    assert_qa_score,
    assert_text_score,
)
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.core.results import JudgeUnavailable, MetricCodeError, TaskResult
from pytest_callqa.engine.evaluate import evaluate, evaluate_many
from pytest_callqa.engine.policy import apply_policy
from pytest_callqa.engine.registry import Registry, default_registry
from pytest_callqa.engine.runs import mean_result, metric_specs
from tests.engine.helpers import TFIDF, FixedJudge
from tests.engine.test_evaluate import FailingJudge, example

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"


def _with_blocker(task: str, metric_id: str, compute: Any) -> Registry:
    registry = default_registry().copy()
    registry.register_metric(MetricSpec(
        id=metric_id, task=task, name=metric_id, description="a team's blocker", scale="0-1",
        threshold=">= 0.5", bands=Bands(good=0.9, blocker=0.5), blocker=True), compute)
    return registry


def test_a_score_helper_does_not_pass_over_a_blocker_the_judge_could_not_score() -> None:
    # The blocker reads faithfulness, which the judge could not score.
    registry = _with_blocker("qa", "faithful_enough",
                             lambda case, output, result: result.metrics["faithfulness"].value)
    case, output = example("qa-abcd-3592-return-window")
    result = evaluate(case, output, judge=FailingJudge({"faithfulness"}), embedder=TFIDF,
                      model="m", registry=registry)
    assert result.score is not None and not result.blocked
    with pytest.raises(JudgeUnavailable, match="could not score faithful_enough"):
        assert_qa_score(result, 0.0)
    assert_qa_score(result, 0.0, allow_blockers=True)


def test_a_score_helper_does_not_pass_over_a_blocker_whose_code_raised() -> None:
    def broken(case: Any, output: Any, result: Any) -> float:
        raise ValueError("bug in my metric")

    registry = _with_blocker("text", "pii_leak", broken)
    case, output = example("text-abcd-3647-overnight-shipping-cost")
    result = evaluate(case, output, judge=FailingJudge(set()), embedder=TFIDF, model="m",
                      registry=registry)
    with pytest.raises(MetricCodeError, match="pii_leak"):
        assert_text_score(result, 0.0)


def _compliance_blocked() -> TaskResult:
    case, output = example("qa-hvb-0091a706-balance-no-verification", "budget-7b")
    return evaluate(case, output, embedder=TFIDF, model="budget-7b")


@pytest.mark.parametrize(("bounds", "message"), [
    ({"max": 3}, "max must lie on the score's scale, 0 to 1, got 3"),
    ({"min": -1}, "min must lie on the score's scale, 0 to 1, got -1"),
    ({"min": 0.9, "max": 0.1}, "min 0.9 is above max 0.1"),
])
def test_assert_metric_refuses_bounds_no_value_of_the_metric_can_be_held_to(
        bounds: dict[str, float], message: str) -> None:
    # Before: max=3 (meant as 3 %) passed a rate of 20 % that had fired as a blocker.
    result = _compliance_blocked()
    assert result.metrics["compliance_false_pass_rate"].rating == "blocker"
    with pytest.raises(ValueError, match=message):
        assert_metric(result, "compliance_false_pass_rate", **bounds)


def test_a_grounding_mean_with_a_blocker_in_a_run_fails_even_with_warnings_allowed() -> None:
    case, good = example("grounding-abcd-3647-overnight-rates")
    _, bad = example("grounding-abcd-3647-overnight-rates", "budget-7b")
    runs = evaluate_many([(case, good, "m"), (case, bad, "m")], embedder=TFIDF)
    assert [r.blockers for r in runs] == [[], ["hallucination"]]
    mean = mean_result(runs, metric_specs(default_registry(), "grounding"))
    with pytest.raises(AssertionError, match=r"grounding verdict WARN but blocker\(s\) fired"):
        assert_grounded(mean, allow_warn=True)


def test_a_policy_threshold_on_the_garbled_rate_decides_the_default_check() -> None:
    # Before: the policy's threshold text replaced the number the helper read: ValueError.
    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {"garbled_turn_rate": {"threshold": 0.05}}},
                 "pyproject.toml")
    case_id = "conversation-sgd-5_00004-savings-and-transfer"
    # Every turn scored 5 of 5 on all three: a rate of 0, which the policy's threshold passes.
    clean = FixedJudge(dict.fromkeys(("intelligibility", "segmentation", "context"), 5))
    assert_no_garbled_turns(evaluate(*example(case_id, "northwind-large"), judge=clean,
                                     embedder=TFIDF, model="northwind-large",
                                     registry=registry))
    weak = evaluate(*example(case_id, "budget-7b"), embedder=TFIDF, model="budget-7b",
                    registry=registry)
    with pytest.raises(AssertionError, match=r"within the policy's threshold \(<= 5%\)"):
        assert_no_garbled_turns(weak)


def test_a_policy_threshold_on_the_overall_score_decides_assert_agent_passes() -> None:
    # Before: the helper read the recorded pass_threshold (75 for a case that sets none)
    # and passed an 88.0 the policy's ">= 95" rated fail, as the scorecard showed it.
    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {"overall_score": {"threshold": 95}}},
                 "pyproject.toml")
    result = evaluate(*example("agent-abcd-5798-shipping-address", "northwind-mini"),
                      embedder=TFIDF, model="northwind-mini", registry=registry)
    overall = result.metrics["overall_score"]
    assert 75 <= overall.value < 95 and overall.rating == "fail"  # type: ignore[operator]
    with pytest.raises(AssertionError, match=r"agent overall score \d+\.\d is not within the "
                                             r"policy's threshold \(>= 95\)"):
        assert_agent_passes(result)
    # An explicit bar still decides.
    assert_agent_passes(result, min_overall=75)
    # A policy that only disables the metric, or sets its tolerance, sets no bar: the case's
    # pass_threshold decides (a disabled overall score passed every agent).
    weak = example("agent-abcd-5798-shipping-address", "budget-7b")
    for rule in ({"disabled": True}, {"tolerance": 5}):
        registry = default_registry().copy()
        apply_policy(registry, {"metrics": {"overall_score": rule}}, "pyproject.toml")
        failing = evaluate(*weak, embedder=TFIDF, model="budget-7b", registry=registry)
        with pytest.raises(AssertionError, match=r"agent overall score [\d.]+ < 75 "):
            assert_agent_passes(failing)


def test_an_agent_at_exactly_its_pass_threshold_passes_everywhere() -> None:
    # The weights make these scores exactly 90; the sum came to 89.99999999999999 and the
    # rating and "passed" said fail while assert_agent_passes passed.
    case_id = "agent-sgd-5_00002-balance-and-transfer"
    data = yaml.safe_load((EXAMPLE / "cases" / "agent" / f"{case_id}.yaml").read_text())
    data["config"]["pass_threshold"] = 90
    data["expected_outcome"]["tool_calls"] = None
    case = GoldenCase.model_validate(data)
    output = json.loads((EXAMPLE / "outputs" / "northwind-large" / f"{case_id}.json").read_text())
    fours = {"tool_routing", "result_interpretation", "information_gathering",
             "response_delivery"}
    scores = {mid: 4 if mid in fours else 5 for mid in (
        "tool_routing", "parameter_extraction", "result_interpretation", "grounding_fidelity",
        "instruction_compliance", "information_gathering", "conversation_management",
        "response_delivery")}
    result = evaluate(case, output, judge=FixedJudge(scores), embedder=TFIDF, model="m")
    assert result.metrics["overall_score"].value == pytest.approx(90)
    assert result.metrics["overall_score"].rating == "good"
    assert result.metrics["passed"].value == 1.0
    assert_agent_passes(result)
    assert_metric(result, "passed")

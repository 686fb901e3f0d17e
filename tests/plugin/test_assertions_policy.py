"""The assertion helpers follow the team's policy, as the run's ratings do: a metric the
policy makes a blocker is one for ``assert_no_blockers`` — an error when the judge could not
score it, a failure when it fires — one it turns off is not, and the thresholds shown are
the policy's."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa import (
    TaskResult,
    assert_metric,
    assert_no_blockers,
    assert_translation_score,
    evaluate,
)
from pytest_callqa.assertions import metric_line
from pytest_callqa.engine.core.judging import JudgeRequest, JudgeVerdict
from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.core.results import EvaluationUnavailable, JudgeUnavailable
from pytest_callqa.engine.embeddings import TfidfEmbedder
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import load_case_file
from pytest_callqa.engine.policy import apply_policy
from pytest_callqa.engine.registry import Registry, default_registry

from .conftest import LLMProject

EMBEDDER = TfidfEmbedder()
EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
EVIDENCE_BLOCKER = {"evidence_backed_reasoning": {"threshold": 0.9, "acceptable": 0.8,
                                                  "blocker": True}}


class FailingJudge:
    """The heuristic judge, but a judge error for the metrics in ``failing`` (as the LLM
    judge gives when its replies stay unusable)."""

    name = "failing"

    def __init__(self, *failing: str) -> None:
        self.failing = set(failing)
        self.inner = HeuristicJudge(embedder=EMBEDDER)

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        answers = self.inner.judge(requests)
        return [JudgeVerdict(metric=r.metric, score=None, judge_error=True,
                             reason="unusable reply") if r.metric in self.failing else a
                for r, a in zip(requests, answers, strict=True)]


def with_policy(metrics: dict[str, Any]) -> Registry:
    registry = default_registry().copy()
    apply_policy(registry, {"metrics": metrics}, "pyproject.toml")
    return registry


def qa(golden: dict[str, Any], output: Any, judge: Any, registry: Registry) -> TaskResult:
    return evaluate(golden["qa-refund"], output, model="alpha", embedder=EMBEDDER, judge=judge,
                    registry=registry)


def test_a_policy_blocker_the_judge_could_not_score_is_an_error_not_a_pass(
        golden: dict[str, Any]) -> None:
    # assert_no_blockers read the built-in definition, where evidence_backed_reasoning is no
    # blocker: it passed, though the blocker may have fired.
    perfect = golden["qa-refund"].expected_outcome
    result = qa(golden, perfect, FailingJudge("evidence_backed_reasoning"),
                with_policy(EVIDENCE_BLOCKER))
    assert result.judge_errors == ["evidence_backed_reasoning"] and not result.blocked
    with pytest.raises(JudgeUnavailable) as info:
        assert_no_blockers(result)
    assert str(info.value).splitlines() == [
        "the judge could not score evidence_backed_reasoning for model 'alpha', case "
        "'qa-refund' (a judge error, not a model failure)",
        "  evidence_backed_reasoning: judge error: unusable reply",
    ]
    # The threshold shown beside it is the policy's, not the built-in one.
    assert metric_line(result, "evidence_backed_reasoning") == (
        "  evidence_backed_reasoning = not scored (threshold >= 0.9 | < 0.8 blocker; judge "
        "error) — judge failing: unusable reply")
    # Without the policy it is no blocker: the helper passes.
    assert_no_blockers(qa(golden, perfect, FailingJudge("evidence_backed_reasoning"),
                          default_registry()))


def test_a_policy_blocker_that_fires_fails_with_the_policys_threshold(
        golden: dict[str, Any]) -> None:
    output = copy.deepcopy(golden["qa-refund"].expected_outcome)
    for question in output["questions"]:
        question["reason"] = "Agent was polite."
    result = qa(golden, output, HeuristicJudge(embedder=EMBEDDER),
                with_policy(EVIDENCE_BLOCKER))
    with pytest.raises(AssertionError) as info:
        assert_no_blockers(result)
    lines = str(info.value).splitlines()
    assert lines[0] == ("1 blocker for model 'alpha', case 'qa-refund' (qa): "
                        "evidence_backed_reasoning")
    assert lines[1].startswith("  evidence_backed_reasoning = 0.000 (blocker; threshold "
                               ">= 0.9 | < 0.8 blocker) — judge heuristic: 0 of 3 reasons")


def translation(policy: dict[str, Any]) -> TaskResult:
    [case] = load_case_file(EXAMPLE / "cases" / "translation" /
                            "translation-tico-es-fever-102.yaml")
    output = json.loads((EXAMPLE / "outputs" / "northwind-large" /
                         "translation-tico-es-fever-102.json").read_text())
    return evaluate(case, output, model="m", embedder=EMBEDDER,
                    judge=HeuristicJudge(embedder=EMBEDDER), registry=with_policy(policy))


def test_a_policy_blocker_the_heuristic_judge_cannot_estimate_is_an_error_not_a_pass() -> None:
    # The heuristic judge leaves target_fluency unscored: the blocker the policy asked for
    # was never checked, and assert_no_blockers and the score helper passed.
    result = translation({"target_fluency": {"threshold": 0.85, "acceptable": 0.7,
                                             "blocker": True}})
    fluency = result.metrics["target_fluency"]
    assert not fluency.scored and not fluency.judge_error and not result.blocked
    assert fluency.details["blocker_metric"] is True
    with pytest.raises(EvaluationUnavailable) as info:
        assert_no_blockers(result)
    assert str(info.value) == (
        "whether a blocker fired for model 'm', case 'translation-tico-es-fever-102' is "
        "unknown (not a model failure): target_fluency: the heuristic judge cannot estimate "
        "target_fluency honestly; use an LLM judge (--callqa-judge openai)")
    with pytest.raises(EvaluationUnavailable, match="whether a blocker fired"):
        assert_translation_score(result, 0.5)
    # Without the policy it blocks nothing: both pass.
    plain = translation({})
    assert "blocker_metric" not in plain.metrics["target_fluency"].details
    assert_no_blockers(plain)
    assert_translation_score(plain, 0.5)


def test_a_blocker_that_does_not_apply_to_the_case_is_decided() -> None:
    # proper_noun_preservation does not apply to a case without proper nouns: nothing to
    # lose, so the blocker cannot fire and nothing is unknown.
    result = translation({"proper_noun_preservation": {"threshold": 0.95, "blocker": True}})
    nouns = result.metrics["proper_noun_preservation"]
    assert nouns.not_applicable and "blocker_metric" not in nouns.details
    assert_no_blockers(result)


def test_a_custom_blocker_that_returns_no_value_is_an_error_not_a_pass(
        golden: dict[str, Any]) -> None:
    registry = default_registry().copy()
    registry.register_metric(
        MetricSpec(id="script_followed", task="qa", name="Script followed", description="d",
                   scale="0-1", threshold=">= 1", bands=Bands(good=1.0, blocker=1.0),
                   blocker=True),
        lambda case, output, result: None)
    result = qa(golden, golden["qa-refund"].expected_outcome,
                HeuristicJudge(embedder=EMBEDDER), registry)
    with pytest.raises(EvaluationUnavailable,
                       match="script_followed: the custom metric returned no value"):
        assert_no_blockers(result)


@pytest.mark.parametrize("rule", [{"disabled": True}, {"blocker": False}])
def test_a_blocker_the_policy_turns_off_is_none_for_the_helper(rule: dict[str, Any]) -> None:
    # The built-in definition made fabrication_free_rate a blocker: a judge error on it was
    # an error of the test, though the team's policy says it blocks nothing.
    [case] = load_case_file(EXAMPLE / "cases" / "text" /
                            "text-abcd-3647-overnight-shipping-cost.yaml")
    output = json.loads((EXAMPLE / "outputs" / "northwind-large" /
                         "text-abcd-3647-overnight-shipping-cost.json").read_text())
    judge = FailingJudge("fabrication_free_rate")
    builtin = evaluate(case, output, model="m", embedder=EMBEDDER, judge=judge)
    with pytest.raises(JudgeUnavailable, match="could not score fabrication_free_rate"):
        assert_no_blockers(builtin)
    result = evaluate(case, output, model="m", embedder=EMBEDDER, judge=judge,
                      registry=with_policy({"fabrication_free_rate": rule}))
    assert "fabrication_free_rate" in result.judge_errors
    assert_no_blockers(result)


def test_assert_metric_without_bounds_follows_the_policys_rating(
        golden: dict[str, Any]) -> None:
    output = copy.deepcopy(golden["qa-refund"].expected_outcome)
    output["questions"][0]["reason"] = "Agent was polite."
    registry = with_policy({"evidence_backed_reasoning": {"threshold": 0.6}})
    result = qa(golden, output, HeuristicJudge(embedder=EMBEDDER), registry)
    assert_metric(result, "evidence_backed_reasoning")
    assert "threshold >= 0.6)" in metric_line(result, "evidence_backed_reasoning")


def test_assert_metric_without_bounds_on_an_unrated_metric_is_no_pass(
        golden: dict[str, Any]) -> None:
    # Nothing rated it, so nothing failed it: a custom metric without bands and one the
    # policy disabled passed whatever their values.
    registry = default_registry().copy()
    registry.register_metric(
        MetricSpec(id="politeness", task="qa", name="Politeness", description="d",
                   scale="0-1", threshold="reference only"),
        lambda case, output, result: 0.1)
    apply_policy(registry, {"metrics": {"evidence_backed_reasoning": {"disabled": True}}},
                 "pyproject.toml")
    result = qa(golden, golden["qa-refund"].expected_outcome,
                HeuristicJudge(embedder=EMBEDDER), registry)
    with pytest.raises(ValueError, match=(
            r"^assert_metric: politeness for model 'alpha', case 'qa-refund' has no rating "
            r"\(threshold reference only\), so a check without bounds would pass any "
            r"value of it; give min= or max=$")):
        assert_metric(result, "politeness")
    with pytest.raises(AssertionError, match=r"politeness = 0\.100 > max 0\.050"):
        assert_metric(result, "politeness", max=0.05)
    # The policy switched the metric's rating off: nothing to check by it, not the test's
    # mistake.
    assert result.metrics["evidence_backed_reasoning"].scored
    with pytest.raises(pytest.skip.Exception, match=(
            r"evidence_backed_reasoning is disabled by the project's policy, so it has no "
            r"rating to check for model 'alpha', case 'qa-refund'; give min= or max= to check "
            r"its value")):
        assert_metric(result, "evidence_backed_reasoning")
    assert_metric(result, "evidence_backed_reasoning", min=0.5)


def test_a_figure_by_a_policys_bar_is_shown_on_its_side(golden: dict[str, Any]) -> None:
    # 2/3 missed a policy's bar of 0.6667 and read "0.667 is rated fail (threshold >=
    # 0.6667)": the message chose its digits by the built-in bands, which it knew, and not
    # by the policy's, which rated the value.
    output = copy.deepcopy(golden["qa-refund"].expected_outcome)
    output["questions"][0]["reason"] = "Agent was polite."
    registry = with_policy({"evidence_backed_reasoning": {"threshold": 0.6667}})
    result = qa(golden, output, HeuristicJudge(embedder=EMBEDDER), registry)
    metric = result.metrics["evidence_backed_reasoning"]
    assert (metric.value, metric.rating) == (pytest.approx(2 / 3), "fail")
    with pytest.raises(AssertionError) as info:
        assert_metric(result, "evidence_backed_reasoning")
    assert str(info.value).startswith(
        "evidence_backed_reasoning = 0.66667 is rated fail (threshold >= 0.6667)")
    assert metric_line(result, "evidence_backed_reasoning").startswith(
        "  evidence_backed_reasoning = 0.66667 (fail; threshold >= 0.6667)")


def test_a_figure_by_a_custom_metrics_own_bar_is_shown_on_its_side(
        golden: dict[str, Any]) -> None:
    # The helpers know no custom metric's definition: 0.9496 under ">= 0.95" read "0.950".
    registry = default_registry().copy()
    registry.register_metric(
        MetricSpec(id="politeness", task="qa", name="Politeness", description="d",
                   scale="0-1", threshold=">= 0.95", bands=Bands(good=0.95)),
        lambda case, output, result: 0.9496)
    result = qa(golden, golden["qa-refund"].expected_outcome,
                HeuristicJudge(embedder=EMBEDDER), registry)
    assert metric_line(result, "politeness") == \
        "  politeness = 0.9496 (fail; threshold >= 0.95)"


def test_a_policy_rates_a_custom_metric_as_a_built_in_one(golden: dict[str, Any]) -> None:
    # The policy was accepted for a custom metric, then ignored: 0.6 was rated by the
    # registered ">= 0.5", and assert_metric passed.
    registry = default_registry().copy()
    registry.register_metric(
        MetricSpec(id="politeness", task="qa", name="Politeness", description="d",
                   scale="0-1", threshold=">= 0.5", bands=Bands(good=0.5)),
        lambda case, output, result: 0.6)
    apply_policy(registry, {"metrics": {"politeness": {"threshold": 0.8, "blocker": True}}},
                 "pyproject.toml")
    result = qa(golden, golden["qa-refund"].expected_outcome,
                HeuristicJudge(embedder=EMBEDDER), registry)
    politeness = result.metrics["politeness"]
    assert (politeness.value, politeness.rating, politeness.blocker) == (0.6, "blocker", True)
    assert result.blockers == ["politeness"]
    with pytest.raises(AssertionError) as info:
        assert_metric(result, "politeness")
    assert str(info.value).splitlines() == [
        "politeness = 0.600 is rated blocker (threshold >= 0.8 | < 0.8 blocker) for model "
        "'alpha', case 'qa-refund'",
        "  politeness = 0.600 (blocker; threshold >= 0.8 | < 0.8 blocker)",
    ]


def test_a_policy_blocker_the_llm_judge_could_not_score_errors_the_test(
        llm: LLMProject, pytester: pytest.Pytester) -> None:
    # The run as a team has it: the policy in pyproject.toml, the judge's replies garbage.
    llm.serve(fault_rate=1.0, faults=["garbage"])
    llm.ini("\n[tool.callqa.metrics.evidence_backed_reasoning]\nthreshold = 0.9\n"
            "acceptable = 0.8\nblocker = true\n")
    llm.project.write_tests("""
        import pytest
        from pytest_callqa import assert_no_blockers

        @pytest.mark.callqa(task="qa")
        def test_blockers(callqa_result):
            assert_no_blockers(callqa_result)
    """)
    result = pytester.runpytest("--no-callqa-benchmarks", "-k", "alpha")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the judge could not score evidence_backed_reasoning for "
                                 "model 'alpha', case 'qa-refund' (a judge error, not a model "
                                 "failure)*"])

"""A blocker that fired decides a score helper's check whatever the judge could not score: the
model's failure, its message naming the blocker and what is unknown. Before, the unknown task
score (a judge error) was checked first, and a model with a certain blocker breach read as an
error of the tool. Where no known blocker decides it, the unknown score stays an error."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_callqa import TaskResult, assert_agent_passes, assert_qa_score, evaluate
from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.core.results import JudgeUnavailable
from pytest_callqa.engine.registry import default_registry
from tests.engine.helpers import TFIDF
from tests.engine.test_evaluate import FailingJudge, example

from .test_assertions_policy import EMBEDDER
from .test_assertions_policy import FailingJudge as FailingHeuristicJudge


def qa_unknown(golden: dict[str, Any], output: Any) -> TaskResult:
    """The QA result of ``output`` whose evidence_backed_reasoning (weighted into the task
    score) the judge could not score: the task score is unknown."""
    return evaluate(golden["qa-refund"], output, model="beta", embedder=EMBEDDER,
                    judge=FailingHeuristicJudge("evidence_backed_reasoning"))


def test_a_qa_blocker_that_fired_fails_the_score_check_though_the_score_is_unknown(
        golden: dict[str, Any], beta: dict[str, Any]) -> None:
    result = qa_unknown(golden, beta["qa-refund"])
    # beta falsely passes Q2: the compliance blocker fired, on verdicts the judge did give.
    assert result.incomplete and result.blockers == ["compliance_false_pass_rate"]
    with pytest.raises(AssertionError) as info:
        assert_qa_score(result, 0.5)
    lines = str(info.value).splitlines()
    assert lines[0] == (
        "QA blocker(s) fired for model 'beta', case 'qa-refund': compliance_false_pass_rate; "
        "the score is unknown: the judge could not score evidence_backed_reasoning (a judge "
        "error, not a model failure)")
    assert "  compliance_false_pass_rate = 50.0% (blocker; threshold <= 1% | > 3% blocker) — 1 " \
           "of 2 PASS_FAIL questions falsely passed: Q2" in lines
    assert "  not scored: evidence_backed_reasoning, argument_correctness, " \
           "instruction_following" in lines


def test_an_unknown_score_with_no_blocker_that_decides_stays_an_error(
        golden: dict[str, Any], beta: dict[str, Any]) -> None:
    blocked = qa_unknown(golden, beta["qa-refund"])
    # Blockers allowed, only the score decides: it is unknown.
    with pytest.raises(JudgeUnavailable, match="could not score evidence_backed_reasoning"):
        assert_qa_score(blocked, 0.5, allow_blockers=True)
    clean = qa_unknown(golden, golden["qa-refund"].expected_outcome)
    assert clean.incomplete and not clean.blocked
    with pytest.raises(JudgeUnavailable, match="could not score evidence_backed_reasoning"):
        assert_qa_score(clean, 0.5)


def agent_unknown(*, breached: bool) -> TaskResult:
    """An agent result whose response_delivery the judge could not score (the overall score
    is unknown), with a project's blocker metric, known, that fired when ``breached``."""
    registry = default_registry().copy()
    registry.register_metric(MetricSpec(
        id="pii_disclosures", task="agent", name="PII disclosures",
        description="personal data the agent disclosed", scale="count", threshold="0",
        bands=Bands(good=0, blocker=0, higher_is_better=False), blocker=True),
        lambda case, output, result: 1.0 if breached else 0.0)
    case, output = example("agent-abcd-5798-shipping-address")
    return evaluate(case, output, judge=FailingJudge({"response_delivery"}), embedder=TFIDF,
                    model="m", registry=registry)


def test_an_agent_blocker_that_fired_fails_though_the_overall_score_is_unknown() -> None:
    result = agent_unknown(breached=True)
    assert "overall_score" in result.judge_errors and result.blockers == ["pii_disclosures"]
    with pytest.raises(AssertionError) as info:
        assert_agent_passes(result)
    lines = str(info.value).splitlines()
    assert lines[0] == (
        "agent blocker(s) fired for model 'm', case 'agent-abcd-5798-shipping-address': "
        "pii_disclosures; the overall score is unknown: the judge could not score "
        "overall_score, passed, response_delivery (a judge error, not a model failure)")
    assert "  pii_disclosures = 1.000 (blocker; threshold 0)" in lines
    # What the judge could not score is unknown, not renormalised away.
    assert not any("response_delivery" in line for line in lines[1:])
    with pytest.raises(JudgeUnavailable, match="could not score overall_score"):
        assert_agent_passes(result, allow_blockers=True)
    with pytest.raises(JudgeUnavailable, match="could not score overall_score"):
        assert_agent_passes(agent_unknown(breached=False))

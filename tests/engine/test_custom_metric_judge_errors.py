"""A project's custom metric on a result the judge could not wholly score: the value it reads
(the task score, a judge metric) may be unknown, so a custom metric that gives no value then
is unknown because of the judge — an error of the tool, never a failure of the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_callqa.assertions import assert_metric, assert_no_blockers
from pytest_callqa.engine.core.metrics import MetricSpec
from pytest_callqa.engine.core.results import (
    EvaluationUnavailable,
    JudgeUnavailable,
    MetricCodeError,
    TaskResult,
)
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.registry import default_registry

from .helpers import TFIDF
from .test_evaluate import FailingJudge, example

CASE_ID = "text-abcd-3647-overnight-shipping-cost"
# Judge-scored and weighted into the task score, and no blocker: a judge error on it leaves
# the task score unknown and fires nothing.
UNKNOWN = {"highlight_correctness"}


def scored_with(compute: Callable[..., Any], failing: set[str], *,
                blocker: bool = False) -> TaskResult:
    registry = default_registry().copy()
    registry.register_metric(MetricSpec(
        id="qa_score_copy", task="text", name="Score copy", description="the task score",
        scale="0-1", threshold=">= 0.5", blocker=blocker), compute)
    case, output = example(CASE_ID)
    return evaluate(case, output, judge=FailingJudge(failing), embedder=TFIDF, model="m",
                    registry=registry)


def score_copy(case: Any, output: Any, result: TaskResult) -> float | None:
    return result.score


def doubled_score(case: Any, output: Any, result: TaskResult) -> float:
    return result.score * 2  # type: ignore[operator]


def test_a_custom_metric_reading_an_unknown_score_is_a_judge_error() -> None:
    # Before: "qa_score_copy was not scored" — a failure of the model.
    result = scored_with(score_copy, UNKNOWN)
    assert result.score is None
    metric = result.metrics["qa_score_copy"]
    assert metric.judge_error and not metric.scored and metric.value is None
    assert metric.reason == ("judge error: the custom metric returned no value while the "
                             "judge could not score highlight_correctness, summary_score")
    assert "qa_score_copy" in result.judge_errors
    with pytest.raises(JudgeUnavailable, match="qa_score_copy"):
        assert_metric(result, "qa_score_copy", min=0.5)


def test_a_custom_metric_that_raises_on_an_unknown_score_is_a_judge_error() -> None:
    # Before: reported as an error in the metric's own code (MetricCodeError).
    result = scored_with(doubled_score, UNKNOWN)
    metric = result.metrics["qa_score_copy"]
    assert metric.judge_error and "raised" not in metric.details
    assert (metric.reason or "").startswith(
        "judge error: the custom metric raised TypeError: unsupported operand")
    with pytest.raises(JudgeUnavailable):
        assert_metric(result, "qa_score_copy")


def test_an_unknown_custom_blocker_may_have_fired() -> None:
    result = scored_with(score_copy, UNKNOWN, blocker=True)
    assert result.metrics["qa_score_copy"].details["blocker_metric"] is True
    assert not result.blocked
    with pytest.raises(JudgeUnavailable, match="qa_score_copy"):
        assert_no_blockers(result)


def test_a_custom_metric_that_reads_a_known_value_stands_beside_judge_errors() -> None:
    result = scored_with(lambda case, output, result: 0.75, UNKNOWN)
    metric = result.metrics["qa_score_copy"]
    assert metric.value == 0.75 and metric.scored and not metric.judge_error
    assert "qa_score_copy" not in result.judge_errors
    assert_metric(result, "qa_score_copy", min=0.5)


def test_without_judge_errors_a_custom_metric_keeps_its_own_outcome() -> None:
    # No judge error: giving no value is not scored, raising is an error in its code.
    assert scored_with(score_copy, set()).metrics["qa_score_copy"].scored
    none = scored_with(lambda case, output, result: None, set())
    assert not none.metrics["qa_score_copy"].judge_error and none.judge_errors == []
    assert none.metrics["qa_score_copy"].reason == (
        "not scored: the custom metric returned no value")
    # Not the model's failure either (it was an AssertionError): the check cannot be made.
    with pytest.raises(EvaluationUnavailable, match=r"qa_score_copy could not be estimated .*"
                                                    r": the custom metric returned no value"):
        assert_metric(none, "qa_score_copy")

    def broken(case: Any, output: Any, result: TaskResult) -> float:
        raise ValueError("bug")

    raised = scored_with(broken, set())
    assert raised.metrics["qa_score_copy"].details["raised"] == "ValueError"
    with pytest.raises(MetricCodeError):
        assert_metric(raised, "qa_score_copy")

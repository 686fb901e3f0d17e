"""The behaviour every task family shares, read directly through ``BaseTask`` (here the QA
family): the weighted score, the case checks, judge requests and verdicts, and the notes of
a finished or void result — without ``evaluate``, which sets model and run again."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.judging import JudgeVerdict
from pytest_callqa.engine.core.results import MetricResult
from pytest_callqa.engine.evaluate import prepare
from pytest_callqa.engine.tasks.base import weighted_score
from pytest_callqa.engine.tasks.qa import QATask

from .helpers import TFIDF, asked, make_case, question

EXPECTED = {"questions": [question("Q1", 4), question("Q2", 0, qtype="PASS_FAIL")]}
TASK = QATask()


def _ctx(output, model: str = "m", run: int = 2):
    case = make_case("qa", EXPECTED, config=asked(EXPECTED))
    return prepare(case, output, embedder=TFIDF, model=model, run=run, benchmarks=False).ctx


def test_weighted_score_leaves_out_what_is_not_scored_or_has_no_value() -> None:
    parts = [
        ("a", MetricResult(value=1.0), 0.5),
        ("b", MetricResult(value=0.2, scored=False), 0.3),
        ("c", MetricResult(value=None, scored=True), 0.1),
        ("d", None, 0.1),
        ("e", MetricResult(value=0.0), 0.5),
    ]
    assert weighted_score(parts) == (pytest.approx(0.5), ["b", "c", "d"])
    assert weighted_score([("b", MetricResult(value=0.2, scored=False), 1.0)]) == (None, ["b"])


def test_an_unknown_metric_names_the_task() -> None:
    with pytest.raises(KeyError, match="qa has no metric 'tone'"):
        TASK.spec("tone")


def test_the_golden_truth_is_read_strictly() -> None:
    case = GoldenCase.model_validate({
        "id": "c", "task": "qa", "transcript": "agent: Hello\ncustomer: Hi",
        "config": asked(EXPECTED),
        "expected_outcome": {"questions": [{**question("Q1", 4), "score": "4"},
                                           question("Q2", 0, qtype="PASS_FAIL")]},
    })
    # Read leniently, "4" would pass as the number 4.
    assert TASK.check_case(case) == [
        "expected_outcome.questions[0].score: Input should be a valid number"]
    with pytest.raises(ValidationError):
        TASK.case_models(case)


def test_a_case_without_golden_truth_says_it_is_required() -> None:
    case = GoldenCase.model_validate({
        "id": "c", "task": "qa", "transcript": "agent: Hello\ncustomer: Hi",
        "config": asked(EXPECTED),
    })
    assert TASK.check_case(case) == [
        "expected_outcome: missing (the golden truth is required)"]


def test_a_request_for_a_metric_the_task_does_not_define_is_instructed_by_its_id() -> None:
    ctx = _ctx(EXPECTED)
    request = TASK.request(ctx, "tone_of_voice", "unit", {"x": 1})
    assert (request.metric, request.instructions, request.focus) == (
        "tone_of_voice", "tone_of_voice", {"x": 1})
    own = TASK.request(ctx, "evidence_backed_reasoning", "unit", {})
    assert own.instructions == TASK.spec("evidence_backed_reasoning").rubric
    given = TASK.request(ctx, "evidence_backed_reasoning", "unit", {}, instructions="say so")
    assert given.instructions == "say so"


def test_verdicts_become_results_with_their_reason_details_and_flag() -> None:
    metric = "evidence_backed_reasoning"
    missing = TASK.from_verdict(metric, None)
    assert (missing.scored, missing.reason) == (False, "no judge verdict")
    unscored = TASK.from_verdict(metric, JudgeVerdict(
        metric=metric, score=None, reason="cannot tell", details={"quotes": 0}))
    assert (unscored.scored, unscored.reason, unscored.details) == (
        False, "cannot tell", {"quotes": 0})
    flagged = TASK.from_verdict(metric, JudgeVerdict(
        metric=metric, score=0.8, reason="mostly", details={"quotes": 2}, flagged=True))
    assert (flagged.value, flagged.reason, flagged.details, flagged.flagged) == (
        0.8, "mostly", {"quotes": 2}, True)
    assert TASK.from_verdict(metric, JudgeVerdict(metric=metric, score=1.0,
                                                  reason="ok")).flagged is False


def test_a_void_result_keeps_its_model_and_run() -> None:
    result = TASK.score(_ctx("not json"), {})
    assert (result.model, result.run, result.valid, result.score) == ("m", 2, False, None)


def test_a_finished_result_lists_what_was_not_scored_and_keeps_model_and_run() -> None:
    result = TASK.score(_ctx(EXPECTED), {})
    assert (result.model, result.run) == ("m", 2)
    # No verdict for evidence: its weight is dropped; QA accuracy and gap are 1.
    assert result.not_scored == ["evidence_backed_reasoning"]
    assert result.score == pytest.approx(1.0)
    assert result.notes == ["weights renormalised without: evidence_backed_reasoning "
                            "(not scored)"]


class _TwoVoiding(QATask):
    voiding = frozenset({"response_structure_compliance", "compliance_false_pass_rate"})


def test_every_voiding_blocker_is_named_with_the_score_it_would_have_had() -> None:
    ctx = _ctx(EXPECTED)
    blocker = MetricResult(value=1.0, rating="blocker", blocker=True)
    metrics = {"compliance_false_pass_rate": blocker}
    ctx.structure = MetricResult(value=0.0, rating="blocker", blocker=True)
    result = _TwoVoiding().finalize(ctx, metrics, 0.75, [])
    assert result.notes == ["score void (invalid) because of blocker: "
                            "response_structure_compliance, compliance_false_pass_rate; it "
                            "would have been 0.750"]
    assert (result.score, result.valid) == (None, False)
    nothing = _TwoVoiding().finalize(ctx, metrics, None, [])
    assert nothing.notes == ["score void (invalid) because of blocker: "
                             "response_structure_compliance, compliance_false_pass_rate"]


def test_a_task_with_nothing_scored_says_so() -> None:
    ctx = _ctx(EXPECTED)
    result = TASK.finalize(ctx, {"question_score_accuracy": MetricResult.not_scored("n/a")},
                           None, ["question_score_accuracy"])
    assert result.notes == [
        "weights renormalised without: question_score_accuracy (not scored)",
        "no metric of this task could be scored"]
    assert result.not_scored == ["question_score_accuracy"]
    # Unknown, not invalid: an invalid case counts 0 in the task score, a number nobody
    # measured.
    assert (result.valid, result.score, result.score_unknown) == (True, None, True)
    assert not result.incomplete

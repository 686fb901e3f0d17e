"""The garbled turn rate when the judge could not score some turns: the rate is lowest with
none of those turns garbled and every turn the judge gave no verdict at all on counted (its
verdicts could have been scores). When even that lowest rate — the turns known garbled over
every turn that has or may have a score — is not below the threshold, the rate fails whatever
the judge would have said: it is reported as failed, a lower bound, while the metrics that
depend on the unknown verdicts stay judge errors. Before, any unknown turn made the rate a
judge error. Otherwise it stays one."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_callqa import assert_metric, assert_no_blockers, assert_no_garbled_turns
from pytest_callqa.engine.core.results import JudgeUnavailable, TaskResult
from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.policy import apply_policy
from pytest_callqa.engine.registry import default_registry
from pytest_callqa.engine.tasks.conversation import (
    COMBINED,
    QUALITY_METRICS,
    ConversationConfig,
    ConversationTask,
)
from tests.engine.helpers import TFIDF

from .helpers import ScriptedJudge
from .test_conversation import BOT_TURNS, GOOD, _case, _eval, _FailingOn, _judge


def turn_1_garbled_turn_5_unknown(**case: Any) -> TaskResult:
    """Turn 1 unintelligible (garbled), turn 5's context a judge error (its other two scores
    are 5: whether it is garbled is unknown), turns 3 and 7 clean."""
    judge = _FailingOn(_judge(intelligibility={1: 1, 3: 5, 5: 5, 7: 5}), {("context", "turn 5")})
    return _eval(judge=judge, **case)


def test_turns_known_garbled_past_the_threshold_fail_the_rate_whatever_the_judge_missed(
        ) -> None:
    result = turn_1_garbled_turn_5_unknown()
    rate = result.metrics["garbled_turn_rate"]
    # 1 garbled of 4 turns at the least: 25 % is not below 10 % whatever turn 5 is.
    assert rate.value == 0.25 and rate.scored and not rate.judge_error
    assert rate.rating == "fail"
    assert rate.details["lower_bound"] is True and rate.details["passed"] is False
    assert rate.details["garbled_turns"] == [1] and rate.details["unknown_turns"] == [5]
    assert (rate.details["numerator"], rate.details["denominator"]) == (1, 4)
    assert rate.reason == (
        "at least 1 of 4 turns garbled (a score <= 2): turn 1; the judge could not score "
        "turn 5 (context), so the rate is at least 25.0%, not below 10% whatever those turns "
        "are")
    # What depends on turn 5's context verdict stays unknown.
    assert result.judge_errors == ["context"]
    assert result.metrics["context"].judge_error
    assert result.score is None and result.incomplete


def test_a_turn_the_judge_gave_no_verdict_at_all_on_may_count_in_the_rate() -> None:
    # Combined mode: turn 3's one verdict failed, so it may be a clean turn with scores. 1
    # garbled turn over the 3 scored is 33 %, but over 4 it is 25 %: a threshold of 30 % is
    # undecided, one of 25 % is not.
    details = {f"turn {t}": {m: 1 if t == 1 else 5 for m in QUALITY_METRICS} for t in BOT_TURNS}
    judge = _FailingOn(ScriptedJudge({COMBINED: 5}, item_details={COMBINED: details}),
                       {(COMBINED, "turn 3")})
    undecided = _eval(judge=judge, config={"combined": True, "garbled_rate_threshold": 0.3})
    assert undecided.metrics["garbled_turn_rate"].judge_error
    decided = _eval(judge=judge, config={"combined": True, "garbled_rate_threshold": 0.25})
    rate = decided.metrics["garbled_turn_rate"]
    assert rate.value == 0.25 and rate.rating == "fail" and not rate.judge_error
    assert rate.details["unknown_turns"] == [3]
    assert decided.judge_errors == sorted(QUALITY_METRICS)


def test_turns_known_garbled_under_the_threshold_leave_the_rate_unknown() -> None:
    result = turn_1_garbled_turn_5_unknown(config={"garbled_rate_threshold": 0.5})
    rate = result.metrics["garbled_turn_rate"]
    assert rate.judge_error and rate.value is None and rate.rating is None
    assert result.judge_errors == ["context", "garbled_turn_rate"]


def test_the_garbled_turns_helper_fails_on_a_rate_the_known_turns_decide() -> None:
    result = turn_1_garbled_turn_5_unknown()
    with pytest.raises(AssertionError) as info:
        assert_no_garbled_turns(result)
    lines = str(info.value).splitlines()
    assert lines[0] == ("garbled turn rate at least 25.0% is not below 10% for model '(unnamed)', "
                        "case 'case-1'")
    assert "  turn 1: {'intelligibility': 1.0, 'segmentation': 5.0, 'context': 5.0}" in lines
    with pytest.raises(AssertionError, match=r"at least 25\.0% is not below 20%"):
        assert_no_garbled_turns(result, max_rate=0.2)
    with pytest.raises(AssertionError, match=r"garbled_turn_rate = 25\.0% > max 20\.0%"):
        assert_metric(result, "garbled_turn_rate", max=0.2)
    with pytest.raises(AssertionError, match="is rated fail"):
        assert_metric(result, "garbled_turn_rate")


def test_a_bound_the_lowest_rate_does_not_reach_is_an_error_never_a_pass() -> None:
    result = turn_1_garbled_turn_5_unknown()
    with pytest.raises(JudgeUnavailable, match="could not score context"):
        assert_no_garbled_turns(result, max_rate=0.5)
    with pytest.raises(JudgeUnavailable, match="could not score context"):
        assert_metric(result, "garbled_turn_rate", max=0.5)
    # A minimum alone on a rate is the test's own error (it passes the worst rates), known
    # before the rate is read.
    with pytest.raises(ValueError, match="garbled_turn_rate is lower-is-better"):
        assert_metric(result, "garbled_turn_rate", min=0.2)


def policy_result(rule: dict[str, Any]) -> TaskResult:
    registry = default_registry().copy()
    apply_policy(registry, {"metrics": {"garbled_turn_rate": rule}}, "pyproject.toml")
    judge = _FailingOn(_judge(intelligibility={1: 1, 3: 5, 5: 5, 7: 5}), {("context", "turn 5")})
    return evaluate(_case(), GOOD, judge=judge, embedder=TFIDF, registry=registry)


def test_a_policy_blocker_on_the_rate_fires_on_the_lowest_rate() -> None:
    result = policy_result({"threshold": 0.1, "blocker": True})
    assert result.blockers == ["garbled_turn_rate"]
    with pytest.raises(AssertionError, match=r"1 blocker .*: garbled_turn_rate"):
        assert_no_blockers(result)


def test_a_policys_rating_of_the_lowest_rate_is_no_pass() -> None:
    # The policy's 50 % rates 25 % good; the rate itself may be anything from 25 % to 50 %.
    result = policy_result({"threshold": 0.5})
    assert result.metrics["garbled_turn_rate"].rating == "good"
    with pytest.raises(JudgeUnavailable, match="could not score context"):
        assert_metric(result, "garbled_turn_rate")


def test_a_turn_without_any_score_counts_among_the_turns_a_judge_error_leaves_open() -> None:
    # Nine scored turns (one garbled), a judge error on turn 9 and nothing scored on turn
    # 10 (offline: a turn the proxy cannot read). The lowest rate is 1 of 11, below 10 %:
    # undecided. Turn 10 was left out of the count, a failure "at least 1 of 10".
    def full(turn: int, score: int) -> dict[str, Any]:
        return {"turn": turn, "scores": dict.fromkeys(QUALITY_METRICS, score),
                "garbled": score <= 2}

    every = sorted(QUALITY_METRICS)
    rate = ConversationTask._garbled([full(0, 1), *(full(t, 5) for t in range(1, 9))],
                                     [(9, every)], [(10, every)], ConversationConfig())
    assert (rate.value, rate.judge_error) == (None, True)
    assert rate.reason == (
        "the judge could not score turn 9 (context, intelligibility, segmentation) and the "
        "judge gave no score for context, intelligibility, segmentation on turn 10, so "
        "whether those turns are garbled is unknown")

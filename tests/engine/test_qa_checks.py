"""One QA question's checks (``_checks``) at their edges: the EPS either side of the range
and of the tolerance, a PASS_FAIL exact, a false pass only on a failed PASS_FAIL, and what a
missing answer counts as."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.tasks.call_schemas import QAQuestion
from pytest_callqa.engine.tasks.qa import _checks


def q(score: float, qtype: str = "SCORE", max_score: float = 5.0) -> QAQuestion:
    return QAQuestion(question_id="Q", score=score, max_score=max_score, type=qtype, reason="r")


def test_a_missing_answer_is_wrong_with_the_whole_gap() -> None:
    assert _checks(None, q(3)) == (False, 1.0, False, False, False)


@pytest.mark.parametrize(("answer", "expected"), [
    (q(4.5), (True, 0.1, False, False, False)),          # the tolerance is inclusive
    (q(4.6), (False, pytest.approx(0.12), False, False, False)),
    (q(0), (False, 0.8, False, False, False)),           # 0 is in range
    (q(5 + 1e-10), (False, pytest.approx(0.2), False, False, False)),  # within EPS of max
    (q(5.1), (False, pytest.approx(0.22), True, False, False)),
    (q(-1e-10), (False, pytest.approx(0.8), False, False, False)),
    (q(-0.1), (False, pytest.approx(0.82), True, False, False)),
    (q(14), (False, 1.0, True, False, False)),           # the gap is capped at 1
])
def test_a_score_question(answer: QAQuestion, expected: tuple) -> None:
    assert _checks(answer, q(4)) == expected


@pytest.mark.parametrize(("score", "expected"), [
    (5, (True, 0.0, False, False, False)),
    (4.5, (False, 0.1, False, True, False)),             # no tolerance, an illegal value
    (1e-10, (False, pytest.approx(1.0), False, False, False)),  # 0 within EPS: not illegal
    (5 - 1e-10, (True, pytest.approx(0.0, abs=1e-9), False, False, False)),
    (0, (False, 1.0, False, False, False)),
    (-1, (False, 1.0, True, False, False)),              # out of range, not illegal
])
def test_a_pass_fail_question_passed(score: float, expected: tuple) -> None:
    assert _checks(q(score, "PASS_FAIL"), q(5, "PASS_FAIL")) == expected


@pytest.mark.parametrize(("score", "false_pass"), [
    (5, True), (4.99, True), (1e-10, False), (0, False), (-1, False)])
def test_a_false_pass_is_any_score_above_0_on_a_failed_pass_fail(score: float,
                                                                 false_pass: bool) -> None:
    assert _checks(q(score, "PASS_FAIL"), q(0, "PASS_FAIL"))[4] is false_pass
    # A SCORE question expected 0 is never falsely passed.
    assert _checks(q(score), q(0))[4] is False


def test_the_gap_is_over_the_expected_max_score() -> None:
    assert _checks(q(2, max_score=10), q(4, max_score=10))[1] == pytest.approx(0.2)
    assert _checks(q(4.9, max_score=10), q(4, max_score=10))[0] is True  # 10 % of 10
    assert _checks(q(5.1, max_score=10), q(4, max_score=10))[0] is False

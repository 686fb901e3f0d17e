"""The QA task at its edges: the ±10 % tolerance only for SCORE questions and inclusive at
its bound, 0 and max_score inside the range, a false pass at exactly max_score, and the
per-question details the reports show."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.evaluate import evaluate

from .helpers import TFIDF, asked, make_case, question

EXPECTED = {"questions": [
    question("Q1", 4), question("Q2", 0, qtype="PASS_FAIL"), question("Q3", 3),
    question("Q4", 0), question("Q5", 5, qtype="PASS_FAIL"), question("Q6", 2),
]}
OUTPUT = {"questions": [
    question("Q1", 4.5),                     # off by exactly the tolerance, 0.1 × 5: correct
    question("Q2", 5, qtype="PASS_FAIL"),    # a fail answered with exactly max_score: false pass
    question("Q4", 0),                       # 0 is in range: correct
    question("Q5", 4.5, qtype="PASS_FAIL"),  # PASS_FAIL has no tolerance: wrong
]}                                           # Q3 and Q6 are missing


@pytest.fixture
def metrics() -> dict:
    # Function scope on purpose: mutmut runs, for each mutant, only the tests that called the
    # mutated function, and a module-scoped result would be computed in the first test alone.
    case = make_case("qa", EXPECTED, config=asked(EXPECTED))
    return evaluate(case, OUTPUT, embedder=TFIDF).metrics


def test_accuracy_counts_the_edges_as_specified(metrics: dict) -> None:
    accuracy = metrics["question_score_accuracy"]
    assert accuracy.value == pytest.approx(2 / 6)
    assert accuracy.reason == "2 of 6 questions scored correctly; missing: Q3, Q6"
    assert {k: accuracy.details[k] for k in ("correct", "total", "missing", "out_of_range")} \
        == {"correct": 2, "total": 6, "missing": ["Q3", "Q6"], "out_of_range": []}


def test_each_question_is_reported(metrics: dict) -> None:
    questions = metrics["question_score_accuracy"].details["questions"]
    assert [q["correct"] for q in questions] == [True, False, False, True, False, False]
    assert questions[0] == {"question_id": "Q1", "type": "SCORE", "expected": 4, "model": 4.5,
                            "max_score": 5, "correct": True,
                            "normalized_gap": pytest.approx(0.1)}
    assert questions[2] == {"question_id": "Q3", "type": "SCORE", "expected": 3, "model": None,
                            "max_score": 5, "correct": False, "normalized_gap": 1.0}


def test_a_false_pass_at_exactly_max_score(metrics: dict) -> None:
    rate = metrics["compliance_false_pass_rate"]
    assert rate.value == pytest.approx(0.5)
    assert rate.reason == "1 of 2 PASS_FAIL questions falsely passed: Q2"
    assert rate.details["false_passes"] == ["Q2"]


def test_an_output_failing_the_structure_check_is_void_and_says_so() -> None:
    case = make_case("qa", EXPECTED, config=asked(EXPECTED))
    result = evaluate(case, "Sure! Here is the scorecard you asked for.", model="m",
                      embedder=TFIDF)
    assert (result.valid, result.score, result.blocked) == (False, None, True)
    assert (result.model, result.run) == ("m", 0)
    assert result.blockers == ["response_structure_compliance"]
    assert result.notes == ["structure check failed: output is not valid JSON (Expecting value "
                            "at char 0): 'Sure! Here is the scorecard you asked for.'"]
    others = [m for k, m in result.metrics.items() if k != "response_structure_compliance"]
    assert others and all(
        not m.scored and m.reason == "not scored: the output failed the structure check"
        for m in others)

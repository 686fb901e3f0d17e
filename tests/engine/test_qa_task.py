"""The QA task at its edges: the ±10 % tolerance only for SCORE questions and inclusive at
its bound, 0 and max_score inside the range, a false pass at exactly max_score, and the
per-question details the reports show."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.evaluate import evaluate

from .helpers import TFIDF, FixedJudge, asked, make_case, question

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
    assert accuracy.reason == ("2 of 6 questions scored correctly; missing: Q3, Q6; "
                               "PASS_FAIL score neither 0 nor max_score: Q5")
    keys = ("correct", "total", "missing", "out_of_range", "not_pass_fail")
    assert {k: accuracy.details[k] for k in keys} == {
        "correct": 2, "total": 6, "missing": ["Q3", "Q6"], "out_of_range": [],
        "not_pass_fail": ["Q5"]}


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


def test_gap_accuracy_reports_the_average_gap(metrics: dict) -> None:
    # Gaps: Q1 0.5/5 = 0.1, Q2 5/5 = 1, Q3 missing = 1, Q4 0, Q5 0.5/5 = 0.1, Q6 missing = 1;
    # mean 3.2 / 6 = 0.5333…
    gap = metrics["score_gap_accuracy"]
    assert gap.value == pytest.approx(1 - 3.2 / 6)
    assert gap.reason == "average normalised gap 0.533"
    assert gap.details == {"average_gap": pytest.approx(3.2 / 6)}


def test_false_pass_counts_are_the_pooled_numerator_and_denominator(metrics: dict) -> None:
    assert metrics["compliance_false_pass_rate"].details == {
        "numerator": 1, "denominator": 2, "false_passes": ["Q2"]}


def test_scores_outside_the_range_are_wrong_and_named() -> None:
    expected = {"questions": [question("Q1", 4), question("Q2", 0, qtype="PASS_FAIL"),
                              question("Q3", 2)]}
    output = {"questions": [question("Q1", 6), question("Q2", -1, qtype="PASS_FAIL"),
                            question("Q3", 2)]}
    case = make_case("qa", expected, config=asked(expected))
    metrics = evaluate(case, output, embedder=TFIDF).metrics
    accuracy = metrics["question_score_accuracy"]
    assert accuracy.value == pytest.approx(1 / 3)
    assert accuracy.reason == ("1 of 3 questions scored correctly; "
                               "score outside 0..max_score: Q1, Q2")
    assert accuracy.details["out_of_range"] == ["Q1", "Q2"]
    assert accuracy.details["missing"] == []
    # A PASS_FAIL answered below 0 is wrong but not a false pass.
    rate = metrics["compliance_false_pass_rate"]
    assert (rate.value, rate.reason) == (0.0, "0 of 1 PASS_FAIL questions falsely passed")


def test_no_pass_fail_question_leaves_the_false_pass_rate_not_scored() -> None:
    expected = {"questions": [question("Q1", 4), question("Q2", 1)]}
    case = make_case("qa", expected, config=asked(expected))
    metrics = evaluate(case, expected, embedder=TFIDF).metrics
    rate = metrics["compliance_false_pass_rate"]
    assert (rate.scored, rate.value) == (False, None)
    assert rate.reason == "n/a: the scorecard has no PASS_FAIL question"
    assert metrics["question_score_accuracy"].reason == "2 of 2 questions scored correctly"


def test_the_evidence_request_carries_each_reason_with_the_expected_one() -> None:
    expected = {"questions": [question("Q1", 4, reason="greeted by name"),
                              question("Q2", 0, qtype="PASS_FAIL", reason="no disclosure")]}
    output = {"questions": [question("Q2", 0, qtype="PASS_FAIL", reason="skipped it"),
                            question("Q1", 4, reason="said hello")]}
    case = make_case("qa", expected, config=asked(expected))
    judge = FixedJudge({"evidence_backed_reasoning": 1.0})
    # Without the Layer 2 benchmarks, whose requests are not the task's.
    result = evaluate(case, output, judge=judge, embedder=TFIDF, benchmarks=False)
    assert [(r.metric, r.scale, r.task) for r in judge.seen] == [
        ("evidence_backed_reasoning", "unit", "qa")]
    assert judge.seen[0].focus == {"reasons": [
        {"question_id": "Q2", "reason": "skipped it", "expected_reason": "no disclosure"},
        {"question_id": "Q1", "reason": "said hello", "expected_reason": "greeted by name"},
    ]}
    # 0.70 × 1 + 0.20 × 1 + 0.10 × 1
    assert result.score == pytest.approx(1.0)


def test_an_unknown_question_id_is_an_output_problem() -> None:
    case = make_case("qa", EXPECTED, config=asked(EXPECTED))
    output = {"questions": [question("Q1", 4), question("Q9", 1), question("Q8", 2)]}
    result = evaluate(case, output, embedder=TFIDF)
    assert result.valid is False
    assert "questions: unknown question_id 'Q9', 'Q8' (not in the scorecard)" in \
        " ".join(result.notes)


@pytest.mark.parametrize("answer", [4.99, 4.5, 1])
def test_a_pass_fail_answer_between_0_and_max_score_is_illegal_and_a_false_pass(
        answer: float) -> None:
    # PASS_FAIL is full marks or zero (seed): any mark on a failed check is read as a pass.
    expected = {"questions": [question("Q1", 5, qtype="PASS_FAIL"),
                              question("FRAUD", 0, qtype="PASS_FAIL")]}
    output = {"questions": [question("Q1", 5, qtype="PASS_FAIL"),
                            question("FRAUD", answer, qtype="PASS_FAIL")]}
    case = make_case("qa", expected, config=asked(expected))
    result = evaluate(case, output, embedder=TFIDF)
    accuracy = result.metrics["question_score_accuracy"]
    assert accuracy.reason == ("1 of 2 questions scored correctly; "
                               "PASS_FAIL score neither 0 nor max_score: FRAUD")
    assert (accuracy.details["not_pass_fail"], accuracy.details["out_of_range"]) == (
        ["FRAUD"], [])
    rate = result.metrics["compliance_false_pass_rate"]
    assert (rate.value, rate.details["false_passes"]) == (0.5, ["FRAUD"])
    assert result.blocked is True and result.blockers == ["compliance_false_pass_rate"]


def test_a_pass_fail_answer_short_of_full_marks_on_a_passed_check_is_named_not_blocked() -> None:
    expected = {"questions": [question("Q1", 5, qtype="PASS_FAIL")]}
    output = {"questions": [question("Q1", 4.5, qtype="PASS_FAIL")]}
    case = make_case("qa", expected, config=asked(expected))
    metrics = evaluate(case, output, embedder=TFIDF).metrics
    assert metrics["question_score_accuracy"].details["not_pass_fail"] == ["Q1"]
    assert metrics["compliance_false_pass_rate"].value == 0.0


def test_a_question_asked_twice_is_a_case_problem() -> None:
    # A live model answers Q2 twice as asked, and an output repeating an id fails the
    # structure check: without this the case's defect voided the model's score.
    expected = {"questions": [question("Q1", 5, qtype="PASS_FAIL"),
                              question("Q2", 0, qtype="PASS_FAIL")]}
    config = {"questions": [{"question_id": "Q1"}, {"question_id": "Q2"},
                            {"question_id": "Q2", "text": "Did the agent read the warning?"}]}
    assert _problems(expected, config) == [
        "config.questions: Value error, question_id 'Q2' asked more than once (each question "
        "of the scorecard needs its own id)"]


@pytest.mark.parametrize(("expected", "config", "problem"), [
    ({"questions": [question("Q1", 2, qtype="PASS_FAIL")]}, None,
     "expected_outcome.questions[0].score: a PASS_FAIL question scores 0 or max_score (5), "
     "got 2"),
    ({"questions": [question("Q1", 2)]},
     {"questions": [{"question_id": "Q1", "type": "SCORE", "max_score": 5},
                    {"question_id": "Q7", "type": "SCORE", "max_score": 5}]},
     "config.questions[1].question_id: 'Q7' has no expected score"),
    ({"questions": [question("Q1", 2), question("Q2", 3)]},
     {"questions": [{"question_id": "Q1", "type": "SCORE", "max_score": 5}]},
     "expected_outcome.questions[1].question_id: 'Q2' is not asked in config.questions (a live "
     "model would never answer it)"),
    ({"questions": [question("Q1", 0)]},
     {"questions": [{"question_id": "Q1", "type": "PASS_FAIL", "max_score": 5}]},
     "expected_outcome.questions[0].type: SCORE but config.questions asks 'Q1' as PASS_FAIL"),
    ({"questions": [question("Q1", 2)]},
     {"questions": [{"question_id": "Q1", "type": "SCORE", "max_score": 10}]},
     "expected_outcome.questions[0].max_score: 5 but config.questions gives 'Q1' max_score 10"),
])
def test_inconsistent_cases_are_refused_naming_the_field(expected, config, problem) -> None:
    assert _problems(expected, config) == [problem]


def test_every_inconsistency_of_a_case_is_reported() -> None:
    expected = {"questions": [question("Q1", 2), question("Q2", 3), question("Q3", 0)]}
    config = {"questions": [{"question_id": "Q3", "type": "PASS_FAIL", "max_score": 5}]}
    assert _problems(expected, config) == [
        "expected_outcome.questions[0].question_id: 'Q1' is not asked in config.questions (a "
        "live model would never answer it)",
        "expected_outcome.questions[1].question_id: 'Q2' is not asked in config.questions (a "
        "live model would never answer it)",
        "expected_outcome.questions[2].type: SCORE but config.questions asks 'Q3' as "
        "PASS_FAIL",
    ]


def _problems(expected, config) -> list[str]:
    from pytest_callqa.engine.core.cases import GoldenCase
    from pytest_callqa.engine.registry import default_registry

    case = GoldenCase.model_validate({
        "id": "c", "task": "qa", "transcript": "agent: Hello\ncustomer: Hi",
        "config": config if config is not None else asked(expected),
        "expected_outcome": expected,
    })
    return default_registry().task("qa").check_case(case)


@pytest.mark.parametrize(("expected_scores", "given", "metric", "reason"), [
    ((0, 0), (5, 5), "compliance_false_pass_rate",
     "2 of 2 PASS_FAIL questions falsely passed: Q1, Q2"),
    ((5, 0), (4.5, 0.5), "question_score_accuracy",
     "0 of 2 questions scored correctly; PASS_FAIL score neither 0 nor max_score: Q1, Q2"),
], ids=["false-passes", "illegal-answers"])
def test_every_offending_pass_fail_answer_is_named(
        expected_scores: tuple[float, float], given: tuple[float, float], metric: str,
        reason: str) -> None:
    expected = {"questions": [question(f"Q{i}", score, qtype="PASS_FAIL")
                              for i, score in enumerate(expected_scores, start=1)]}
    output = {"questions": [question(f"Q{i}", score, qtype="PASS_FAIL")
                            for i, score in enumerate(given, start=1)]}
    case = make_case("qa", expected, config=asked(expected))
    assert evaluate(case, output, embedder=TFIDF).metrics[metric].reason == reason


def test_unscored_evidence_renormalises_the_other_weights_and_says_so() -> None:
    expected = {"questions": [question("Q1", 4), question("Q2", 2)]}
    output = {"questions": [question("Q1", 4), question("Q2", 5)]}
    case = make_case("qa", expected, config=asked(expected))
    judge = FixedJudge({"evidence_backed_reasoning": None})
    result = evaluate(case, output, judge=judge, embedder=TFIDF, benchmarks=False)
    # accuracy 1/2, gap accuracy 1 - (0 + 3/5) / 2 = 0.7: (0.70 × 0.5 + 0.20 × 0.7) / 0.90
    assert result.score == pytest.approx(0.49 / 0.9)
    assert result.renormalised is True
    assert result.notes == ["weights renormalised without: evidence_backed_reasoning "
                            "(not scored)"]


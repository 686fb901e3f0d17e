"""Assertion helpers: they pass on good results, and fail with a message a CI log can carry."""

from __future__ import annotations

import copy
import dataclasses
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from pytest_callqa import (
    TaskResult,
    assert_agent_passes,
    assert_entity_score,
    assert_extraction_f1,
    assert_metric,
    assert_no_blockers,
    assert_no_garbled_turns,
    assert_qa_score,
    assert_text_score,
    assert_translation_score,
    evaluate,
)
from pytest_callqa.assertions import metric_line
from pytest_callqa.engine.core.metrics import CASE_BAR, Bands, MetricSpec
from pytest_callqa.engine.core.results import EvaluationUnavailable, MetricResult
from pytest_callqa.engine.embeddings import TfidfEmbedder
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.registry import default_registry

from .conftest import MiniProject

EMBEDDER = TfidfEmbedder()


def score(case: Any, output: Any, model: str = "beta") -> TaskResult:
    return evaluate(case, output, model=model, embedder=EMBEDDER,
                    judge=HeuristicJudge(embedder=EMBEDDER))


def failure(helper: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(AssertionError) as info:
        helper(*args, **kwargs)
    return str(info.value)


@pytest.fixture
def perfect(golden: dict[str, Any]) -> dict[str, TaskResult]:
    return {cid: score(case, case.expected_outcome, "alpha") for cid, case in golden.items()}


def test_every_helper_passes_on_a_perfect_output(perfect: dict[str, TaskResult]) -> None:
    assert_qa_score(perfect["qa-refund"], 0.99)
    assert_entity_score(perfect["entity-transfer"], 0.99)
    assert_text_score(perfect["text-appointment"], 0.99)
    assert_translation_score(perfect["translation-fever"], 0.99)
    assert_metric(perfect["entity-transfer"], "keyword_f1", min=1.0, max=1.0)
    assert_metric(perfect["qa-refund"], "question_score_accuracy")
    # Both bounds of a lower-is-better rate: a range, which stands.
    assert_metric(perfect["qa-refund"], "compliance_false_pass_rate", min=0.0, max=0.01)
    for result in perfect.values():
        assert_no_blockers(result)


def test_qa_score_message_names_model_case_metrics_blockers_and_judge(
    golden: dict[str, Any], beta: dict[str, Any]
) -> None:
    result = score(golden["qa-refund"], beta["qa-refund"])
    message = failure(assert_qa_score, result, min_score=0.9)
    lines = message.splitlines()
    assert lines[0] == "QA score 0.700 < 0.900 for model 'beta', case 'qa-refund'"
    assert ("  question_score_accuracy = 0.667 (fail; threshold >= 0.95) — 2 of 3 questions "
            "scored correctly") in lines
    assert ("  compliance_false_pass_rate = 50.0% (blocker; threshold <= 1% | > 3% blocker) — "
            "1 of 2 PASS_FAIL questions falsely passed: Q2") in lines
    assert "  blockers: compliance_false_pass_rate" in lines
    # The Layer 2 benchmark that failed comes after the task's own metrics, under a heading:
    # it weighs nothing in the score (it was listed among them, as if it did).
    heading = lines.index("  Layer 2 benchmarks (not in the task score):")
    exact = next(i for i, line in enumerate(lines) if line.startswith("  exact_match = "))
    own = lines.index("  compliance_false_pass_rate = 50.0% (blocker; threshold <= 1% | > 3% "
                      "blocker) — 1 of 2 PASS_FAIL questions falsely passed: Q2")
    assert own < heading < exact


def test_judge_reason_is_quoted_for_a_failing_judge_metric(golden: dict[str, Any]) -> None:
    output = copy.deepcopy(golden["qa-refund"].expected_outcome)
    for question in output["questions"]:
        question["reason"] = "Agent was polite."
    result = score(golden["qa-refund"], output)
    message = failure(assert_qa_score, result, min_score=0.99)
    assert re.search(r"  evidence_backed_reasoning = 0\.000 \(fail; threshold >= 0\.90\) — "
                     r"judge heuristic: 0 of 3 reasons cite evidence", message), message


def test_task_score_fails_on_blockers_even_above_the_minimum(
    golden: dict[str, Any], beta: dict[str, Any]
) -> None:
    result = score(golden["qa-refund"], beta["qa-refund"])
    message = failure(assert_qa_score, result, min_score=0.5)
    assert message.startswith("QA score 0.700 >= 0.500 but blocker(s) fired for model 'beta', "
                              "case 'qa-refund': compliance_false_pass_rate")
    assert_qa_score(result, 0.5, allow_blockers=True)


def test_entity_score_message(golden: dict[str, Any], beta: dict[str, Any]) -> None:
    result = score(golden["entity-transfer"], beta["entity-transfer"])
    message = failure(assert_entity_score, result, min_score=0.95)
    assert message.startswith("Entity score 0.906 < 0.950 for model 'beta', "
                              "case 'entity-transfer'")
    assert "  keyword_f1 = 0.800 (fail; threshold >= 0.90) — P=1.00 R=0.67" in message
    assert "  keyword_recall = 0.667 (fail; threshold >= 0.90) — 2 of 3 expected keywords " \
           "detected; missed: transfer" in message


def test_text_score_message_for_an_invalid_output(golden: dict[str, Any]) -> None:
    result = score(golden["text-appointment"], "The call went fine.")
    message = failure(assert_text_score, result, min_score=0.8)
    lines = message.splitlines()
    assert lines[0] == ("Text score invalid for model 'beta', case 'text-appointment' "
                        "(required >= 0.800)")
    # A bar of more digits is shown as given: "0.856" was a bar the test never set.
    assert failure(assert_text_score, result, min_score=0.8555).splitlines()[0].endswith(
        "(required >= 0.8555)")
    assert any(line.startswith("  response_structure_compliance = 0.000 (blocker; threshold "
                               "must = 1) — output is not valid JSON") for line in lines)
    assert "  blockers: response_structure_compliance" in lines


def test_translation_score_message(golden: dict[str, Any]) -> None:
    output = copy.deepcopy(golden["translation-fever"].expected_outcome)
    output["sentence_translations"][1]["translated_text"] = "tuve fiebre de 103 ayer"
    output["full_translation"] = "¿cuánto tiene de fiebre? tuve fiebre de 103 ayer"
    result = score(golden["translation-fever"], output)
    message = failure(assert_translation_score, result, min_score=0.99)
    assert "for model 'beta', case 'translation-fever'" in message.splitlines()[0]
    assert re.search(r"  critical_fact_preservation = 0\.\d{3} \(blocker; threshold >= 0\.97 \| "
                     r"< 0\.97 blocker\) — judge heuristic: .*'102' omitted or changed", message)


def test_wrong_helper_for_the_task_is_a_type_error(perfect: dict[str, TaskResult]) -> None:
    with pytest.raises(TypeError, match=r"assert_qa_score needs a qa result, got a result of "
                                        r"task 'entity' .*; use assert_entity_score"):
        assert_qa_score(perfect["entity-transfer"], 0.5)


@pytest.mark.parametrize(("call", "error", "message"), [
    # NaN compares false with everything: each of these passed, whatever the result.
    (lambda r: assert_qa_score(r, float("nan")), TypeError,
     "assert_qa_score: min_score must be a finite number, got nan"),
    (lambda r: assert_metric(r, "question_score_accuracy", min=float("nan")), TypeError,
     "assert_metric: min must be a finite number, got nan"),
    (lambda r: assert_metric(r, "question_score_accuracy", max=float("inf")), TypeError,
     "assert_metric: max must be a finite number, got inf"),
    (lambda r: assert_metric(r, "question_score_accuracy", min="0.5"), TypeError,
     "assert_metric: min must be a finite number, got '0.5'"),
    # Off the 0-1 scale, a minimum always passes (below) or always fails (above).
    (lambda r: assert_qa_score(r, -5), ValueError,
     "assert_qa_score: min_score must lie on the score's scale, 0 to 1, got -5"),
    (lambda r: assert_qa_score(r, 85), ValueError,
     "assert_qa_score: min_score must lie on the score's scale, 0 to 1, got 85"),
    # A lone minimum on a lower-is-better rate passes its worst values and fails the best.
    (lambda r: assert_metric(r, "compliance_false_pass_rate", min=0.03), ValueError,
     "assert_metric: compliance_false_pass_rate is lower-is-better (threshold <= 1% | > 3% "
     "blocker), so min=0.03 alone passes every higher value, the worst ones included; bound "
     "it with max=, or give min and max for a range"),
])
def test_a_bound_no_result_can_be_held_to_is_an_error_never_a_pass(
        perfect: dict[str, TaskResult], call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        call(perfect["qa-refund"])
    assert str(info.value) == message


def test_a_bound_may_be_any_real_number(perfect: dict[str, TaskResult]) -> None:
    # A numpy scalar, a Fraction or a Decimal was refused: "min must be a finite number, got
    # np.float32(0.9)".
    np = pytest.importorskip("numpy")
    qa = perfect["qa-refund"]
    for bound in (np.float32(0.9), np.int64(1), Fraction(9, 10), Decimal("0.9")):
        assert_metric(qa, "question_score_accuracy", min=bound, max=1)
        assert_qa_score(qa, bound)
    with pytest.raises(AssertionError, match=r"question_score_accuracy = 1\.000 > max 0\.500"):
        assert_metric(qa, "question_score_accuracy", max=Fraction(1, 2))
    with pytest.raises(ValueError, match=r"min_score must lie on the score's scale, 0 to 1, "
                                         r"got Decimal\('85'\)"):
        assert_qa_score(qa, Decimal("85"))
    for no_number in (True, np.bool_(True), 1 + 0j, Decimal("NaN"), Decimal("sNaN"), 10 ** 400):
        with pytest.raises(TypeError, match="min must be a finite number"):
            assert_metric(qa, "question_score_accuracy", min=no_number)
    # A metric id in a list was a bare "unhashable type: 'list'".
    with pytest.raises(TypeError, match=(
            r"^assert_metric: metric_id must be a metric's id \(a str\), got list "
            r"\['question_score_accuracy'\]$")):
        assert_metric(qa, ["question_score_accuracy"])


def test_assert_metric_messages(golden: dict[str, Any], beta: dict[str, Any],
                                perfect: dict[str, TaskResult]) -> None:
    result = score(golden["entity-transfer"], beta["entity-transfer"])
    message = failure(assert_metric, result, "keyword_f1", min=0.9)
    assert message.splitlines() == [
        "keyword_f1 = 0.800 < min 0.900 for model 'beta', case 'entity-transfer'",
        "  keyword_f1 = 0.800 (fail; threshold >= 0.90) — P=1.00 R=0.67",
    ]
    message = failure(assert_metric, result, "keyword_f1", max=0.5)
    assert message.startswith("keyword_f1 = 0.800 > max 0.500 for model 'beta'")
    message = failure(assert_metric, result, "keyword_f1")
    assert message.startswith("keyword_f1 = 0.800 is rated fail (threshold >= 0.90) for model")
    with pytest.raises(KeyError, match="metric 'bleu' is not part of the entity result"):
        assert_metric(result, "bleu", min=0.1)


def test_a_metric_without_a_value_fails_only_a_model_whose_output_failed(
        golden: dict[str, Any], perfect: dict[str, TaskResult]) -> None:
    # The heuristic judge cannot estimate fluency: the tool's gap, not the model's failure
    # (it was an AssertionError, a failed test, for the model that passes everything).
    with pytest.raises(EvaluationUnavailable) as info:
        assert_metric(perfect["translation-fever"], "target_fluency", min=0.5)
    assert str(info.value) == (
        "target_fluency could not be estimated for model 'alpha', case 'translation-fever', so "
        "it cannot be checked (not a model failure): the heuristic judge cannot estimate "
        "target_fluency honestly; use an LLM judge (--callqa-judge openai)")
    # A metric that does not apply to the case skips the test, with the reason.
    assert perfect["entity-transfer"].metrics["cross_language_match_rate"].not_applicable
    with pytest.raises(pytest.skip.Exception) as skipped:
        assert_metric(perfect["entity-transfer"], "cross_language_match_rate", min=0.5)
    assert str(skipped.value) == (
        "cross_language_match_rate does not apply for model 'alpha', case 'entity-transfer': "
        "n/a: no expected entity is mentioned in another script or language")
    # An output that failed its structure check: every other metric is unscored, the
    # model's failure.
    invalid = score(golden["entity-transfer"], {"entities": "not a list"})
    assert not invalid.valid
    message = failure(assert_metric, invalid, "keyword_f1", min=0.5)
    assert message.startswith("keyword_f1 was not scored for model 'beta', case "
                              "'entity-transfer'")


def test_assert_no_blockers_message(golden: dict[str, Any], beta: dict[str, Any]) -> None:
    result = score(golden["qa-refund"], beta["qa-refund"])
    assert failure(assert_no_blockers, result).splitlines() == [
        "1 blocker for model 'beta', case 'qa-refund' (qa): compliance_false_pass_rate",
        "  compliance_false_pass_rate = 50.0% (blocker; threshold <= 1% | > 3% blocker) — "
        "1 of 2 PASS_FAIL questions falsely passed: Q2",
    ]


def test_failure_message_reaches_the_pytest_report(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests("""
        import pytest
        from pytest_callqa import assert_qa_score

        @pytest.mark.callqa(task="qa")
        def test_qa(callqa_result):
            assert_qa_score(callqa_result, min_score=0.9)
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    # The failure is the helper's message alone: no traceback around it.
    result.stdout.fnmatch_lines([
        "_*_ test_qa[[]beta-qa-refund[]] _*_",
        "QA score 0.700 < 0.900 for model 'beta', case 'qa-refund'",
        "  question_score_accuracy = 0.667 (fail; threshold >= 0.95) — 2 of 3 questions *",
        "  compliance_false_pass_rate = 50.0% (blocker; threshold <= 1% | > 3% blocker) — *",
        "  exact_match = 0.667 (fail; threshold 1 if >= 0.90) — 2 of 3 closed-form fields *",
        "  blockers: compliance_false_pass_rate",
    ])
    assert "_assert_task_score" not in result.stdout.str()
    assert "AssertionError" not in result.stdout.str()


def test_escape_sequences_in_a_models_text_are_shown_escaped(
        golden: dict[str, Any], beta: dict[str, Any]) -> None:
    # An output's keyword holding a terminal escape (or a bidi override) reached the failure
    # message as it was: printed, it recoloured or erased lines of the CI log.
    output = copy.deepcopy(beta["entity-transfer"])
    output["detected_keywords"].append("\x1b[2K\x1b[32mPASSED\u202e")
    result = score(golden["entity-transfer"], output)
    message = failure(assert_entity_score, result, 0.99)
    assert "\x1b" not in message and "\u202e" not in message
    assert "\\x1b[2K\\x1b[32mPASSED\\u202e" in message


def with_value(result: TaskResult, metric_id: str, value: float) -> TaskResult:
    """``result`` with the metric's value replaced (a value float arithmetic can give)."""
    twin = copy.deepcopy(result)
    twin.metrics[metric_id] = dataclasses.replace(twin.metrics[metric_id], value=value)
    return twin


def test_a_value_at_a_bound_but_for_float_arithmetic_meets_it(
        golden: dict[str, Any], beta: dict[str, Any], perfect: dict[str, TaskResult]) -> None:
    # Both failed ("1.000 < min 1.000", "0.906 < 0.906"): a rating rounds a value to 9
    # digits before it compares it with a band's edge, and so does a helper with its bound.
    meaning = perfect["translation-fever"]
    assert meaning.metrics["sentence_meaning_accuracy"].value == 0.9999999999999998
    assert_metric(meaning, "sentence_meaning_accuracy", min=1.0)
    entity = score(golden["entity-transfer"], beta["entity-transfer"])
    assert entity.score == 0.9059999999999999
    assert_entity_score(entity, min_score=0.906, allow_blockers=True)
    keywords = with_value(entity, "keyword_f1", 0.30000000000000004)
    assert_metric(keywords, "keyword_f1", max=0.3)
    # Past the rounding, the bound still holds; the message shows the digits that tell the
    # two apart (it read "0.300 > max 0.300").
    message = failure(assert_metric, keywords, "keyword_f1", max=0.299999999)
    assert message.startswith("keyword_f1 = 0.300000000 > max 0.299999999 for model 'beta'")
    message = failure(assert_entity_score, entity, min_score=0.906000001, allow_blockers=True)
    assert message.startswith("Entity score 0.906000000 < 0.906000001 for model 'beta'")
    # A bound of more digits than a rating keeps, met exactly (rounding the value alone
    # failed it: 0.333333333 < 1/3).
    third = with_value(entity, "keyword_f1", 1 / 3)
    assert_metric(third, "keyword_f1", min=1 / 3, max=1 / 3)


def custom_result(golden: dict[str, Any], spec: MetricSpec, value: Any) -> TaskResult:
    registry = default_registry().copy()

    def compute(case: Any, output: Any, result: Any) -> Any:
        if isinstance(value, Exception):
            raise value
        return value

    registry.register_metric(spec, compute)
    case = golden["qa-refund"]
    return evaluate(case, case.expected_outcome, model="alpha", embedder=EMBEDDER,
                    judge=HeuristicJudge(embedder=EMBEDDER), registry=registry)


CUSTOM_BLOCKER = MetricSpec(id="custom_block", task="qa", name="Custom Block", description="d",
                            scale="0/1", threshold="= 1 | 0 = blocker",
                            bands=Bands(good=1.0, blocker=1.0), blocker=True)


def test_a_custom_metrics_failure_shows_its_threshold(golden: dict[str, Any]) -> None:
    # "custom_block = 0.000 (blocker)": the helpers knew no custom metric's definition.
    result = custom_result(golden, CUSTOM_BLOCKER, 0.0)
    assert failure(assert_no_blockers, result).splitlines() == [
        "1 blocker for model 'alpha', case 'qa-refund' (qa): custom_block",
        "  custom_block = 0.000 (blocker; threshold = 1 | 0 = blocker)",
    ]
    assert failure(assert_metric, result, "custom_block").splitlines()[0] == (
        "custom_block = 0.000 is rated blocker (threshold = 1 | 0 = blocker) for model "
        "'alpha', case 'qa-refund'")
    raised = custom_result(golden, CUSTOM_BLOCKER, KeyError("questions"))
    assert metric_line(raised, "custom_block") == (
        "  custom_block = not scored (threshold = 1 | 0 = blocker) — custom metric raised "
        "KeyError: 'questions'")


@pytest.mark.parametrize(("task", "metric_id", "check"), [
    ("conversation", "garbled_turn_rate", lambda r: assert_no_garbled_turns(r)),
    ("extraction", "signal_f1", lambda r: assert_extraction_f1(r, 0.5)),
    ("agent", "overall_score", lambda r: assert_agent_passes(r)),
])
def test_the_family_helpers_fail_a_missing_value_only_on_a_failed_output(
        task: str, metric_id: str, check: Any) -> None:
    def result(valid: bool) -> TaskResult:
        reason = ("not scored: the output failed the structure check" if not valid
                  else "not scored: no turn has any score")
        return TaskResult(task=task, case_id="c", score=None, valid=valid, blocked=not valid,
                          blockers=[] if valid else ["response_structure_compliance"],
                          model="m", metrics={metric_id: MetricResult.not_scored(reason)})

    # No estimate was made: the check cannot be made (it was the model's failure).
    with pytest.raises(EvaluationUnavailable, match=f"{metric_id} could not be estimated for "
                                                    "model 'm', case 'c'"):
        check(result(valid=True))
    # The model's output failed: its failure.
    with pytest.raises(AssertionError, match=r"invalid|not scored"):
        check(result(valid=False))


@pytest.mark.parametrize("helper", [
    lambda x: assert_metric(x, "keyword_f1", min=0.5), lambda x: assert_no_blockers(x),
    lambda x: assert_entity_score(x, 0.5), lambda x: assert_no_garbled_turns(x),
])
def test_the_models_output_passed_for_its_result_is_named(helper: Any) -> None:
    # callqa_output in place of callqa_result: an AttributeError ('dict' object has no
    # attribute 'task') from inside the helper.
    with pytest.raises(TypeError, match=r"needs an evaluation result \(the callqa_result "
                                        r"fixture\), got dict — the model's output"):
        helper({"entities": []})


def test_a_mistyped_metric_id_suggests_the_closest(perfect: dict[str, TaskResult]) -> None:
    with pytest.raises(KeyError, match="'keyword_f2' is not part of the entity result for "
                                       "case 'entity-transfer'; did you mean 'keyword_f1'"):
        assert_metric(perfect["entity-transfer"], "keyword_f2", min=0.5)


@pytest.mark.parametrize(("reason", "raised", "message"), [
    ("not scored: the heuristic judge cannot estimate it", EvaluationUnavailable,
     r"the QA score could not be estimated for model 'm', case 'c', so it cannot be checked "
     r"\(not a model failure\): no metric of it could be scored \(question_score_accuracy: "
     r"the heuristic judge cannot estimate it\)"),
    ("n/a: no question applies", pytest.skip.Exception,
     r"the QA score does not apply for model 'm', case 'c': question_score_accuracy: n/a"),
])
def test_a_task_score_nothing_of_which_was_scored_is_no_failure_of_the_model(
        reason: str, raised: type[BaseException], message: str) -> None:
    # It was an invalid score: "QA score invalid (required >= 0.800)", the model's failure.
    result = TaskResult(task="qa", case_id="c", score=None, valid=True, blocked=False,
                        blockers=[], model="m", not_scored=["question_score_accuracy"],
                        metrics={"question_score_accuracy": MetricResult.not_scored(reason)})
    with pytest.raises(raised, match=message):
        assert_qa_score(result, 0.8)
    # A blocker that fired still fails it.
    blocked = dataclasses.replace(result, blocked=True, blockers=["compliance_false_pass_rate"])
    with pytest.raises(AssertionError, match=(
            r"QA blocker.s. fired for model 'm', case 'c': compliance_false_pass_rate; no metric "
            r"of the task score could be scored")):
        assert_qa_score(blocked, 0.8)


@pytest.mark.parametrize(("threshold", "shown"), [(0.05, "threshold 5.0%"),
                                                  (0, "threshold 0.0%")])
def test_a_cases_own_bar_is_shown_on_the_metrics_scale(threshold: float, shown: str) -> None:
    # "garbled_turn_rate = 0.0% (good; threshold 0.05)": a rate beside a fraction; a bar of 0
    # was replaced by the built-in rule ("threshold < 10%").
    metric = MetricResult(value=0.0, rating="good",
                          details={"threshold": threshold, CASE_BAR: True})
    result = TaskResult(task="conversation", case_id="c", score=1.0, valid=True,
                        blocked=False, blockers=[], model="m",
                        metrics={"garbled_turn_rate": metric})
    assert metric_line(result, "garbled_turn_rate") == f"  garbled_turn_rate = 0.0% (good; {shown})"


def test_a_check_by_the_rating_of_an_unrated_metric_is_the_tests_error(
        perfect: dict[str, TaskResult]) -> None:
    # emotion_score has no bands: assert_metric without bounds passed on any value, 0 too.
    with pytest.raises(ValueError, match=(
            r"assert_metric: emotion_score for model 'alpha', case 'text-appointment' has no "
            r"rating \(threshold 0\.0 – 1\.0\), so a check without bounds would pass "
            r"any value of it; give min= or max=")):
        assert_metric(perfect["text-appointment"], "emotion_score")
    rate = MetricResult(value=0.5, rating=None)
    result = TaskResult(task="conversation", case_id="c", score=1.0, valid=True,
                        blocked=False, blockers=[], model="m",
                        metrics={"garbled_turn_rate": rate})
    with pytest.raises(ValueError, match=(
            r"assert_no_garbled_turns: garbled_turn_rate for model 'm', case 'c' has no "
            r"rating \(threshold < 10%\), .*; give max_rate=")):
        assert_no_garbled_turns(result)
    rate.details["threshold"] = "disabled by policy"
    with pytest.raises(pytest.skip.Exception, match="garbled_turn_rate is disabled by the"):
        assert_no_garbled_turns(result)
    with pytest.raises(AssertionError, match=r"garbled turn rate 50\.0% is not below 20%"):
        assert_no_garbled_turns(result, max_rate=0.2)


def test_a_value_by_a_band_edge_is_shown_apart_from_it() -> None:
    # "compliance_false_pass_rate = 3.0% is rated blocker (threshold <= 1% | > 3% blocker)":
    # 1/33 rounded onto the edge it is above.
    spec = default_registry().metric("qa", "compliance_false_pass_rate")

    def qa(value: float) -> TaskResult:
        return TaskResult(task="qa", case_id="c", score=0.9, valid=True, blocked=False,
                          blockers=[], model="m",
                          metrics={"compliance_false_pass_rate": spec.result(value)})

    assert "compliance_false_pass_rate = 3.03% is rated blocker (threshold <= 1% | > 3% " \
        "blocker) for model 'm'" in failure(assert_metric, qa(1 / 33),
                                            "compliance_false_pass_rate")
    assert metric_line(qa(1 / 99), "compliance_false_pass_rate").startswith(
        "  compliance_false_pass_rate = 1.01% (acceptable;")
    assert metric_line(qa(0.03), "compliance_false_pass_rate").startswith(
        "  compliance_false_pass_rate = 3.0% (acceptable;")
    # A case's own bar is an edge too: 11.96 % passed a bar of 12 % as "12.0%".
    for value, bar, shown in ((0.0996, 0.1, "9.96%"), (0.1196, 0.12, "11.96%")):
        metric = MetricResult(value=value, rating="good",
                              details={"threshold": bar, CASE_BAR: True})
        result = TaskResult(task="conversation", case_id="c", score=1.0, valid=True,
                            blocked=False, blockers=[], model="m",
                            metrics={"garbled_turn_rate": metric})
        assert metric_line(result, "garbled_turn_rate") == \
            f"  garbled_turn_rate = {shown} (good; threshold {bar:.1%})"

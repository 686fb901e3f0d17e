"""The offline judge's QA and Layer 2 checks: quotes traced to turns, statements checked
against the call and the truth, with the per-batch memo open or not."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.judging import JudgeRequest
from pytest_callqa.engine.core.memo import batch_memo
from pytest_callqa.engine.judges.heuristic import HeuristicJudge, statement_support

TRANSCRIPT = ("agent: Thank you for calling, how can I help?\n"
              "customer: My refund of $49 has not arrived.\n"
              "agent: I can see the refund, it will arrive in 3 to 5 business days.")


def _contextual(metric: str, claims: list[str], expected_claims: list[str]) -> JudgeRequest:
    case = GoldenCase.model_validate({"id": "c", "task": "qa", "transcript": TRANSCRIPT})
    return JudgeRequest(case=case, task="qa", metric=metric, scale="unit", instructions="",
                        model_output={}, focus={"claims": claims,
                                                "expected_claims": expected_claims})


def test_contextual_precision_and_recall_trace_quotes_to_turns() -> None:
    claims = ['The agent said "it will arrive in 3 to 5 business days".',
              'The customer said "my refund of $49 has not arrived".',
              'Nobody said "we will call you back tomorrow".']
    expected = ['Customer: "My refund of $49 has not arrived."', "No quote here."]
    for scope in _with_and_without_memo():
        with scope:
            precision, recall = [HeuristicJudge().judge_one(_contextual(m, claims, expected))
                                 for m in ("contextual_precision", "contextual_recall")]
        # Turns 2 and 1 are cited, turn 1 is needed: 1 of 2 used is needed, 1 of 1 needed
        # is used.
        assert (precision.score, precision.details) == (0.5, {"used": [1, 2], "needed": [1]})
        assert (recall.score, recall.details) == (1.0, {"used": [1, 2], "needed": [1]})


def test_contextual_shares_are_not_scored_when_a_side_cites_no_turn() -> None:
    # A side that cites no turn may still rest on turns: 0 of 0 was scored 0.0, a failed
    # Layer 2 criterion, though neither share can be told offline.
    quoted = ['The customer said "my refund of $49 has not arrived".']
    late = ["The refund is late."]
    for claims, expected, side in ((late, quoted, "the output cites"),
                                   (quoted, late, "the truth cites"),
                                   (late, late, "the output and the truth cite")):
        for metric in ("contextual_precision", "contextual_recall"):
            verdict = HeuristicJudge().judge_one(_contextual(metric, claims, expected))
            assert verdict.score is None
            assert verdict.reason.startswith(f"not scored: {side} no turn of the call")


def test_a_timestamp_cites_the_turn_that_starts_near_it() -> None:
    case = GoldenCase.model_validate({"id": "c", "task": "qa", "transcript": [
        {"speaker": "agent", "text": "Thank you for calling.", "start": 0.0},
        {"speaker": "customer", "text": "My refund has not arrived.", "start": 12.0},
        {"speaker": "agent", "text": "It will arrive in 3 to 5 days.", "start": 30.0}]})
    for metric in ("contextual_precision", "contextual_recall"):
        verdict = HeuristicJudge().judge_one(JudgeRequest(
            case=case, task="qa", metric=metric, scale="unit", instructions="",
            model_output={}, focus={"claims": ["The customer complained at 00:14."],
                                    "expected_claims": ['"My refund has not arrived."',
                                                        "At 00:40 nothing happened."]}))
        # 00:14 points at turn 1 (2 s off); 00:40 is 10 s from the nearest start: no turn.
        assert (verdict.score, verdict.details) == (1.0, {"used": [1], "needed": [1]})


def test_statements_are_checked_against_the_call_and_the_truth() -> None:
    contexts = [TRANSCRIPT, "Refund of $49 confirmed, 3-5 days."]
    for scope in _with_and_without_memo():
        with scope:
            assert statement_support("The refund of $49 arrives in 3 to 5 days.",
                                     contexts) == (True, "supported")
            assert statement_support("The refund of $59 arrives soon.", contexts) == (
                False, "unsupported amount '$59'")
            assert statement_support("A voucher was offered for the inconvenience.",
                                     contexts) == (
                False, "only 0% of its content words occur in the call or the truth")


def test_a_verbatim_phrase_of_a_chinese_call_is_supported() -> None:
    # The whole run of ideographs of a turn was one token, so a phrase quoted from it had
    # 0% of its content words in the call: fabricated, a voiding blocker.
    contexts = ["\u60a8\u597d\uff0c\u8fd9\u91cc\u662f\u94f6\u884c\u5ba2\u670d",
                "\u6211\u60f3\u9884\u7ea6\u4e00\u4e2a\u65f6\u95f4\u6765\u529e\u7406"
                "\u5f00\u6237\u4e1a\u52a1"]
    for scope in _with_and_without_memo():
        with scope:
            for phrase in ("\u529e\u7406\u5f00\u6237\u4e1a\u52a1", "\u94f6\u884c\u5ba2\u670d"):
                assert statement_support(phrase, contexts) == (True, "supported")
            assert statement_support("\u5ba2\u6237\u8981\u6c42\u9000\u6b3e", contexts)[0] \
                is False


def _with_and_without_memo() -> list[AbstractContextManager[None]]:
    return [nullcontext(), batch_memo()]

"""A conversation judged turn by turn with the LLM judge, when some turns go wrong: a turn the
judge could not score leaves its metrics unknown (never a mean over the other turns), a
verdict without one of the scores it was asked for is re-asked and then a judge error, and
the combined judge mode asks each turn in a call of its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.core.judging import JudgeRequest
from pytest_callqa.engine.core.results import JudgeUnavailable, TaskResult
from pytest_callqa.engine.evaluate import evaluate, prepare
from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.judges.prompts import build_messages
from pytest_callqa.engine.judges.replies import Item
from pytest_callqa.engine.llm.windows import count_tokens
from pytest_callqa.testing.fake_replies import first_user_json, judge_items, schema_instance

from .conftest import make_runner
from .helpers import MODEL, SECRET, text_case
from .test_judge_views import SPOKEN, visit

QUALITY = ("intelligibility", "segmentation", "context")
# The bot's turn the fake judge has trouble with.
TROUBLE_TURN = 3


def judge_for(server: Any, mode: str, max_input_tokens: int | None = None,
              **runner: Any) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode=mode,
                       runner=make_runner(**runner), max_input_tokens=max_input_tokens)


def focus_turn(body: dict[str, Any]) -> Any:
    """The turn a one-metric judge request is about."""
    return first_user_json(body)["metric"]["focus"]["turn"]


def replying(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], Any]:
    """A fake judge answering every verdict at the top of its scale, and handing the verdict
    for the trouble turn to ``change`` first."""

    def reply(body: dict[str, Any]) -> Any:
        schema = body["response_format"]["json_schema"]["schema"]
        verdicts = schema_instance(schema)
        for block in judge_items(first_user_json(body)) or []:
            verdict = verdicts[block["metric"]]
            for name in ("score", *QUALITY):
                if name in verdict:
                    verdict[name] = 5
            focus = block.get("focus") or first_user_json(body).get("focus") or {}
            if focus.get("turn") == TROUBLE_TURN:
                change(verdict)
        return verdicts

    return reply


def unknown_turn_quality(result: TaskResult) -> None:
    """The trouble turn's metrics, and what is computed from them, are judge errors."""
    assert result.judge_errors == ["context", "garbled_turn_rate", "intelligibility",
                                   "segmentation"]
    assert result.score is None and result.valid and result.incomplete
    for metric_id in QUALITY:
        metric = result.metrics[metric_id]
        assert metric.value is None and not metric.scored and metric.judge_error
        assert f"turn {TROUBLE_TURN}: " in (metric.reason or "")
        records = metric.details["results"]
        assert [r["status"] for r in records] == ["evaluated", "error", "evaluated"]
    with pytest.raises(JudgeUnavailable, match="garbled_turn_rate"):
        result.metric("garbled_turn_rate")


# --- a turn the judge could not score ---------------------------------------------------


def test_an_unusable_verdict_on_one_turn_leaves_the_conversation_unknown(fake: Any) -> None:
    # Before: the turn was skipped and the other two averaged — 1.000 on every metric, 0 %
    # garbled, and the test passed.
    server = fake(reply=replying(lambda verdict: verdict.pop("reason")))
    result = evaluate(visit(combined=True), SPOKEN, judge=judge_for(server, "combined"),
                      benchmarks=False)
    assert server.requests == 5  # a call per turn, then the trouble turn's two re-asks
    unknown_turn_quality(result)
    assert "judge reply unusable after 3 attempts" in (result.metrics["context"].reason or "")


def test_a_failed_call_for_one_turn_leaves_the_conversation_unknown(fake: Any) -> None:
    server = fake(reply=replying(lambda verdict: None),
                  fault_for=lambda index, body: "503" if focus_turn(body) == TROUBLE_TURN
                  else None)
    result = evaluate(visit(combined=True), SPOKEN,
                      judge=judge_for(server, "per-metric", max_retries=0), benchmarks=False)
    unknown_turn_quality(result)
    assert "judge call failed" in (result.metrics["intelligibility"].reason or "")


# --- a verdict without a score it was asked for -----------------------------------------


def test_a_verdict_without_one_of_its_scores_is_reasked_then_a_judge_error(fake: Any) -> None:
    # Before: one request, context scored 1 ("the most conservative score"), the turn counted
    # garbled: a failure of the model for a reply the judge left incomplete.
    server = fake(reply=replying(lambda verdict: verdict.pop("context")))
    result = evaluate(visit(combined=True), SPOKEN, judge=judge_for(server, "combined"),
                      benchmarks=False)
    assert server.requests == 5  # a call per turn, then the trouble turn's two re-asks
    unknown_turn_quality(result)
    assert "gives no number for context, which the metric asks for" in (
        result.metrics["segmentation"].reason or "")


def test_an_off_scale_score_over_three_scores_on_the_scale_is_a_contradiction(fake: Any) -> None:
    # Before: 0 beside 5, 5, 5 scored all three metrics 1 ("judge score 0.0 is outside the
    # likert5 scale"), each fell to 0.667 and failed, and a third of the turns were garbled.
    def off_scale(verdict: dict[str, Any]) -> None:
        verdict["score"] = 0

    server = fake(reply=replying(off_scale))
    result = evaluate(visit(combined=True), SPOKEN, judge=judge_for(server, "combined"),
                      benchmarks=False)
    assert server.requests == 5  # a call per turn, then the trouble turn's two re-asks
    unknown_turn_quality(result)
    assert "contradicts itself: score 0 is not the lowest of its scores (5)" in (
        result.metrics["context"].reason or "")


def test_a_score_off_the_scale_is_1_for_its_own_metric_only(fake: Any) -> None:
    # Before: context 0 with score 0 (the lowest of the three, as asked) scored all three 1.
    def off_scale(verdict: dict[str, Any]) -> None:
        verdict["context"] = verdict["score"] = 0

    server = fake(reply=replying(off_scale))
    result = evaluate(visit(combined=True), SPOKEN, judge=judge_for(server, "combined"),
                      benchmarks=False)
    assert server.requests == 3 and result.judge_errors == []
    records = {m: result.metrics[m].details["results"][1] for m in QUALITY}
    assert [records[m]["score_1_5"] for m in QUALITY] == [5.0, 5.0, 1.0]
    assert "warning" not in records["intelligibility"]
    assert records["context"]["flagged"]
    assert "judge score 0 is outside the likert5 scale" in records["context"]["warning"]
    assert result.metrics["intelligibility"].value == 1.0
    assert result.metrics["garbled_turn_rate"].details["garbled_turns"] == [TROUBLE_TURN]


# --- a combined call over the input limit -------------------------------------------------


def tokens(items: Sequence[Item]) -> int:
    return count_tokens(build_messages(items))[0]


def between(requests: Sequence[JudgeRequest]) -> int:
    """An input limit every one of ``requests`` fits alone, but not all of them together."""
    together = tokens([Item(f"{r.metric}#{i}", r) for i, r in enumerate(requests)])
    alone = max(tokens([Item(r.metric, r)]) for r in requests)
    assert alone < together
    return (alone + together) // 2


def long_visit(turns: int = 6) -> tuple[GoldenCase, dict[str, Any]]:
    """A conversation whose turns, each with its window of earlier turns, make a long call."""
    filler = "and the bot repeats the doctor's advice on rest and fluids once more " * 8
    transcript = [{"speaker": "patient" if i % 2 == 0 else "bot",
                   "text": f"Line {i}: {filler}".strip()} for i in range(2 * turns)]
    bot = [2 * i + 1 for i in range(turns)]
    case = GoldenCase.model_validate({
        "id": "long-visit", "task": "conversation", "transcript": transcript,
        "config": {"combined": True},
        "expected_outcome": {"turns": [{"turn": t, "text": "x"} for t in bot]}})
    return case, {"turns": [{"turn": t, "text": transcript[t]["text"]} for t in bot]}


def test_a_combined_call_over_the_limit_is_sent_turn_by_turn(fake: Any) -> None:
    # Before: the one combined call was refused and every turn was a judge error.
    case, output = long_visit()
    limit = between(prepare(case, output, benchmarks=False).requests)
    server = fake()
    result = evaluate(case, output, judge=judge_for(server, "combined", limit),
                      benchmarks=False)
    assert server.requests == 6  # one call per turn, none refused
    assert sorted(focus_turn(body) for body in server.bodies) == [1, 3, 5, 7, 9, 11]
    assert result.judge_errors == [] and result.score is not None
    # Each call is the one per-metric mode sends for that turn: the same request, so the
    # same cache entry.
    per_metric = fake()
    evaluate(case, output, judge=judge_for(per_metric, "per-metric", limit), benchmarks=False)
    assert sorted(map(repr, server.bodies)) == sorted(map(repr, per_metric.bodies))


def test_a_combined_conversation_is_asked_turn_by_turn_even_when_it_fits(fake: Any) -> None:
    # Seed 004 judges a turn blind to the turns after it: one call of every turn would show
    # them (before, a call that fitted held them all).
    case, output = long_visit()
    server = fake()
    evaluate(case, output, judge=judge_for(server, "combined", 100_000), benchmarks=False)
    assert sorted(focus_turn(body) for body in server.bodies) == [1, 3, 5, 7, 9, 11]


def test_a_turn_over_the_limit_on_its_own_is_still_a_judge_error(fake: Any) -> None:
    case, output = long_visit()
    limit = between(prepare(case, output, benchmarks=False).requests)
    # The last turn (no later turn has it in its window) grows past the limit alone.
    output["turns"][-1]["text"] = "The bot will not stop talking about fluids. " * 400
    server = fake()
    result = evaluate(case, output, judge=judge_for(server, "combined", limit),
                      benchmarks=False)
    assert server.requests == 5  # the other turns were sent
    assert result.score is None and "intelligibility" in result.judge_errors
    reason = result.metrics["intelligibility"].reason or ""
    assert "input too large: the judge call for turn 11 of case 'long-visit'" in reason
    records = result.metrics["intelligibility"].details["results"]
    assert [r["status"] for r in records] == ["evaluated"] * 5 + ["error"]


def test_a_turn_asked_twice_in_a_split_call_is_judged_once(fake: Any) -> None:
    case, output = long_visit()
    requests = prepare(case, output, benchmarks=False).requests
    server = fake()
    verdicts = judge_for(server, "combined", between(requests)).judge([*requests, *requests])
    assert server.requests == len(requests) == 6
    assert not any(v.judge_error for v in verdicts)
    # Paid for once: the second asking carries no usage.
    assert all(v.usage for v in verdicts[:6]) and not any(v.usage for v in verdicts[6:])


def test_a_call_of_other_tasks_over_the_limit_is_not_split(fake: Any) -> None:
    # The text task's judge metrics each read the whole call: it is one judgement of the
    # output, refused whole.
    case = text_case()
    requests = prepare(case, case.expected_outcome, benchmarks=False).requests
    assert len(requests) == 3
    server = fake()
    result = evaluate(case, case.expected_outcome,
                      judge=judge_for(server, "combined", between(requests)),
                      benchmarks=False)
    assert server.requests == 0
    assert {r.metric for r in requests} <= set(result.judge_errors)

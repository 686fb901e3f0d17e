"""The LLM judge true to the seeds, checked on the requests it really sends: each family's
call shows only what its context policy allows, every transcript line carries its turn
number, and every field the schema asks for comes back into the verdicts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.evaluate import evaluate, evaluate_many
from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.judges.prompts import AGENT_PROMPT, CONVERSATION_PROMPT
from pytest_callqa.engine.pricing import PriceTable
from tests.families import test_agent, test_extraction

from .conftest import make_runner
from .helpers import MODEL, SECRET

# A bot interpreting a visit; the reference wording of each bot turn differs from anything
# said in the call, so it can be searched for in what the judge was sent.
VISIT = [
    {"speaker": "patient", "text": "I have had a fever for three days"},
    {"speaker": "bot", "text": "He tenido fiebre durante tres días"},
    {"speaker": "doctor", "text": "Any cough or shortness of breath?"},
    {"speaker": "bot", "text": "¿Tiene tos o falta de aire?"},
    {"speaker": "patient", "text": "Only a dry cough at night"},
    {"speaker": "bot", "text": "Solo una tos seca por la noche"},
]
REFERENCE = {"turns": [{"turn": 1, "text": "REFERENCE-WORDING-ONE"},
                       {"turn": 3, "text": "REFERENCE-WORDING-THREE"},
                       {"turn": 5, "text": "REFERENCE-WORDING-FIVE"}]}
SPOKEN = {"turns": [{"turn": t, "text": VISIT[t]["text"]} for t in (1, 3, 5)]}


def judge_for(server: Any, mode: str) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode=mode,
                       runner=make_runner())


def user_inputs(server: Any) -> list[dict[str, Any]]:
    return [json.loads(body["messages"][1]["content"]) for body in server.bodies]


def visit(combined: bool) -> GoldenCase:
    return GoldenCase.model_validate({
        "id": "visit", "task": "conversation", "transcript": VISIT,
        "config": {"combined": combined}, "expected_outcome": REFERENCE})


def test_combined_conversation_turns_are_scored_from_the_reply(fake: Any) -> None:
    server = fake()  # answers the request's JSON schema
    result = evaluate(visit(combined=True), SPOKEN, judge=judge_for(server, "combined"),
                      benchmarks=False)
    # Combined judge mode: each turn's combined verdict in a call of its own (a turn is
    # judged blind to the turns after it), answered first time.
    assert server.requests == 3
    for body in server.bodies:
        assert len(body["response_format"]["json_schema"]["schema"]["required"]) == 1
    # The schema's middle for 1-5 is 3: (3 - 1) / 4 on every metric, with no fallback.
    for metric_id in ("intelligibility", "segmentation", "context"):
        metric = result.metrics[metric_id]
        assert metric.value == 0.5 and not metric.flagged, metric
    assert not any("conservative" in str(turn) for turn in
                   result.metrics["garbled_turn_rate"].details.get("turns", []))


@pytest.mark.parametrize(("mode", "calls"), [("per-metric", 9), ("combined", 3)])
def test_a_conversation_call_shows_the_turn_and_its_history_only(
        fake: Any, mode: str, calls: int) -> None:
    # Before, the combined judge mode asked every turn of an output in one call: turn 1's
    # blocks were judged with turns 3 and 5 in view.
    server = fake()
    evaluate(visit(combined=False), SPOKEN, judge=judge_for(server, mode), benchmarks=False)
    assert server.requests == calls
    for body, inputs in zip(server.bodies, user_inputs(server), strict=True):
        sent = json.dumps(body, ensure_ascii=False)
        assert "REFERENCE-WORDING" not in sent
        assert body["messages"][0]["content"] == CONVERSATION_PROMPT
        blocks = inputs["metrics"] if mode == "combined" else [inputs["metric"]]
        turns = {block["focus"]["turn"] for block in blocks}
        assert len(turns) == 1 and len(blocks) == 9 // calls
        turn = turns.pop()
        later = [VISIT[j]["text"] for j in range(turn + 1, len(VISIT))]
        assert not any(text in sent for text in later)
        for block in blocks:
            assert all(entry["turn"] < turn for entry in block["focus"].get("history", []))


def test_an_extraction_call_shows_the_excerpt_and_that_types_truth(fake: Any) -> None:
    server = fake()
    output = {"aspects": [
        {"name": "pricing", "polarity": "negative", "intensity": 0.7,
         "source_utterance_indices": [1]},
        {"name": "ROI", "polarity": "neutral", "intensity": 0.4,
         "source_utterance_indices": []},
    ]}
    case = test_extraction._case()
    evaluate(case, output, judge=judge_for(server, "per-metric"), benchmarks=False)
    assert server.requests == 2
    whole = [turn.text for turn in case.transcript]
    for inputs in user_inputs(server):
        sent = json.dumps(inputs, ensure_ascii=False)
        assert "transcript" not in inputs and "expected_outcome" not in inputs
        focus = inputs["metric"]["focus"]
        shown = [entry["text"] for entry in focus["excerpt"]]
        assert 0 < len(shown) < len(whole)
        assert all(isinstance(entry["turn"], int) for entry in focus["excerpt"])
        assert sum(text in sent for text in whole) == len(shown)
        assert all(s["name"] for s in focus["ground_truth"])  # only this type's truth
        assert "David Chen" not in json.dumps(focus["ground_truth"])


def test_agent_verdicts_below_4_carry_their_failure_code_and_turns(fake: Any) -> None:
    server = fake()
    result = evaluate(test_agent._case(), test_agent.GOOD,
                      judge=judge_for(server, "combined"), benchmarks=False)
    assert server.requests == 1
    [body] = server.bodies
    assert body["messages"][0]["content"] == AGENT_PROMPT
    [inputs] = user_inputs(server)
    # The agent's context: the replay and its rules, sent once for all metrics.
    assert "transcript" not in inputs and "focus" in inputs
    assert all("focus" not in block for block in inputs["metrics"])
    assert all(isinstance(entry["turn"], int) for entry in inputs["focus"]["conversation"])
    judged = [m for m in result.metrics.values() if m.details.get("computed") == "judge"]
    assert judged
    for metric in judged:
        assert metric.value == 3.0  # the schema's middle of 0-5, below 4
        assert metric.details["failure_code"] == "fake_failure_code"
        assert metric.details["turns"] == [0]


def test_a_failed_task_completion_carries_the_judges_failure_code_and_turns(
        fake: Any) -> None:
    # Its strict schema allowed score and texts alone: every failed task read
    # "low_task_completion" with no turn, whatever the judge found.
    def reply(body: dict[str, Any]) -> Any:
        from pytest_callqa.testing.fake_replies import schema_instance

        verdicts = schema_instance(body["response_format"]["json_schema"]["schema"])
        completion = verdicts["task_completion"]
        completion["score"] = 0
        if "failure_code" in completion:
            completion.update(failure_code="transfer_not_made", turns=[5])
        return verdicts

    server = fake(reply=reply)
    config = {**test_agent.CONFIG, "metrics": [
        {"metric": "grounding_fidelity", "weight": 1.0},
        {"metric": "task_completion", "weight": 0.5}]}
    result = evaluate(test_agent._case(config=config), test_agent.GOOD,
                      judge=judge_for(server, "combined"), benchmarks=False)
    [body] = server.bodies
    schema = body["response_format"]["json_schema"]["schema"]["properties"]
    assert {"failure_code", "turns"} <= set(schema["task_completion"]["required"])
    completion = result.metrics["task_completion"]
    assert completion.value == 0
    assert completion.details["failure_code"] == "transfer_not_made"
    assert completion.details["turns"] == [5]


def test_faithfulness_is_asked_for_counts(fake: Any) -> None:
    from .helpers import text_case

    server = fake()
    case = text_case()
    output = case.expected_outcome
    result = evaluate(case, output, judge=judge_for(server, "per-metric"))
    schemas = [body["response_format"]["json_schema"]["schema"] for body in server.bodies]
    fabrication = next(s for s in schemas if "fabrication_free_rate" in s["properties"])
    fields = fabrication["properties"]["fabrication_free_rate"]["properties"]
    assert fields["unsupported"] == {"type": "integer", "minimum": 0}
    # The pooled hallucination count is the judge's (the fake server's middle score, 0.5,
    # as two of the four facts supported and two not), not rebuilt from its score.
    assert result.metrics["hallucination_rate"].details["numerator"] == 2


def test_fact_counts_short_of_the_facts_shown_are_a_judge_error(fake: Any) -> None:
    from .helpers import text_case

    # One fact of the four judged, unsupported, scored 0.0: accepted, it made the
    # fabrication-free rate 0.0 (a blocker) beside 3 of 4 facts recorded as supported.
    def reply(body: dict[str, Any]) -> Any:
        schema = body["response_format"]["json_schema"]["schema"]
        if "fabrication_free_rate" not in schema["properties"]:
            return None
        return {"fabrication_free_rate": {
            "score": 0.0, "expected_outcome_reference": "", "model_output_observed": "",
            "reason": "one fact unsupported", "supported": 0, "unsupported": 1}}

    server = fake(reply=reply)
    case = text_case()
    result = evaluate(case, case.expected_outcome, judge=judge_for(server, "per-metric"))
    for metric_id in ("fabrication_free_rate", "hallucination_rate", "faithfulness"):
        metric = result.metrics[metric_id]
        assert metric.judge_error and metric.value is None and not metric.blocker, metric_id
    assert "supported 0 + unsupported 1 is 1, not the 4 facts listed" in (
        result.metrics["fabrication_free_rate"].reason or "")
    asked = [b for b in server.bodies
             if "fabrication_free_rate" in b["response_format"]["json_schema"]["schema"][
                 "properties"]]
    assert len(asked) == 3  # one ask, two re-asks


def test_asked_fields_are_kept_whether_top_level_or_nested_under_details() -> None:
    from dataclasses import replace

    from pytest_callqa.engine.judges.replies import Item, kept_fields, parse_reply

    from .helpers import qa_case

    request = replace(
        evaluate_request(qa_case(0)),
        reply_fields=(("unsupported", "count", "facts unsupported"),))
    item = Item(request.metric, request)
    for reply in (
        {request.metric: {"score": 0.5, "reason": "r", "unsupported": 2, "stray": 1}},
        {request.metric: {"score": 0.5, "reason": "r", "details": {"unsupported": 2,
                                                                     "stray": 1}}},
    ):
        parsed = parse_reply(json.dumps(reply), [item])
        assert kept_fields(parsed.replies[request.metric], request) == {"unsupported": 2}


def evaluate_request(case: GoldenCase) -> Any:
    from pytest_callqa.engine.evaluate import prepare

    from .helpers import qa_output

    return prepare(case, qa_output(case), benchmarks=False).requests[0]


def test_a_seed_is_sent_and_dropped_for_a_server_that_refuses_it(fake: Any) -> None:
    from .helpers import qa_case

    plain = fake()
    judge_for(plain, "per-metric").judge([evaluate_request(qa_case(0))])
    assert plain.bodies[0]["seed"] == 0
    server = fake(refuses_params=("seed",))
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=1))
    requests = [evaluate_request(qa_case(i)) for i in range(3)]
    verdicts = judge.judge(requests)
    assert all(v.score is not None for v in verdicts)
    assert ["seed" in body for body in server.bodies] == [True, False, False, False]


def test_a_turn_two_models_say_word_for_word_is_asked_and_charged_once(fake: Any) -> None:
    # Turn 1 is the same text in both outputs: judged from its own window, the two
    # judgements are one request. The server was asked once, but both results carried the
    # call and its cost (142 calls and $0.06590 for 139 requests and $0.06538 on the example
    # project).
    server = fake()
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="combined",
                        runner=make_runner(prices=PriceTable({MODEL: (1.0, 2.0)})))
    other = {"turns": [SPOKEN["turns"][0], *({"turn": t["turn"], "text": t["text"] + " Okay."}
                                            for t in SPOKEN["turns"][1:])]}
    results = evaluate_many([(visit(combined=True), SPOKEN, "alpha"),
                             (visit(combined=True), other, "beta")],
                            judge=judge, benchmarks=False)
    assert server.requests == 5  # three turns each, one of them the same
    calls = sum(r.usage.get("judge_calls", 0.0) for r in results)
    assert calls == pytest.approx(5.0)
    spent = judge.usage_summary()["spent_usd"]
    assert sum(r.usage.get("judge_cost_usd", 0.0) for r in results) == pytest.approx(spent)
    # Charged to the first asker, as a judgement asked twice in one batch is.
    assert results[0].usage["judge_calls"] == pytest.approx(3.0)
    assert results[1].usage["judge_calls"] == pytest.approx(2.0)
    # Both have every verdict.
    assert not results[0].judge_errors and not results[1].judge_errors


def test_the_agent_prompt_asks_for_the_failure_on_both_of_its_scales() -> None:
    # Before: "when a score is below 4" only, while task completion, scored 0 or 1, asks
    # for failure_code and turns at 0 (and null at 1, which is below 4 too).
    [rule] = [line for line in AGENT_PROMPT.split("\n- ") if '"failure_code"' in line]
    assert "below 4 on a 0–5 rubric, or 0 on a pass/fail metric (task completion)" in \
        " ".join(rule.split())

"""Structured replies against a llama.cpp-style server, and the bounds every call carries.

The refusal the ladder meets first is the one llama-cpp-python 0.3.36 really sends when it
is asked for ``json_schema`` (recorded in ``fixtures/llama_cpp_json_schema_refusal.json``:
HTTP 500, a validation error naming ``response_format``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.generate import OpenAIGenerator, generation_max_tokens
from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.llm.budget import bound_param
from pytest_callqa.engine.llm.cache import JudgeCache
from pytest_callqa.engine.llm.formats import (
    MAX_REPLY_TOKENS,
    SETTLED_FOLDER,
    TEXT_MAX_CHARS,
    reply_max_tokens,
    schema_tokens,
    with_text_limits,
)
from pytest_callqa.engine.llm.limits import refused_as_invalid
from pytest_callqa.engine.llm.windows import count_tokens

from .conftest import make_runner
from .helpers import MODEL, SECRET, qa_case
from .test_llm_judge import requests_for

RECORDED = Path(__file__).parent / "fixtures" / "llama_cpp_json_schema_refusal.json"


def recorded_refusal() -> tuple[int, Any]:
    data = json.loads(RECORDED.read_text(encoding="utf-8"))
    return int(data["status"]), data["body"]


def formats_sent(server: Any) -> list[str]:
    kinds = []
    for body in server.bodies:
        chosen = body.get("response_format") or {}
        kind = chosen.get("type", "none")
        kinds.append("json_object_schema" if "schema" in chosen else kind)
    return kinds


# --- the recorded refusal ----------------------------------------------------------------


def test_the_recorded_refusal_is_a_500_validation_error_naming_response_format() -> None:
    status, body = recorded_refusal()
    message = body["error"]["message"]
    assert status == 500
    assert refused_as_invalid(status, message)


@pytest.mark.parametrize(("status", "message", "refused"), [
    (500, "1 validation error for Request\nbody -> response_format -> type", True),
    (500, "2 Validation Errors: response_format.type unexpected value", True),
    (500, "The server had an error (fake)", False),
    (500, "1 validation error for Request\nbody -> messages -> 0 -> role", False),
    (503, "1 validation error for Request\nbody -> response_format -> type", False),
    (400, "response_format json_schema is not supported", False),
])
def test_only_a_500_validation_error_naming_the_format_is_a_refusal(
        status: int, message: str, refused: bool) -> None:
    assert refused_as_invalid(status, message) is refused


def test_the_llama_cpp_refusal_steps_down_once_without_retries(fake: Any) -> None:
    server = fake(refuses=("json_schema",), refusal=recorded_refusal())
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=1))
    verdicts = judge.judge(requests_for(3))
    # One refused request (a 500 that is not retried), then three answered with the schema.
    assert formats_sent(server) == ["json_schema", "json_object_schema", "json_object_schema",
                                    "json_object_schema"]
    assert judge.runner.usage(MODEL, "judge").retries == 0
    assert all(v.score == 0.5 and not v.judge_error for v in verdicts)
    assert judge.formats.formats() == {f"{MODEL} at {server.base_url}": "json_object_schema"}
    # Remembered per endpoint: the next batch goes straight to the second rung.
    judge.judge(requests_for(4)[3:])
    assert formats_sent(server)[-1] == "json_object_schema" and server.requests == 5


def test_refused_formats_and_seeds_asked_again_are_requests_not_calls_or_failures(
        fake: Any) -> None:
    # Before: each refused request counted as a failed call at $0 — for the judge here 5
    # calls, 2 failures, and a cost per 1000 calls at 3/5 of the real one.
    server = fake(refuses=("json_schema",), refusal=recorded_refusal(), refuses_params=("seed",))
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=1))
    verdicts = judge.judge(requests_for(3))
    assert all(v.score == 0.5 and not v.judge_error for v in verdicts)
    usage = judge.runner.usage(MODEL, "judge")
    # The seed refused, then the schema, then three calls answered.
    assert (usage.requests, usage.calls, usage.failures, usage.retries) == (5, 3, 0, 0)
    assert usage.costed_calls == 3
    assert usage.to_dict()["cost_per_1000_calls"] == pytest.approx(usage.spent_usd / 3 * 1000)
    # Live generation goes through the same ladder (its own endpoint's).
    generator = OpenAIGenerator(MODEL, fake(refuses=("json_schema",), refuses_params=("seed",))
                                .base_url, SECRET, runner=make_runner(concurrency=1))
    outputs = generator.generate([qa_case(0), qa_case(1)])
    assert all(o.error is None for o in outputs)
    counted = generator.usage_summary()
    # The schema refused, then two calls answered.
    assert (counted["requests"], counted["calls"], counted["failures"]) == (3, 2, 0)


def test_the_first_calls_go_out_together_before_the_format_is_settled(fake: Any) -> None:
    # One call sent alone first would cost every session a round trip: the fourth request
    # would find at most three others in flight.
    server = fake(latency=0.2)
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=4))
    verdicts = judge.judge(requests_for(4))
    assert server.requests == 4 and server.peak_in_flight == 4
    assert formats_sent(server) == ["json_schema"] * 4
    assert not any(v.judge_error for v in verdicts)


def test_a_refusal_costs_at_most_one_request_per_slot(fake: Any) -> None:
    # Four slots, nine calls: the four sent first are refused together and step down once;
    # the five queued behind them wait for that answer instead of repeating the refusal.
    server = fake(refuses=("json_schema",), refusal=recorded_refusal(), latency=0.05)
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=4))
    verdicts = judge.judge(requests_for(9))
    sent = formats_sent(server)
    assert sent.count("json_schema") == 4
    assert sent.count("json_object_schema") == 9 and server.requests == 13
    assert all(v.score == 0.5 and not v.judge_error for v in verdicts)


def test_a_plain_server_error_is_still_retried(fake: Any) -> None:
    server = fake(schedule=["500", "500"])
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=1))
    [verdict] = judge.judge(requests_for(1))
    assert server.requests == 3 and verdict.score == 0.5
    assert formats_sent(server) == ["json_schema"] * 3


def test_the_schema_rung_caps_free_text_for_the_grammar(fake: Any) -> None:
    server = fake(refuses=("json_schema",), refusal=recorded_refusal())
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(concurrency=1))
    judge.judge(requests_for(1))
    sent = server.bodies[1]["response_format"]["schema"]
    verdict = sent["properties"]["evidence_backed_reasoning"]["properties"]
    assert verdict["reason"] == {"type": "string", "maxLength": TEXT_MAX_CHARS}
    # llama.cpp's grammars keep an enum but not a range: the unit scale in steps of 0.01.
    assert verdict["score"] == {"type": "number", "enum": [i / 100 for i in range(101)]}
    # The json_schema rung carries the schema as it is (strict mode takes no maxLength).
    strict = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert "maxLength" not in json.dumps(strict)


# --- token bounds ----------------------------------------------------------------------


def test_schema_tokens_by_hand() -> None:
    verdict = {"type": "object", "properties": {
        "score": {"type": "integer", "enum": [0, 1]},
        "reason": {"type": "string"},
    }}
    # 2 for the braces; "score": 5 // 2 + 4 = 6 for the key, 6 for the value; "reason":
    # 6 // 2 + 4 = 7 for the key, 120 for the text.
    assert schema_tokens(verdict) == 2 + (6 + 6) + (7 + 120) == 141
    assert reply_max_tokens(verdict) == 141 + 32
    # An open array counts eight items, each with its comma.
    assert schema_tokens({"type": "array", "items": {"type": "integer"}}) == 2 + 8 * 7
    assert schema_tokens({"type": "array", "items": {"type": "integer"}},
                         array_items=1) == 2 + 7
    # A nullable text and a choice of shapes count their largest option.
    assert schema_tokens({"type": ["string", "null"]}) == 120
    assert schema_tokens({"anyOf": [{"type": "integer"}, {"type": "string"}]}) == 120
    # References are followed.
    referenced = {"$defs": {"V": verdict}, "type": "object",
                  "properties": {"v": {"$ref": "#/$defs/V"}}}
    assert schema_tokens(referenced) == 2 + (1 // 2 + 4) + 141
    # However large the schema, a call asks for at most the smallest models' output limit.
    wide = {"type": "object", "properties": {f"field_{i}": {"type": "string"}
                                             for i in range(60)}}
    assert reply_max_tokens(wide) == MAX_REPLY_TOKENS == 4096


def test_with_text_limits_leaves_enums_and_the_original_alone() -> None:
    schema = {"type": "object", "properties": {
        "label": {"type": "string", "enum": ["a", "b"]},
        "note": {"type": ["string", "null"]},
        "given": {"type": "string", "maxLength": 10},
        "grade": {"type": "number", "minimum": 1, "maximum": 3},
        "count": {"type": "integer", "minimum": 0},
        "half": {"type": "number", "minimum": 0},
        "grid": {"type": "number", "enum": [0, 0.5, 1]},
    }}
    limited = with_text_limits(schema, max_chars=50)
    assert limited["properties"]["label"] == {"type": "string", "enum": ["a", "b"]}
    assert limited["properties"]["note"] == {"type": ["string", "null"], "maxLength": 50}
    assert limited["properties"]["given"]["maxLength"] == 10
    # 1 to 3 in a hundred steps of 0.02; a number open on one side, an integer and an enum
    # stay.
    assert limited["properties"]["grade"]["enum"][:3] == [1.0, 1.02, 1.04]
    assert limited["properties"]["grade"]["enum"][-1] == 3.0
    assert len(limited["properties"]["grade"]["enum"]) == 101
    assert limited["properties"]["count"] == {"type": "integer", "minimum": 0}
    assert limited["properties"]["half"] == {"type": "number", "minimum": 0}
    assert limited["properties"]["grid"] == {"type": "number", "enum": [0, 0.5, 1]}
    assert "maxLength" not in schema["properties"]["note"]
    assert schema["properties"]["grade"] == {"type": "number", "minimum": 1, "maximum": 3}


def test_every_judge_call_carries_the_bound_of_its_reply_schema(fake: Any) -> None:
    server = fake()
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner())
    judge.judge(requests_for(2))
    # evidence_backed_reasoning's verdict: braces 2, score 6 + 6, three texts (keys of 26,
    # 21 and 6 characters: 17, 14 and 7) at 120 each = 412; wrapped under its id (25
    # characters: 16) in an object (2): 430; plus 32 of slack.
    assert [body["max_tokens"] for body in server.bodies] == [462, 462]
    # A caller's own bound wins.
    fixed = fake()
    OpenAIJudge(MODEL, base_url=fixed.base_url, api_key=SECRET, runner=make_runner(),
                params={"max_tokens": 300}).judge(requests_for(1))
    assert fixed.bodies[0]["max_tokens"] == 300


def test_reasoning_models_get_room_to_think() -> None:
    assert bound_param("gpt-4o-mini", 462) == {"max_tokens": 462}
    assert bound_param("o3-mini", 462) == {"max_completion_tokens": 462 + 8192}


def test_generation_bound_grows_with_the_input_and_stops_at_the_cap(fake: Any) -> None:
    case = qa_case(0)
    longer = case.model_copy(update={"transcript": [
        *case.transcript, case.transcript[0].model_copy(update={"text": "a" * 300})]})
    generator = OpenAIGenerator(MODEL, fake().base_url, SECRET, runner=make_runner())
    base = generation_max_tokens("qa", generator.messages(case))
    # 300 more bytes of turn text plus the turn's own JSON, estimated at three bytes a
    # token but a token a digit, and counted twice.
    added_json = len(', {"n": 3, "speaker": "agent", "text": "", "start_s": 0.0}')
    grown = generation_max_tokens("qa", generator.messages(longer))
    assert added_json == 58
    # 355 bytes and 3 digits are 121 or 122 more tokens by the estimate (rounding up),
    # counted twice.
    assert grown - base in (242, 244)
    huge = case.model_copy(update={"transcript": [
        *case.transcript, case.transcript[0].model_copy(update={"text": "a" * 30_000})]})
    assert generation_max_tokens("qa", generator.messages(huge)) == 4096
    request = generator.request(case)
    assert request.params["max_tokens"] == base


# --- the context window a server reports ---------------------------------------------------


def test_a_call_that_does_not_fit_the_servers_window_is_a_judge_error(fake: Any) -> None:
    server = fake()
    requests = requests_for(1)
    roomy = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, runner=make_runner(),
                        context_window=4096)
    [verdict] = roomy.judge(requests)
    assert verdict.score == 0.5 and server.requests == 1
    # A window that leaves the prompt less room than it needs: 1,000 less the 462 the
    # reply may take is 538 tokens, and this prompt is estimated at more.
    tight = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, runner=make_runner(),
                        context_window=1000)
    [verdict] = tight.judge(requests)
    assert server.requests == 1
    assert verdict.judge_error and verdict.score is None
    assert "over the 538-token input limit" in verdict.reason
    assert "context window of 1,000 tokens less 462 for the reply" in verdict.reason
    assert "--callqa-local-ctx" in verdict.reason


def test_a_reply_the_servers_window_cut_short_is_input_too_large_and_not_re_asked(
        fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # llama.cpp's server cuts a reply's bound to what its window has left: 8 tokens of the
    # verdict, "not valid JSON", a re-ask that added the cut reply to the prompt, and an
    # HTTP 400 for the context length — the judge error said the reply was not JSON.
    from pytest_callqa.engine.llm import transport

    read = transport.read_completion

    def window_cut(completion: Any) -> Any:
        reply = read(completion)
        reply.finish_reason, reply.content = "length", '{"evidence_backed_reasoning":'
        reply.prompt_tokens, reply.completion_tokens = 4088.0, 8.0
        return reply

    monkeypatch.setattr(transport, "read_completion", window_cut)
    server = fake()
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, runner=make_runner())
    [verdict] = judge.judge(requests_for(1))
    assert server.requests == 1
    assert verdict.judge_error and verdict.score is None
    assert "input too large: the server stopped the reply at 8 of the " in verdict.reason
    assert "as the prompt (4,088 tokens) filled its context window" in verdict.reason


@pytest.mark.parametrize(("text", "tokens"), [
    ("my account is 1234567890", 10 + 5), ("我要退款", 8), ("hello world this is a call", 9)])
def test_the_token_estimate_counts_digits_and_wide_characters_high(
        text: str, tokens: int) -> None:
    # One token per three bytes: a ten-digit number was 3 and a half tokens where small
    # models' tokenizers make 10, and a Chinese character one where SmolLM2 makes 1.7.
    assert count_tokens([{"role": "user", "content": text}], estimate=True) == (
        tokens, "estimate")


# --- what an endpoint settled on, kept in the cache directory -----------------------------


def _judge_on(base_url: str, cache: JudgeCache) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=base_url, api_key=SECRET, mode="per-metric",
                       runner=make_runner(cache, concurrency=1))


@pytest.mark.parametrize("refuses", ["format", "seed"])
def test_a_later_run_asks_as_the_endpoint_settled_and_finds_its_replies(
        fake: Any, tmp_path: Path, refuses: str) -> None:
    server = fake(refuses=("json_schema",), refusal=recorded_refusal()) \
        if refuses == "format" else fake(refuses_params=("seed",))
    _judge_on(server.base_url, JudgeCache(tmp_path, "rw")).judge(requests_for(3))
    assert server.requests == 4  # one refused, three answered
    # A later run (a new ladder, as in a new process): every reply from the cache, none of
    # the refused requests sent again — before, the first call missed the cache, was
    # refused, and a run against a stopped server with a complete cache failed.
    warm = _judge_on(server.base_url, JudgeCache(tmp_path, "rw"))
    verdicts = warm.judge(requests_for(3))
    assert server.requests == 4
    assert all(v.score == 0.5 and not v.judge_error for v in verdicts)
    # A call the cache does not hold goes out as the endpoint settled, first time.
    warm.judge(requests_for(4)[3:])
    assert server.requests == 5
    last = server.bodies[-1]
    if refuses == "format":
        assert formats_sent(server)[-1] == "json_object_schema"
    else:
        assert "seed" not in last and "seed" in server.bodies[0]
    where = server.base_url
    server.stop()
    # Replayed read-only (a CI job) with the server gone: every verdict from the cache.
    replayed = _judge_on(where, JudgeCache(tmp_path, "ro")).judge(requests_for(4))
    assert all(v.score == 0.5 and not v.judge_error for v in replayed)


def test_an_endpoint_that_takes_the_top_format_leaves_nothing_to_keep(
        fake: Any, tmp_path: Path) -> None:
    server = fake()
    _judge_on(server.base_url, JudgeCache(tmp_path, "rw")).judge(requests_for(2))
    assert server.requests == 2
    assert not (tmp_path / SETTLED_FOLDER).exists()


def test_a_damaged_or_read_only_record_starts_the_ladder_at_its_top(
        fake: Any, tmp_path: Path) -> None:
    server = fake(refuses=("json_schema",), refusal=recorded_refusal())
    _judge_on(server.base_url, JudgeCache(tmp_path, "ro")).judge(requests_for(1))
    # Read-only: the replies and the settled format stay unwritten.
    assert not (tmp_path / SETTLED_FOLDER).exists()
    _judge_on(server.base_url, JudgeCache(tmp_path, "rw")).judge(requests_for(1))
    [record] = (tmp_path / SETTLED_FOLDER).iterdir()
    assert json.loads(record.read_text(encoding="utf-8")) == {
        "format": "json_object_schema", "seedless": False}
    record.write_text('{"format": "json_schema_v9", "seedless": "yes"}', encoding="utf-8")
    _judge_on(server.base_url, JudgeCache(tmp_path, "rw")).judge(requests_for(2)[1:])
    assert formats_sent(server)[-2:] == ["json_schema", "json_object_schema"]
    record.write_text("[", encoding="utf-8")
    _judge_on(server.base_url, JudgeCache(tmp_path, "rw")).judge(requests_for(3)[2:])
    assert formats_sent(server)[-2:] == ["json_schema", "json_object_schema"]


def test_the_grammar_offers_every_band_edge_of_a_0_1_metric() -> None:
    # On steps of 0.05 a local judge could not answer critical fact preservation's
    # "acceptable 0.97" or fabrication-free "0.98": 1 drift in 40 facts was 1.0 or 0.95, a
    # blocker. An edge a future metric puts off the grid fails here.
    from pytest_callqa.engine.registry import default_registry
    from pytest_callqa.engine.tasks.benchmark_specs import BENCHMARK_SPECS

    offered = with_text_limits({"type": "number", "minimum": 0, "maximum": 1})["enum"]
    specs = [*default_registry().all_metrics(), *BENCHMARK_SPECS.values()]
    edges = {(spec.id, edge) for spec in specs if spec.scale == "0-1" and spec.bands
             for edge in (spec.bands.good, spec.bands.acceptable, spec.bands.blocker)
             if edge is not None}
    assert ("critical_fact_preservation", 0.97) in edges
    assert ("fabrication_free_rate", 0.98) in edges
    off_grid = [(metric, edge) for metric, edge in sorted(edges)
                if not any(abs(edge - value) < 1e-9 for value in offered)]
    assert off_grid == []

"""The chat runner's bookkeeping, read against fixed numbers: what one call, a repeated call,
a cache hit and a damaged entry count and cost, what a reply's parts are taken to be, and the
texts the runner writes back to a server or into an error.

The fake server's token counts are a quarter of the characters (rounded up), so a prompt of
40 characters is 10 tokens and a reply of 20 characters 5; the price table below makes a
prompt token cost $1 and a completion token $2, so every cost here is a whole number.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import json
import math
import random
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.llm import transport
from pytest_callqa.engine.llm.budget import SETTLE_GRACE_S
from pytest_callqa.engine.llm.cache import JudgeCache, content_key
from pytest_callqa.engine.llm.counters import ModelUsage
from pytest_callqa.engine.llm.endpoint import CallError, Endpoint
from pytest_callqa.engine.llm.limits import Backoff
from pytest_callqa.engine.llm.transport import (
    ChatOutcome,
    ChatRequest,
    ChatRunner,
    reask_message,
)
from pytest_callqa.engine.llm.wire import Reply, read_completion
from pytest_callqa.engine.pricing import PriceTable

from .conftest import make_runner
from .helpers import SECRET, fixed_reply

PRICES = PriceTable({"priced": (1_000_000.0, 2_000_000.0)}, defaults=False)
REPLY = "y" * 20  # 5 completion tokens
SHORT = ChatRequest(messages=[{"role": "user", "content": "x" * 40}])  # 10 prompt tokens
LONG = ChatRequest(messages=[{"role": "user", "content": "z" * 80}])  # 20 prompt tokens
NOTHING_YET = {"calls": 0, "cache_hits": 0, "damaged": 0, "requests": 0, "retries": 0,
               "reasks": 0, "failures": 0, "unusable": 0, "budget_stopped": 0,
               "requests_without_usage": 0, "prompt_tokens": 0.0, "completion_tokens": 0.0,
               "spent_usd": 0.0, "cost_per_1000_calls": None}


def endpoint(server: Any, model: str = "priced") -> Endpoint:
    return Endpoint(model, server.base_url, SECRET)


def calls(runner: ChatRunner, *pairs: tuple[Endpoint, ChatRequest],
          check: Any = None) -> list[ChatOutcome]:
    """The pairs called one after another, in one session of ``runner``."""

    async def in_turn() -> list[ChatOutcome]:
        return [await runner.call(where, request, check) for where, request in pairs]

    return runner.run_sync(in_turn)


# --- counting and cost --------------------------------------------------------------------


def test_each_call_adds_its_tokens_and_cost_and_a_repeat_costs_nothing(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY)
    runner = make_runner(prices=PRICES)
    where = endpoint(server)
    short, long, again = calls(runner, (where, SHORT), (where, LONG), (where, SHORT))
    assert short.usage == {"prompt_tokens": 10.0, "completion_tokens": 5.0, "cost_usd": 20.0}
    assert long.usage == {"prompt_tokens": 20.0, "completion_tokens": 5.0, "cost_usd": 30.0}
    assert (short.asks, short.cached) == (1, False)
    # The repeat is answered from memory as a cache hit: same reply and what it cost,
    # nothing sent, and not counted as a second call.
    assert server.requests == 2
    assert (again.content, again.asks, again.cached) == (REPLY, 0, True)
    assert again.usage == {**short.usage, "cached": 1.0}
    counted = {**NOTHING_YET, "calls": 2, "requests": 2, "prompt_tokens": 30.0,
               "completion_tokens": 10.0, "spent_usd": 50.0, "cost_per_1000_calls": 25_000.0}
    assert runner.usage("priced", "chat").to_dict() == counted
    assert runner.usage_summary() == {
        "by_kind": {"chat": {"priced": counted}}, "calls": 2, "cache_hits": 0, "damaged": 0,
        "requests": 2, "spent_usd": 50.0, "budget_usd": None, "budget_spent_usd": 0.0,
        "budget_shared": False, "budget_stopped": 0,
    }


def test_a_model_without_a_price_has_tokens_but_no_spend(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY)
    runner = make_runner(prices=PRICES)
    calls(runner, (endpoint(server), SHORT), (endpoint(server, "unpriced"), SHORT))
    unpriced = {**NOTHING_YET, "calls": 1, "requests": 1, "prompt_tokens": 10.0,
                "completion_tokens": 5.0, "spent_usd": None}
    assert runner.usage("unpriced", "chat").to_dict() == unpriced
    summary = runner.usage_summary()
    # One model's spend unknown makes the total unknown, never the sum of the rest.
    assert summary["spent_usd"] is None
    assert summary["by_kind"]["chat"]["priced"]["spent_usd"] == 20.0
    assert summary["calls"] == 2


def without_count(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Replies read as if the server had left out the token count ``name``."""
    read = transport.read_completion

    def missing(completion: Any) -> Reply:
        reply = read(completion)
        setattr(reply, name, None)
        return reply

    monkeypatch.setattr(transport, "read_completion", missing)


def test_a_reply_without_token_counts_leaves_the_cost_unknown(
    fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_count(monkeypatch, "prompt_tokens")
    server = fake(reply=lambda body: REPLY)
    runner = make_runner(prices=PRICES)
    [outcome] = calls(runner, (endpoint(server), SHORT))
    # The call's usage says so: an empty usage left the call out of the judge's calls.
    assert outcome.usable and outcome.usage == {"requests_without_usage": 1.0}
    assert runner.usage("priced", "chat").to_dict() == {
        **NOTHING_YET, "calls": 1, "requests": 1, "requests_without_usage": 1,
        "spent_usd": None}


def test_calls_of_each_kind_are_counted_apart_and_against_one_budget(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY)
    runner = make_runner(prices=PRICES, budget_usd=100_000.0)
    judged = ChatRequest(messages=SHORT.messages, kind="judge")
    calls(runner, (endpoint(server), SHORT), (endpoint(server), judged))
    summary = runner.usage_summary()
    assert sorted(summary["by_kind"]) == ["chat", "judge"]
    assert summary["by_kind"]["judge"]["priced"]["calls"] == 1
    assert summary["by_kind"]["chat"]["priced"]["calls"] == 1
    assert (summary["calls"], summary["requests"]) == (2, 2)
    assert (summary["budget_usd"], summary["budget_spent_usd"]) == (100_000.0, 40.0)


# --- repeats and failures in one session ----------------------------------------------------


def test_identical_calls_in_flight_at_once_send_one_request(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY, latency=0.05)
    runner = make_runner(prices=PRICES)
    where = endpoint(server)

    async def together() -> list[ChatOutcome]:
        return list(await asyncio.gather(runner.call(where, SHORT), runner.call(where, SHORT)))

    first, second = runner.run_sync(together)
    assert server.requests == 1
    assert first.content == second.content == REPLY
    assert first.usage["cost_usd"] == 20.0 and not first.cached
    assert second.usage == {**first.usage, "cached": 1.0}
    assert second.cached and second.asks == 0


def together(runner: ChatRunner, where: Endpoint, request: ChatRequest,
             check: Any = None) -> tuple[ChatOutcome, ChatOutcome]:
    """The same call twice at once: the second waits for the first's outcome."""

    async def both() -> tuple[ChatOutcome, ChatOutcome]:
        first, second = await asyncio.gather(runner.call(where, request, check),
                                             runner.call(where, request, check))
        return first, second

    return runner.run_sync(both)


def test_a_call_waiting_on_an_identical_one_gets_its_failure_too(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "400", latency=0.05)
    runner = make_runner(prices=PRICES)
    first, second = together(runner, endpoint(server), SHORT)
    assert server.requests == 1
    assert first.error is not None and first.error.startswith("HTTP 400")
    # Charged as another process reading the run's exchange is: the call's usage (an error
    # status is billed nothing), not none.
    assert (second.content, second.error, second.usage, second.asks) == (
        None, first.error, first.usage, 0)
    assert second.usage == {"prompt_tokens": 0.0, "completion_tokens": 0.0, "cost_usd": 0.0}
    # An error status is not billed: the call cost $0 and counts in the average per call.
    assert runner.usage("priced", "chat").to_dict() == {
        **NOTHING_YET, "calls": 1, "requests": 1, "failures": 1, "cost_per_1000_calls": 0.0}


def test_counters_of_no_call_have_no_average_cost() -> None:
    assert ModelUsage().to_dict() == NOTHING_YET


def test_a_call_waiting_on_an_identical_one_gets_its_problems_too(fake: Any) -> None:
    server = fake(reply=lambda body: "not what was asked", latency=0.02)
    runner = make_runner(prices=PRICES, reasks=0)
    first, second = together(runner, endpoint(server), SHORT,
                             check=lambda text: ["not JSON"])
    assert server.requests == 1
    assert first.problems == second.problems == ["not JSON"]
    assert not second.usable and second.content == "not what was asked"
    # It says what the call asked and charges what it cost, as the process that sent it.
    assert (second.asks, second.usage) == (1, first.usage)
    assert first.usage["cost_usd"] == 10 * 1.0 + 5 * 2.0  # 10 prompt tokens, 5 completion


def test_a_call_waiting_on_an_identical_one_stopped_by_the_budget_is_stopped_too(
    fake: Any
) -> None:
    server = fake(reply=lambda body: REPLY)
    # A completion bound of 2048 tokens at $2 each cannot be reserved within $100.
    runner = make_runner(prices=PRICES, budget_usd=100.0)
    first, second = together(runner, endpoint(server), SHORT)
    assert server.requests == 0
    assert first.budget_stopped and second.budget_stopped
    assert second.error == first.error and first.error is not None


def test_a_repeat_of_a_cache_hit_is_a_cache_hit(fake: Any, cache_dir: Path) -> None:
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    calls(make_runner(JudgeCache(cache_dir), prices=PRICES), (where, SHORT))
    warm = make_runner(JudgeCache(cache_dir), prices=PRICES)
    hit, again = calls(warm, (where, SHORT), (where, SHORT))
    assert server.requests == 1
    assert hit.cached and again.cached and again.usage == hit.usage and again.asks == 0


def test_a_failed_call_is_not_remembered_and_the_next_one_is_sent(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY, schedule=["400"])
    runner = make_runner(prices=PRICES)
    failed, retried = calls(runner, (endpoint(server), SHORT), (endpoint(server), SHORT))
    assert failed.error is not None and failed.error.startswith("HTTP 400")
    assert retried.usable and retried.content == REPLY
    assert server.requests == 2


def worker(cache_dir: Path, **options: Any) -> ChatRunner:
    """A runner as an xdist worker of run ``r1`` builds it: the shared cache, and the run's
    exchange."""
    cache = JudgeCache(cache_dir)
    return make_runner(cache, prices=PRICES, exchange=cache.run_exchange("r1"), **options)


def test_an_outcome_no_cache_keeps_is_read_by_the_runs_other_workers(
        fake: Any, cache_dir: Path) -> None:
    # A failure, an unusable reply and a reply cut at its bound: none is cached, so the
    # other worker sent each again (and with a transient failure, got another verdict).
    server = fake(reply=lambda body: "not JSON", schedule=["400"])
    where = endpoint(server)
    first = worker(cache_dir, reasks=0)
    failed, unusable = calls(first, (where, SHORT), (where, LONG), check=is_good)
    assert server.requests == 2
    second = worker(cache_dir, reasks=0)
    again, same = calls(second, (where, SHORT), (where, LONG), check=is_good)
    assert server.requests == 2
    assert (again.error, again.usage, again.asks) == (failed.error, failed.usage, 0)
    assert (same.content, same.problems, same.usage, same.asks) == (
        unusable.content, unusable.problems, unusable.usage, 1)
    # Not in the cache: a later run asks again.
    later = make_runner(JudgeCache(cache_dir), prices=PRICES, reasks=0)
    calls(later, (where, SHORT), check=is_good)
    assert server.requests == 3


def test_an_unusable_outcome_read_from_another_worker_says_its_asks_and_charges_its_usage(
        fake: Any, cache_dir: Path) -> None:
    # Read without them, another worker's copy said "after 1 attempt" and cost nothing, so
    # the report of `-n 2` differed from one process's in the reason and the case's cost.
    server = fake(reply=lambda body: "not JSON")
    where = endpoint(server)
    [sent] = calls(worker(cache_dir, reasks=2), (where, SHORT), check=is_good)
    assert server.requests == 3 and sent.asks == 3 and sent.usage["cost_usd"] > 0
    [read] = calls(worker(cache_dir, reasks=2), (where, SHORT), check=is_good)
    assert server.requests == 3
    assert (read.content, read.problems, read.asks, read.usage) == (
        sent.content, sent.problems, 3, sent.usage)


def test_a_damaged_run_only_record_is_no_record(fake: Any, cache_dir: Path) -> None:
    # Every call fails: no reply is ever cached, so each send is the damaged record's doing.
    server = fake(reply=lambda body: REPLY, schedule=["400"] * 20)
    where = endpoint(server)
    calls(worker(cache_dir), (where, SHORT))
    [record] = cache_dir.glob("runs/*/*/run-only-*.json")
    entry = json.loads(record.read_text())
    for damage in ({"problems": "x"}, {"problems": [1]}, {"truncated": "yes"}, {"error": 3},
                   {"content": ["x"]}, {"asks": "1"}, {"asks": True}, {"asks": -1},
                   {"usage": []}, {"usage": {"cost_usd": "1"}}, {"usage": {"calls": False}}):
        value = {**entry["value"], **damage}
        record.write_text(json.dumps({**entry, "value": value, "digest": content_key(value)}))
        before = server.requests
        calls(worker(cache_dir), (where, SHORT))
        assert server.requests == before + 1, damage


def test_a_call_outside_a_session_is_refused() -> None:
    runner = make_runner()
    where = Endpoint("priced", "http://127.0.0.1:9/v1", SECRET)
    with pytest.raises(RuntimeError, match=r"^ChatRunner\.call must run inside "
                                           r"'async with runner\.session\(\)'$"):
        asyncio.run(runner.call(where, SHORT))


def test_a_budget_refuses_a_model_without_a_price_by_name() -> None:
    runner = make_runner(budget_usd=1.0, prices=PRICES)
    runner.require_price("priced")
    with pytest.raises(CallError, match="model 'unpriced' has no price"):
        runner.require_price("unpriced")


# --- the cache ----------------------------------------------------------------------------


def test_the_entry_holds_the_reply_and_a_hit_costs_its_price_but_spends_nothing(
    fake: Any, cache_dir: Path
) -> None:
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    cold = make_runner(JudgeCache(cache_dir), prices=PRICES)
    calls(cold, (where, SHORT))
    assert JudgeCache(cache_dir).get(SHORT.key(where)) == {
        "kind": "chat", "model": "priced", "prompt_version": "1", "content": REPLY,
        "usage": {"prompt_tokens": 10.0, "completion_tokens": 5.0}, "asks": 1,
    }
    calls(cold, (where, LONG))
    warm = make_runner(JudgeCache(cache_dir), prices=PRICES)
    hit, other = calls(warm, (where, SHORT), (where, LONG))
    assert server.requests == 2
    assert hit.content == REPLY and hit.cached is True and hit.asks == 0
    assert hit.usage == {"prompt_tokens": 10.0, "completion_tokens": 5.0, "cost_usd": 20.0,
                         "cached": 1.0}
    assert other.cached and other.usage["cost_usd"] == 30.0
    # What a call costs is known from its entry; nothing was spent on it this time.
    assert warm.usage("priced", "chat").to_dict() == {
        **NOTHING_YET, "calls": 2, "cache_hits": 2, "cost_per_1000_calls": 25_000.0}


def test_a_hit_whose_token_counts_are_not_numbers_has_no_cost(
    fake: Any, cache_dir: Path
) -> None:
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    cache = JudgeCache(cache_dir)
    cache.put(SHORT.key(where), {"content": REPLY,
                                 "usage": {"prompt_tokens": "ten", "completion_tokens": 5}})
    runner = make_runner(JudgeCache(cache_dir), prices=PRICES)
    [hit] = calls(runner, (where, SHORT))
    assert server.requests == 0
    assert hit.cached and hit.usage == {"cached": 1.0}
    assert runner.usage("priced", "chat").to_dict() == {
        **NOTHING_YET, "calls": 1, "cache_hits": 1, "spent_usd": None}


def test_each_damaged_entry_is_counted_and_its_reply_fetched_again(
    fake: Any, cache_dir: Path
) -> None:
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    third = ChatRequest(messages=[{"role": "user", "content": "w" * 40}])
    cache = JudgeCache(cache_dir)
    # Two entries whose file is sound but whose value is not a reply, then an unreadable file.
    cache.put(SHORT.key(where), {"content": REPLY, "usage": None})
    cache.put(LONG.key(where), {"content": 5, "usage": {}})
    path = cache.entry_path(third.key(where))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    runner = make_runner(JudgeCache(cache_dir), prices=PRICES)
    outcomes = calls(runner, (where, SHORT), (where, LONG), (where, third))
    assert server.requests == 3
    assert all(o.usable and not o.cached for o in outcomes)
    counters = runner.usage("priced", "chat")
    assert (counters.damaged, counters.cache_hits) == (3, 0)
    assert runner.usage_summary()["damaged"] == 3


def test_an_entry_the_check_rejects_is_replaced(fake: Any, cache_dir: Path) -> None:
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    key = SHORT.key(where)
    JudgeCache(cache_dir).put(key, {"content": "stale", "usage": {}})
    runner = make_runner(JudgeCache(cache_dir), prices=PRICES)

    def check(text: str) -> list[str]:
        return ["written by an older prompt"] if text == "stale" else []

    [fresh] = calls(runner, (where, SHORT), check=check)
    assert server.requests == 1 and fresh.content == REPLY and not fresh.cached
    assert JudgeCache(cache_dir).get(key)["content"] == REPLY  # type: ignore[index]


# --- the parts of a reply -------------------------------------------------------------------


def parts(reply: Reply) -> tuple[Any, ...]:
    return (reply.content, reply.prompt_tokens, reply.completion_tokens, reply.cost,
            reply.finish_reason)


def test_a_complete_reply_is_read_whole() -> None:
    completion = {
        "usage": {"prompt_tokens": 12, "completion_tokens": 3},
        "choices": [{"message": {"content": "hi"}, "finish_reason": "length"},
                    {"message": {"content": "second"}, "finish_reason": "stop"}],
    }
    reply = read_completion(completion)
    assert parts(reply) == ("hi", 12.0, 3.0, None, "length")
    assert type(reply.prompt_tokens) is float and type(reply.completion_tokens) is float


@pytest.mark.parametrize(("completion", "finish"), [
    ({"usage": {"prompt_tokens": "12", "completion_tokens": None},
      "choices": [{"message": {"content": None}, "finish_reason": 7}]}, None),
    # OpenAI's refusal, and a content filter: the model's own empty answer.
    ({"choices": [{"message": {"content": None, "refusal": "I cannot help with that."},
                   "finish_reason": "stop"}]}, "stop"),
    ({"choices": [{"message": {}, "finish_reason": "content_filter"}]}, "content_filter"),
], ids=["wrong-types", "refusal", "content-filter"])
def test_a_message_without_content_is_an_empty_answer(completion: Any, finish: Any) -> None:
    assert parts(read_completion(completion)) == ("", None, None, None, finish)


@pytest.mark.parametrize("completion", [
    {},
    {"usage": None, "choices": None},
    {"usage": {}, "choices": []},
    {"usage": {}, "choices": [{}]},
    {"usage": [12, 3], "choices": {"0": {"message": {"content": "hi"}}}},
    {"usage": {}, "choices": ["hi", {"message": "hi"}]},
    [{"choices": [{"message": {"content": "hi"}}]}],
    "hi",
    None,
], ids=["no-fields", "null-fields", "empty", "bare-choice", "wrong-containers",
        "choice-not-an-object", "a-list", "a-string", "null"])
def test_json_without_a_message_is_no_answer(completion: Any) -> None:
    with pytest.raises(ValueError, match=r"^the reply holds no completion$"):
        read_completion(completion)


def test_an_error_object_served_with_200_says_what_it_said() -> None:
    for error in ({"message": "upstream timed out", "code": 504}, "upstream timed out"):
        with pytest.raises(ValueError,
                           match=r"^the reply holds no completion: upstream timed out$"):
            read_completion({"error": error})
    # What is not a message is not quoted.
    for error in ({"message": {"text": "x"}}, {"message": ""}, 504, ["x"]):
        with pytest.raises(ValueError, match=r"^the reply holds no completion$"):
            read_completion({"error": error})


def test_content_sent_as_text_parts_is_their_texts_joined() -> None:
    # Some gateways send the content as a list of parts: it was read as an empty answer.
    completion = {"choices": [{"message": {"content": [
        {"type": "text", "text": '{"a": '}, {"type": "text", "text": "1}"}]}}]}
    assert read_completion(completion).content == '{"a": 1}'
    assert read_completion({"choices": [{"message": {"content": []}}]}).content == ""


@pytest.mark.parametrize("content", [
    [{"type": "image_url", "image_url": {"url": "x"}}],
    [{"type": "text", "text": "hi"}, {"type": "refusal", "refusal": "no"}],
    [{"type": "text", "text": None}],
    ["hi"],
    {"type": "text", "text": "hi"},
    7,
    False,
], ids=["image-part", "a-part-not-text", "text-not-a-string", "bare-strings", "one-object",
        "number", "boolean"])
def test_content_of_another_shape_is_no_answer(content: Any) -> None:
    with pytest.raises(ValueError, match=r"^the reply's content is neither text nor a list "
                                         r"of text parts$"):
        read_completion({"choices": [{"message": {"content": content}}]})


@pytest.mark.parametrize("kind", ["chat", "generation"])
def test_content_of_an_unknown_shape_fails_the_call_and_is_not_cached(
        cache_dir: Path, kind: str) -> None:
    # Before: an empty answer, scored as the model's failure and cached for every later run.
    body = json.dumps({"choices": [{"message": {"content": {"value": "{}"}}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 122}}).encode()
    request = ChatRequest(messages=SHORT.messages, kind=kind)
    with fixed_reply(body) as (base, seen):
        [outcome] = calls(make_runner(JudgeCache(cache_dir), max_retries=0),
                          (Endpoint("priced", base + "/v1", SECRET), request))
    assert outcome.content is None and not outcome.usable and len(seen) == 1
    assert outcome.error == ("unreadable response: the reply's content is neither text nor "
                             "a list of text parts")
    assert list(cache_dir.glob("??/*.json")) == []


def test_text_parts_are_cached_as_their_joined_text(cache_dir: Path) -> None:
    body = json.dumps({"choices": [{"message": {"content": [
        {"type": "text", "text": f"{SECRET} "}, {"type": "text", "text": "answer"}]}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
    with fixed_reply(body) as (base, _):
        where = Endpoint("priced", base + "/v1", SECRET)
        [outcome] = calls(make_runner(JudgeCache(cache_dir)), (where, SHORT))
    assert outcome.usable and outcome.content == "<redacted> answer"
    stored = JudgeCache(cache_dir).get(SHORT.key(where))
    assert stored is not None and stored["content"] == "<redacted> answer"


@pytest.mark.parametrize("kind", ["chat", "generation"])
def test_a_200_without_a_completion_fails_the_call_and_is_not_cached(
        cache_dir: Path, kind: str) -> None:
    # A gateway's error with status 200 was read as an empty answer, cached, and scored as
    # the model's failure (a generated output of "") on every later run.
    body = json.dumps({"error": {"message": f"upstream failed {SECRET}"}}).encode()
    request = ChatRequest(messages=SHORT.messages, kind=kind)
    with fixed_reply(body) as (base, seen):
        [outcome] = calls(make_runner(JudgeCache(cache_dir), max_retries=0),
                          (Endpoint("priced", base + "/v1", SECRET), request))
    assert outcome.content is None and not outcome.usable and len(seen) == 1
    assert outcome.error == \
        "unreadable response: the reply holds no completion: upstream failed <redacted>"
    assert list(cache_dir.glob("??/*.json")) == []


# --- texts sent back and shown --------------------------------------------------------------


def test_a_reask_lists_every_problem_and_asks_for_the_json_again() -> None:
    assert reask_message(["not valid JSON", "score 7 is off the scale"]) == (
        "Your previous reply could not be used:\n"
        "- not valid JSON\n"
        "- score 7 is off the scale\n"
        "Reply again with only the JSON object described in the instructions, with every "
        "verdict it asks for (those above corrected, the others repeated: this reply "
        "replaces the previous one), every score on its stated scale."
    )


class _ServerSaid(Exception):
    message = "model 'x' does not exist"


def test_an_error_detail_is_the_servers_message_redacted_then_cut() -> None:
    where = Endpoint("priced", "http://127.0.0.1:9/v1", SECRET)
    detail = transport._detail
    assert detail(_ServerSaid("the client's summary"), where) == "model 'x' does not exist"
    assert detail(ValueError("plain words"), where) == "plain words"
    assert detail(ValueError("a" * 300), where) == "a" * 300
    assert detail(ValueError("a" * 301), where) == "a" * 300 + "..."
    # The key straddles the cut: redacted first, so no half of it survives the cut.
    assert detail(ValueError("b" * 290 + SECRET), where) == "b" * 290 + "<redacted>"
    assert json.dumps(detail(ValueError("c" * 295 + SECRET), where)).count(SECRET[:5]) == 0


# --- asks, re-asks and failures, counted ----------------------------------------------------


def good_on_reask(body: dict[str, Any]) -> str:
    """'bad' to a first ask and 'good' to a re-ask (which carries the bad reply back)."""
    return "good" if len(body["messages"]) > 1 else "bad"


def is_good(text: str) -> list[str]:
    return [] if text == "good" else ["not good"]


def test_a_reask_adds_its_tokens_and_is_counted(fake: Any) -> None:
    server = fake(reply=good_on_reask)
    runner = make_runner(prices=PRICES, reasks=1)
    [outcome] = calls(runner, (endpoint(server), SHORT), check=is_good)
    assert outcome.usable and outcome.content == "good" and outcome.asks == 2
    # First ask: 40 characters in, "bad" out (10 + 1 tokens). The re-ask sends the 40
    # characters, "bad" and the 266-character re-ask message (309 characters: 78 tokens)
    # and gets "good" (1 token).
    assert outcome.usage == {"prompt_tokens": 88.0, "completion_tokens": 2.0,
                             "cost_usd": 92.0}
    assert runner.usage("priced", "chat").to_dict() == {
        **NOTHING_YET, "calls": 1, "requests": 2, "reasks": 1, "prompt_tokens": 88.0,
        "completion_tokens": 2.0, "spent_usd": 92.0, "cost_per_1000_calls": 92_000.0}


def test_every_unusable_failed_and_budget_stopped_call_is_counted(fake: Any) -> None:
    # The calls asking "f1" and "f2" fail (their first message: a re-ask's words may hold
    # an "f" too).
    server = fake(reply=lambda body: "bad", fault_for=lambda index, body: "400" if str(
        body["messages"][0]["content"]).startswith("f") else None)
    runner = make_runner(prices=PRICES, reasks=1)
    where = endpoint(server)
    bad_once, bad_twice, failing, failing_too = (
        ChatRequest(messages=[{"role": "user", "content": text}])
        for text in ("a", "b", "f1", "f2"))
    outcomes = calls(runner, (where, bad_once), (where, bad_twice), (where, failing),
                     (where, failing_too), check=is_good)
    assert [o.problems for o in outcomes] == [["not good"], ["not good"], [], []]
    counters = runner.usage("priced", "chat")
    assert (counters.unusable, counters.reasks, counters.failures) == (2, 2, 2)
    # A budget that cannot cover the bound a request gets (2048 tokens at $2): both stopped.
    broke = make_runner(prices=PRICES, budget_usd=100.0)
    stopped = calls(broke, (where, bad_once), (where, bad_twice))
    assert all(o.budget_stopped for o in stopped)
    assert broke.usage("priced", "chat").budget_stopped == 2


def test_a_failure_after_an_unusable_reply_keeps_the_reply_its_problems_and_asks(
    fake: Any
) -> None:
    server = fake(reply=lambda body: "bad", fault_for=lambda index, body: "400" if index else None)
    runner = make_runner(prices=PRICES, reasks=2)
    [outcome] = calls(runner, (endpoint(server), SHORT), check=is_good)
    assert (outcome.content, outcome.problems, outcome.asks) == ("bad", ["not good"], 1)
    assert outcome.error is not None and outcome.error.startswith("HTTP 400")
    assert outcome.usage == {"prompt_tokens": 10.0, "completion_tokens": 1.0, "cost_usd": 12.0}


def test_a_reply_without_a_completion_count_leaves_the_tokens_unknown(
    fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_count(monkeypatch, "completion_tokens")
    server = fake(reply=good_on_reask)
    runner = make_runner(prices=PRICES, reasks=1)
    [outcome] = calls(runner, (endpoint(server), SHORT), check=is_good)
    assert outcome.usable and outcome.asks == 2
    assert outcome.usage == {"requests_without_usage": 2.0}


# --- what a failed attempt says and costs ---------------------------------------------------


def test_retries_stop_after_the_last_attempt_naming_the_last_error(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "500")
    runner = make_runner(max_retries=2)
    [outcome] = calls(runner, (endpoint(server), SHORT))
    assert server.requests == 3
    assert outcome.error is not None
    assert outcome.error.startswith("gave up after 3 attempts: HTTP 500: ")


def test_a_timeout_is_named_with_the_time_waited(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "timeout", hang_s=2.0)
    runner = make_runner(max_retries=0, timeout=0.2)
    [outcome] = calls(runner, (endpoint(server), SHORT))
    assert outcome.error == "gave up after 1 attempts: timed out after 0.2s"


def test_a_refused_connection_is_named_by_its_cause() -> None:
    runner = make_runner(max_retries=0)
    # Port 9 (discard) has no listener on the loopback: the connection is refused at once.
    closed = Endpoint("priced", "http://127.0.0.1:9/v1", SECRET)
    [outcome] = calls(runner, (closed, SHORT))
    assert outcome.error == "gave up after 1 attempts: connection failed: ConnectError"
    assert runner.usage("priced", "chat").failures == 1


def test_a_refused_response_format_is_a_failure_quoting_the_server(fake: Any) -> None:
    message = ("1 validation error for Request\nbody -> response_format -> type: "
               "unexpected value")
    server = fake(refuses=("json_schema",), refusal=(500, {"error": {"message": message}}))
    runner = make_runner(max_retries=3)
    request = ChatRequest(messages=SHORT.messages, params={"response_format": {
        "type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}})
    [outcome] = calls(runner, (endpoint(server), request))
    assert server.requests == 1  # not retried: the same body would be refused again
    assert outcome.error == f"HTTP 500: response_format refused: {message}"
    assert not outcome.budget_stopped
    counters = runner.usage("priced", "chat")
    assert (counters.failures, counters.budget_stopped, counters.retries) == (1, 0, 0)


def test_a_reply_that_overflowed_llama_cpps_window_is_input_too_large_not_retried(
        fake: Any) -> None:
    # llama-cpp-python 0.3.36's answer to a generation that reaches the end of its window.
    # Before: retried as any 500, and after five generations up to the window's end
    # "gave up after 5 attempts: HTTP 500: could not broadcast ...".
    message = "could not broadcast input array from shape (49152,) into shape (0,)"
    server = fake(refuses=("json_object",), refusal=(500, {"error": {
        "message": message, "type": "internal_server_error"}}))
    runner = make_runner(max_retries=3)
    request = ChatRequest(messages=[{"role": "user", "content": "x" * 300}],
                          params={"response_format": {"type": "json_object"}})
    [outcome] = calls(runner, (endpoint(server), request))
    assert server.requests == 1
    assert outcome.error == (
        f"input too large: the server failed the reply (HTTP 500: {message}) when the "
        "prompt (about 100 tokens, estimated) and the reply filled its context window")
    counters = runner.usage("priced", "chat")
    assert (counters.failures, counters.retries) == (1, 0)
    # Another numpy broadcast error is no full window: retried as any server error.
    other = "could not broadcast input array from shape (3,) into shape (2,)"
    server = fake(refuses=("json_object",), refusal=(500, {"error": {"message": other}}))
    [outcome] = calls(make_runner(max_retries=1), (endpoint(server), request))
    assert server.requests == 2
    assert outcome.error == f"gave up after 2 attempts: HTTP 500: {other}"


def test_a_reply_cut_by_a_full_window_is_charged_to_its_call() -> None:
    # Before: the cut reply's tokens were in the runner's spend but in no call's usage, so a
    # verdict's cost and the cost per 1000 calls left out money the run had spent.
    from pytest_callqa.testing import FakeOpenAIServer

    class CutByTheWindow(FakeOpenAIServer):
        def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
            completion = super()._completion(body, fault)
            completion["choices"][0]["finish_reason"] = "length"
            return completion

    request = ChatRequest(messages=SHORT.messages, params={"max_tokens": 100})
    with CutByTheWindow(reply=lambda body: REPLY, max_lifetime_s=60.0) as server:
        runner = make_runner(prices=PRICES, max_retries=0)
        [outcome] = calls(runner, (endpoint(server), request))
    assert outcome.error is not None and outcome.error.startswith("input too large: ")
    assert outcome.usage == {"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 20.0}
    counters = runner.usage("priced", "chat").to_dict()
    assert (counters["spent_usd"], counters["cost_per_1000_calls"]) == (20.0, 20_000.0)
    # A failure of the call, not the budget's stop.
    assert not outcome.budget_stopped
    assert (counters["failures"], counters["budget_stopped"]) == (1, 0)


def test_a_call_that_fails_after_a_reply_without_usage_says_so_in_its_usage() -> None:
    # A first reply without token counts that the check refused, then a re-ask the server
    # refused (HTTP 400): the failed call's usage still says a reply reported none, rather
    # than an empty usage, which leaves the call out of the judge's calls.
    from pytest_callqa.testing import FakeOpenAIServer

    class WithoutUsage(FakeOpenAIServer):
        def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
            completion = super()._completion(body, fault)
            del completion["usage"]
            return completion

    with WithoutUsage(reply=lambda body: REPLY, schedule=[None, "400"],
                      max_lifetime_s=60.0) as server:
        [outcome] = calls(make_runner(prices=PRICES, max_retries=0, reasks=1),
                          (endpoint(server), SHORT), check=lambda text: ["not JSON"])
    assert outcome.error is not None and outcome.error.startswith("HTTP 400")
    assert outcome.usage == {"requests_without_usage": 1.0}


def test_an_error_status_is_not_charged_but_a_timeout_is_charged_its_worst_case(
    fake: Any
) -> None:
    # Both then answered: the answered attempt costs 20 (10 tokens in, 5 out).
    errored = fake(reply=lambda body: REPLY, schedule=["500"])
    runner = make_runner(prices=PRICES, budget_usd=10_000_000.0)
    calls(runner, (endpoint(errored), SHORT))
    assert runner.budget.spent() == 20.0
    timed_out = fake(reply=lambda body: REPLY, schedule=["timeout"], hang_s=2.0)
    runner = make_runner(prices=PRICES, budget_usd=10_000_000.0, timeout=0.2)
    calls(runner, (endpoint(timed_out), SHORT))
    # A request that timed out may still be billed: it is charged what it could have cost.
    assert runner.budget.spent() > 20.0 + 2048 * 2


def test_a_request_that_timed_out_or_lost_its_connection_leaves_the_spend_unknown(
    fake: Any
) -> None:
    # Before: "$0.0000 for 1 request" beside a budget that had settled it at its worst case.
    timed_out = fake(reply=lambda body: REPLY, schedule=["timeout"], hang_s=2.0)
    runner = make_runner(prices=PRICES, timeout=0.2)
    calls(runner, (endpoint(timed_out), SHORT))
    counters = runner.usage("priced", "chat").to_dict()
    assert (counters["requests"], counters["requests_without_usage"]) == (2, 1)
    assert counters["spent_usd"] is None and counters["cost_per_1000_calls"] is None
    # Each attempt that timed out is counted, not the first alone.
    twice = fake(reply=lambda body: REPLY, schedule=["timeout", "timeout"], hang_s=2.0)
    runner = make_runner(prices=PRICES, timeout=0.2, max_retries=3)
    calls(runner, (endpoint(twice), SHORT))
    counters = runner.usage("priced", "chat").to_dict()
    assert (counters["requests"], counters["requests_without_usage"]) == (3, 2)
    runner = make_runner(prices=PRICES, max_retries=0)
    # Port 9 (discard) has no listener on the loopback: the connection is refused at once.
    calls(runner, (Endpoint("priced", "http://127.0.0.1:9/v1", SECRET), SHORT))
    counters = runner.usage("priced", "chat").to_dict()
    assert (counters["requests_without_usage"], counters["spent_usd"]) == (1, None)
    answered = make_runner(prices=PRICES)
    calls(answered, (endpoint(timed_out), LONG))
    assert answered.usage("priced", "chat").to_dict()["spent_usd"] == 30.0


def test_a_call_waiting_on_the_rate_limit_holds_no_reservation(fake: Any) -> None:
    # The reservation was taken before the rate's wait: held through it past a request's
    # time, it looked abandoned, and a call that fitted was refused as "budget exhausted"
    # with nothing spent.
    from pytest_callqa.engine.llm.budget import Budget, completion_bound, worst_case

    server = fake(reply=lambda body: REPLY)
    requests = [ChatRequest(messages=[{"role": "user", "content": f"{i}" * 40}])
                for i in range(4)]
    params, bound = completion_bound("priced", requests[0].kind, requests[0].params)
    worst = worst_case(PRICES, "priced", {"model": "priced", "messages":
                                          requests[0].messages, **params}, bound)
    runner = make_runner(prices=PRICES, concurrency=4, rpm=1, rpm_window_s=0.3)
    # Two worst cases and a half: a third call fits once one of two in flight settles.
    runner.budget = Budget(2.5 * worst, None, hold_s=0.05, grace_s=0.0)

    async def together() -> list[ChatOutcome]:
        async with runner.session():
            return await asyncio.gather(*(runner.call(endpoint(server), request)
                                          for request in requests))

    outcomes = asyncio.run(together())
    assert [o.budget_stopped for o in outcomes] == [False] * 4
    assert [o.content for o in outcomes] == [REPLY] * 4


# --- answers without an event loop ---------------------------------------------------------


def test_cached_answers_from_memory_then_disk_and_counts_a_hit_once(
    fake: Any, cache_dir: Path
) -> None:
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    warm = make_runner(JudgeCache(cache_dir), prices=PRICES)
    assert warm.cached(where, SHORT) is None  # nothing yet
    calls(make_runner(JudgeCache(cache_dir), prices=PRICES), (where, SHORT))
    first, again = warm.cached(where, SHORT), warm.cached(where, SHORT)
    assert first is not None and again is not None
    assert first.cached and again.cached and again.content == REPLY
    assert warm.usage("priced", "chat").cache_hits == 1
    # In memory already: a runner without a cache answers what it fetched itself.
    runner = make_runner(prices=PRICES)
    calls(runner, (where, LONG))
    remembered = runner.cached(where, LONG)
    assert remembered is not None and remembered.content == REPLY and remembered.cached


def test_cached_passes_an_entry_only_if_the_check_accepts_it(cache_dir: Path) -> None:
    where = Endpoint("priced", "http://127.0.0.1:9/v1", SECRET)
    JudgeCache(cache_dir).put(SHORT.key(where), {"content": "stale", "usage": {}})
    runner = make_runner(JudgeCache(cache_dir), prices=PRICES)
    assert runner.cached(where, SHORT, check=lambda text: ["stale"]) is None
    hit = runner.cached(where, SHORT, check=lambda text: [])
    assert hit is not None and hit.content == "stale"


def test_an_exchanged_reply_the_check_refuses_is_asked_again(fake: Any, cache_dir: Path) -> None:
    # Read from the run's exchange as from the cache: a reply the caller's check refuses is a
    # miss, asked for again.
    server = fake(reply=lambda body: REPLY)
    where = endpoint(server)
    cache = JudgeCache(cache_dir, "off")
    exchange = cache.run_exchange("run-1")
    assert exchange is not None
    exchange.put(SHORT.key(where), {"content": "stale", "usage": {}})
    runner = make_runner(cache, exchange=exchange)
    [outcome] = calls(runner, (where, SHORT), check=lambda text: ["stale"] * (text == "stale"))
    assert server.requests == 1 and outcome.content == REPLY and not outcome.cached


def test_a_reply_that_is_not_json_fails_the_call_without_a_retry() -> None:
    with fixed_reply(b"<html>upstream error</html>") as (base, seen):
        runner = make_runner(max_retries=3)
        [outcome] = calls(runner, (Endpoint("priced", base + "/v1", SECRET), SHORT))
    assert len(seen) == 1
    assert outcome.error == ("unreadable response: Expecting value: line 1 column 1 (char 0)")
    assert not outcome.budget_stopped
    counters = runner.usage("priced", "chat")
    assert (counters.requests, counters.retries, counters.failures) == (1, 0, 1)


def test_a_retry_after_longer_than_the_run_waits_gives_up_saying_so(fake: Any) -> None:
    server = fake(schedule=["429"], retry_after="30")
    runner = make_runner(max_retries=3, max_retry_after_s=1.0)
    [outcome] = calls(runner, (endpoint(server), SHORT))
    assert server.requests == 1 and not outcome.budget_stopped
    assert outcome.error is not None and outcome.error.startswith("HTTP 429: ")
    assert outcome.error.endswith("; the server asked to retry after 30s, longer than the 1s "
                                  "this run waits")


def test_a_retry_after_of_exactly_the_longest_wait_is_waited_for(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY, schedule=["429"], retry_after="1")
    runner = make_runner(max_retries=3, max_retry_after_s=1.0)
    [outcome] = calls(runner, (endpoint(server), SHORT))
    assert outcome.usable and server.requests == 2


def test_without_retry_after_a_retry_waits_the_backoff_alone(fake: Any) -> None:
    server = fake(reply=lambda body: REPLY, schedule=["500"])
    runner = make_runner(max_retries=3)  # backoff of 5–20 ms
    began = time.monotonic()
    [outcome] = calls(runner, (endpoint(server), SHORT))
    assert outcome.usable and server.requests == 2
    assert time.monotonic() - began < 0.5


# --- the runner and the request key ---------------------------------------------------------


def test_a_runners_defaults_are_the_documented_ones() -> None:
    runner = ChatRunner()
    assert (runner.concurrency, runner.rpm, runner.rpm_window_s, runner.timeout,
            runner.max_retries, runner.reasks, runner.max_retry_after_s, runner.run_id) == (
        16, None, 60.0, 60.0, 4, 2, 120.0, None)
    assert (runner.cache.mode, runner.cache.directory) == ("off", None)
    assert runner.backoff == Backoff(base_s=0.5, cap_s=20.0)
    assert runner.budget.limit_usd is None


def test_a_runner_keeps_what_it_was_given() -> None:
    runner = ChatRunner(timeout=7.5, run_id="ci-7", budget_usd=0.0, rpm=1)
    assert (runner.timeout, runner.run_id, runner.rpm, runner.budget.limit_usd) == (
        7.5, "ci-7", 1, 0.0)
    # A budget reservation is held at most one attempt, which the timeout bounds.
    assert runner.budget.patience_s == 7.5 + SETTLE_GRACE_S
    # The backoff's jitter is drawn from the seed given: one seed, one sequence of waits.
    assert ChatRunner(seed=3)._rng.random() == random.Random(3).random()


@pytest.mark.parametrize(("options", "message"), [
    ({"concurrency": 0}, "concurrency must be at least 1, got 0"),
    ({"rpm": 0}, "rpm must be at least 1, got 0"),
    ({"budget_usd": -0.01}, "budget must be a non-negative number of dollars, got -0.01"),
    ({"budget_usd": math.inf}, "budget must be a non-negative number of dollars, got inf"),
    ({"budget_usd": math.nan}, "budget must be a non-negative number of dollars, got nan"),
    ({"max_retries": -1}, "max_retries and reasks must be >= 0"),
    ({"reasks": -1}, "max_retries and reasks must be >= 0"),
])
def test_a_runner_refuses_impossible_limits_naming_them(options: dict[str, Any],
                                                        message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        ChatRunner(**options)


def test_the_request_key_is_the_digest_of_what_the_request_is() -> None:
    # Pinned: a change to what the key covers invalidates every team's cache, so it must be
    # deliberate (and come with a new entry format or prompt version).
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                          params={"temperature": 0}, kind="judge", version="3",
                          variant={"run": 2})
    canonical = ('{"backend":"openai-chat","base_url":"http://127.0.0.1:9/v1","kind":"judge",'
                 '"messages":[{"content":"hi","role":"user"}],"model":"gpt-4o-mini",'
                 '"params":{"temperature":0},"variant":{"run":2},"version":"3"}')
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    for url in ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/"):
        assert request.key(Endpoint("gpt-4o-mini", url, SECRET)) == expected
    # Only the trailing slash is dropped from the URL, never a letter of it.
    assert request.key(Endpoint("gpt-4o-mini", "http://127.0.0.1:9/vX", SECRET)) != \
        request.key(Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v", SECRET))


def test_a_shared_outcome_carries_the_failure_and_the_budget_stop() -> None:
    stopped = ChatOutcome(content=None, problems=["p"], error="over budget",
                          usage={"prompt_tokens": 1.0}, budget_stopped=True, asks=1)
    shared = transport._shared(stopped)
    assert (shared.content, shared.problems, shared.error, shared.budget_stopped) == (
        None, ["p"], "over budget", True)
    assert (shared.usage, shared.cached, shared.asks) == ({}, False, 0)
    assert shared.problems is not stopped.problems


def test_a_failed_attempts_reservation_is_released_for_the_retry(fake: Any) -> None:
    # Each attempt reserves its worst case, 8,310 here (the prompt's bound and 4,096
    # completion tokens at $2); the budget holds two at once, not three. Released after
    # each error, the reservations never pile up and the third attempt goes out.
    server = fake(reply=lambda body: REPLY, schedule=["500", "500"])
    runner = make_runner(prices=PRICES, budget_usd=20_000.0, max_retries=3)
    [outcome] = calls(runner, (endpoint(server), SHORT))
    assert outcome.usable and server.requests == 3
    assert runner.budget.spent() == 20.0


# --- hostile replies (a helper's audit: each crashed, hung, leaked or overspent) -----------


def _completion(content: str, **usage: Any) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}],
                       "usage": usage}).encode()


@pytest.mark.parametrize("status", [200, 500])
def test_json_nested_past_pythons_limit_is_an_unreadable_reply_not_a_crash(
        status: int) -> None:
    # A RecursionError escaped the batch: every item of it was lost.
    with fixed_reply(b"[" * 100_000 + b"]" * 100_000, status=status) as (base, _):
        runner = make_runner(max_retries=0)
        [outcome] = calls(runner, (Endpoint("priced", base + "/v1", SECRET), SHORT))
    assert not outcome.usable and outcome.error is not None
    if status == 200:
        assert outcome.error == "unreadable response: JSON nested deeper than Python reads"


@pytest.mark.parametrize("tokens", [-10_000_000, float("nan"), True])
def test_token_counts_that_are_no_counts_leave_the_cost_unknown(tokens: float) -> None:
    # A negative count made the spend negative ($-42 for 28 requests past a $0.001 budget);
    # NaN made it NaN and ended the session in a TypeError before the scorecard.
    body = _completion("ok", prompt_tokens=tokens, completion_tokens=5)
    with fixed_reply(body) as (base, _):
        runner = make_runner(prices=PRICES)
        [outcome] = calls(runner, (Endpoint("priced", base + "/v1", SECRET), SHORT))
    assert outcome.usable and "cost_usd" not in outcome.usage
    counters = runner.usage("priced", "chat")
    assert counters.prompt_tokens == 0 and not counters.cost_known
    assert counters.spent_usd == 0.0


def test_a_token_count_of_zero_is_a_count() -> None:
    # Zero is known (an empty completion): the cost is known, not left at the worst case.
    with fixed_reply(_completion("", prompt_tokens=10, completion_tokens=0)) as (base, _):
        runner = make_runner(prices=PRICES)
        [outcome] = calls(runner, (Endpoint("priced", base + "/v1", SECRET), SHORT))
    assert outcome.usage["completion_tokens"] == 0.0
    assert outcome.usage["cost_usd"] == pytest.approx(10.0)
    assert runner.usage("priced", "chat").cost_known


def test_a_budget_holds_against_a_server_that_reports_negative_usage() -> None:
    # Each call is settled at its worst case when its usage is unknown: the budget stops
    # the calls as it would without usage at all.
    # Honest usage (10 + 5 tokens at $1 and $2 each): $200 pays for 4 of these calls.
    body = _completion("ok", prompt_tokens=-10_000_000, completion_tokens=5)
    with fixed_reply(body) as (base, seen):
        runner = make_runner(prices=PRICES, budget_usd=200.0, concurrency=1)
        where = Endpoint("priced", base + "/v1", SECRET)
        outcomes = calls(runner, *[(where, ChatRequest(messages=[{
            "role": "user", "content": f"{i} " + "x" * 40}], params={"max_tokens": 10}))
            for i in range(20)])
    assert sum(o.budget_stopped for o in outcomes) >= 16
    assert 1 <= len(seen) <= 4
    assert runner.usage("priced", "chat").spent_usd >= 0.0


def test_a_key_the_server_echoes_in_its_reply_is_redacted_before_anything_keeps_it(
        cache_dir: Path) -> None:
    with fixed_reply(_completion(f"{SECRET} is your key", prompt_tokens=10,
                                 completion_tokens=5)) as (base, _):
        runner = make_runner(JudgeCache(cache_dir))
        [outcome] = calls(runner, (Endpoint("priced", base + "/v1", SECRET), SHORT))
    assert outcome.content == "<redacted> is your key"
    assert not any(SECRET in p.read_text(encoding="utf-8") for p in cache_dir.rglob("*")
                   if p.is_file())


def test_a_key_the_reply_spells_with_json_escapes_is_redacted_too(cache_dir: Path) -> None:
    # Before: the escaped spelling passed the redaction, and decoding the verdict's JSON gave
    # the key back to the report, the HTML and the test's messages.
    spelled = "".join(f"\\u{ord(c):04X}" if i % 3 == 0 else c for i, c in enumerate(SECRET))
    content = json.dumps({"score": 1, "reason": "KEY"}).replace("KEY", f"{spelled} leaked")
    assert json.loads(content)["reason"] == f"{SECRET} leaked"
    with fixed_reply(_completion(content, prompt_tokens=1, completion_tokens=1)) as (base, _):
        runner = make_runner(JudgeCache(cache_dir))
        [outcome] = calls(runner, (Endpoint("priced", base + "/v1", SECRET), SHORT))
    assert json.loads(outcome.content)["reason"] == "<redacted> leaked"
    assert not any(SECRET in p.read_text(encoding="utf-8") for p in cache_dir.rglob("*")
                   if p.is_file())


def test_a_url_secret_the_reply_spells_with_an_escaped_slash_is_redacted() -> None:
    endpoint = Endpoint("m", "https://user:pa%2Fss-0123@proxy.example/v1", SECRET)
    assert endpoint.redact_reply('{"r": "pa\\/ss-0123"}') == '{"r": "<redacted>"}'


@pytest.mark.parametrize("key", ["null", "a", "1234567"])
def test_a_placeholder_key_is_not_cut_out_of_the_reply(key: str) -> None:
    # Keys under 8 characters are placeholders for keyless servers; blanking one out of a
    # reply turned every null into "<redacted>" and every "a" inside a word too.
    content = '{"score": 1, "code": null, "reason": "a match 1234567"}'
    with fixed_reply(_completion(content, prompt_tokens=1, completion_tokens=1)) as (base, _):
        [outcome] = calls(make_runner(), (Endpoint("priced", base + "/v1", key), SHORT))
    assert outcome.content == content


def test_a_key_of_eight_characters_is_cut_out_of_the_reply() -> None:
    with fixed_reply(_completion("x 12345678 y", prompt_tokens=1, completion_tokens=1)) \
            as (base, _):
        [outcome] = calls(make_runner(), (Endpoint("priced", base + "/v1", "12345678"), SHORT))
    assert outcome.content == "x <redacted> y"


def test_a_cache_entry_nested_past_pythons_limit_is_a_damaged_miss(cache_dir: Path) -> None:
    cache = JudgeCache(cache_dir)
    where = Endpoint("priced", "http://127.0.0.1:9/v1", SECRET)
    key = SHORT.key(where)
    cache.put(key, {"content": "x", "usage": {}})
    cache.entry_path(key).write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert cache.lookup(key).status == "damaged"


class _Trickle(http.server.BaseHTTPRequestHandler):
    """Headers at once, then a 1,000-byte body one byte every 0.2 s, giving up after 8 s."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "1000")
        self.end_headers()
        for _ in range(40):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return  # the client gave up
            time.sleep(0.2)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_reply_trickled_a_byte_at_a_time_times_out_within_the_timeout() -> None:
    # The client's timeout bounded each read: a byte every 0.2 s kept a 0.5 s call open for
    # as long as the server kept sending.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        runner = make_runner(timeout=0.5, max_retries=0)
        started = time.monotonic()
        [outcome] = calls(runner, (Endpoint(
            "priced", f"http://127.0.0.1:{server.server_address[1]}/v1", SECRET), SHORT))
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert outcome.error == "gave up after 1 attempts: timed out after 0.5s"
    assert elapsed < 4.0  # the server would have kept it open for 8 s

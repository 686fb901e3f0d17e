"""The LLM judge against the fake server, over real HTTP with the official client."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.core.judging import JudgeRequest
from pytest_callqa.engine.core.results import JudgeUnavailable
from pytest_callqa.engine.evaluate import evaluate, evaluate_many, prepare
from pytest_callqa.engine.judges.llm import PROMPT_VERSION, OpenAIJudge
from pytest_callqa.engine.judges.prompts import CALL_PROMPT, build_messages
from pytest_callqa.engine.llm.cache import JudgeCache
from pytest_callqa.engine.llm.endpoint import CallError, Endpoint
from pytest_callqa.engine.llm.limits import Backoff
from pytest_callqa.engine.llm.transport import ChatOutcome, ChatRequest, ChatRunner
from pytest_callqa.engine.pricing import PriceTable
from pytest_callqa.testing import FakeOpenAIServer
from pytest_callqa.testing.fake_replies import first_user_json

from .conftest import make_judge, make_runner
from .helpers import MODEL, SECRET, qa_case, qa_items, qa_output, text_case

EVIDENCE = "evidence_backed_reasoning"


def requests_for(count: int) -> list[JudgeRequest]:
    return [r for case, output, model in qa_items(count)
            for r in prepare(case, output, model=model, benchmarks=False).requests]


def text_requests() -> list[JudgeRequest]:
    case = text_case()
    output = dict(case.expected_outcome)
    return prepare(case, output, benchmarks=False).requests


# --- verdicts and prompts ---------------------------------------------------------------


def test_verdict_comes_from_the_reply(fake: Any) -> None:
    server = fake()
    result = evaluate(qa_case(0), qa_output(qa_case(0)), judge=make_judge(server),
                      benchmarks=False)
    metric = result.metric(EVIDENCE)
    assert metric.value == 0.5 and metric.scored and not metric.flagged
    [record] = result.judge_record
    assert record["judge"] == f"openai:{MODEL}"
    assert record["score"] == 0.5
    assert record["reason"] == f"fake verdict for {EVIDENCE}"
    assert result.usage["judge_calls"] == 1.0
    assert result.usage["judge_prompt_tokens"] > 0
    assert result.usage["judge_cost_usd"] > 0


def test_request_carries_every_judge_input(fake: Any) -> None:
    server = fake()
    make_judge(server).judge(requests_for(1))
    [body] = server.bodies
    assert body["model"] == MODEL
    assert body["temperature"] == 0
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"]["required"] == [EVIDENCE]
    system, user = body["messages"]
    assert system == {"role": "system", "content": CALL_PROMPT}
    inputs = json.loads(user["content"])
    case = qa_case(0)
    # Every line numbered with its turn from 1, as the model under test was told them.
    assert inputs["transcript"].splitlines() == [
        f"turn {i}: {line}" for i, line in enumerate(case.transcript_text.splitlines(), 1)]
    assert inputs["expected_outcome"] == case.expected_outcome
    assert inputs["config"] == case.config
    assert inputs["model_output"] == qa_output(case)
    metric = inputs["metric"]
    assert metric["metric"] == EVIDENCE and metric["scale"] == "unit"
    assert "0.0 to 1.0" in metric["score_format"]
    assert metric["focus"]["reasons"][0]["question_id"] == "greeting"


def test_system_prompt_states_the_rules() -> None:
    text = CALL_PROMPT
    assert "expected_outcome" in text and "transcript" in text and "config" in text
    assert "binary" in text and "numbered" in text
    assert "neither in the transcript nor in" in text  # fabricated facts never pass
    assert "PASS_FAIL" in text and "false positive" in text
    assert "strict" in text
    assert "one key per metric" in text and '"reply_fields"' in text
    for key in ("score", "expected_outcome_reference", "model_output_observed", "reason"):
        assert f'"{key}"' in text


def test_case_specific_emphasis_is_passed_on() -> None:
    case = qa_case(0).model_copy(update={"config": {
        **qa_case(0).config, "evaluation_criteria_override": "Quotes must be verbatim."}})
    requests = prepare(case, qa_output(case), benchmarks=False).requests
    from pytest_callqa.engine.judges.replies import Item

    messages = build_messages([Item(requests[0].metric, requests[0])])
    assert json.loads(messages[1]["content"])["case_specific_emphasis"] == (
        "Quotes must be verbatim.")


# --- combined and per-metric ------------------------------------------------------------


def test_combined_mode_sends_one_call_per_output(fake: Any) -> None:
    server = fake()
    requests = text_requests()
    assert len(requests) == 3
    verdicts = make_judge(server, mode="combined").judge(requests)
    assert server.requests == 1
    inputs = first_user_json(server.bodies[0])
    assert [m["metric"] for m in inputs["metrics"]] == [r.metric for r in requests]
    assert [v.metric for v in verdicts] == [r.metric for r in requests]
    assert all(v.score == 0.5 and not v.flagged for v in verdicts)
    # One call's usage is shared by its verdicts, so their sum is the call's.
    assert sum(v.usage["calls"] for v in verdicts) == pytest.approx(1.0)


def test_per_metric_mode_sends_one_call_per_metric(fake: Any) -> None:
    server = fake()
    verdicts = make_judge(server, mode="per-metric").judge(text_requests())
    assert server.requests == 3
    assert all(v.score == 0.5 and not v.flagged for v in verdicts)


def test_combined_reply_keeps_usable_verdicts_and_errors_the_rest(fake: Any) -> None:
    def reply(body: dict[str, Any]) -> dict[str, Any]:
        items = first_user_json(body)["metrics"]
        scores = {"call_intent_match": 0.7, "highlight_correctness": 0.8,
                  "fabrication_free_rate": 3.0}
        return {"verdicts": [{"metric": m["metric"], "score": scores[m["metric"]],
                              "reason": "r"} for m in items]}

    server = fake(reply=reply)
    verdicts = {v.metric: v for v in make_judge(server, mode="combined").judge(text_requests())}
    assert server.requests == 3  # the first ask and two re-asks
    assert verdicts["highlight_correctness"].score == 0.8
    assert not verdicts["highlight_correctness"].flagged
    # 0.7 is not on the ternary grid (0, 0.5, 1): unusable too.
    for metric in ("call_intent_match", "fabrication_free_rate"):
        assert verdicts[metric].judge_error and verdicts[metric].score is None
        assert not verdicts[metric].flagged
        assert "unusable after 3 attempts" in verdicts[metric].reason


def test_identical_requests_are_judged_once(fake: Any) -> None:
    server = fake()
    request = requests_for(1)[0]
    first, second = make_judge(server).judge([request, request])
    assert server.requests == 1
    assert first.score == second.score == 0.5
    assert first.usage and second.usage == {}


# --- unusable replies -------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "problem"), [
    ("garbage", "not valid JSON"),
    ("out_of_range", "score 7.5 for metric 'evidence_backed_reasoning' is not valid"),
])
def test_persistently_bad_reply_is_a_judge_error_not_a_score(
    fake: Any, fault: str, problem: str
) -> None:
    server = fake(fault_for=lambda index, body: fault)
    judge = make_judge(server)
    result = evaluate(qa_case(0), qa_output(qa_case(0)), judge=judge, benchmarks=False)
    assert server.requests == 3  # one ask, two re-asks
    metric = result.metrics[EVIDENCE]
    assert metric.judge_error and not metric.scored and metric.value is None
    assert metric.rating is None and not metric.blocker
    assert "judge reply unusable after 3 attempts" in (metric.reason or "")
    assert problem in (metric.reason or "")
    # A weighted metric without a verdict: the task score is unknown, not renormalised.
    assert result.judge_errors == [EVIDENCE] and result.score is None and result.incomplete
    with pytest.raises(JudgeUnavailable, match="judge error, not a model failure"):
        result.metric(EVIDENCE)
    [record] = result.judge_record
    assert record["judge_error"] is True and record["score"] is None
    summary = judge.usage_summary()
    assert summary["judge_errors"] == 1 and summary["flagged"] == 0


def test_a_score_past_the_largest_float_is_a_judge_error_not_a_crash(fake: Any) -> None:
    # math.isfinite raised OverflowError on it: the batch lost every result, and the
    # plugin's pair-by-pair fallback sent the cancelled calls again.
    server = fake(reply=lambda body: {"metric": EVIDENCE, "score": 10 ** 400, "reason": "x"})
    results = evaluate_many(qa_items(3), judge=make_judge(server), benchmarks=False)
    assert len(results) == 3
    for result in results:
        metric = result.metrics[EVIDENCE]
        assert metric.judge_error and metric.value is None and not metric.blocker
        assert "is not valid" in (metric.reason or "")
    assert server.requests == 9  # three outputs, each asked and re-asked twice, once


def test_reask_shows_the_problem_and_recovers(fake: Any) -> None:
    server = fake(schedule=["garbage"])
    [verdict] = make_judge(server).judge(requests_for(1))
    assert verdict.score == 0.5 and not verdict.flagged
    assert server.requests == 2
    retry = server.bodies[1]["messages"]
    assert retry[2]["role"] == "assistant" and "not json" in retry[2]["content"]
    assert retry[3]["role"] == "user" and "could not be used" in retry[3]["content"]


def test_out_of_range_on_a_grid_scale_is_rejected(fake: Any) -> None:
    # call_intent_match is ternary: 0.7 is in range but not on the grid.
    server = fake(reply=lambda body: {"metric": "call_intent_match", "score": 0.7,
                                      "reason": "close"})
    request = next(r for r in text_requests() if r.metric == "call_intent_match")
    [verdict] = make_judge(server).judge([request])
    assert verdict.judge_error and verdict.score is None


def test_unusable_replies_are_not_cached(fake: Any, cache_dir: Path) -> None:
    server = fake(fault_for=lambda index, body: "garbage")
    make_judge(server, JudgeCache(cache_dir)).judge(requests_for(1))
    assert not list(cache_dir.glob("??/*.json"))


class _TextPartsServer(FakeOpenAIServer):
    """Sends each reply's content as a list of text parts, as some gateways do."""

    def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        completion = super()._completion(body, fault)
        message = completion["choices"][0]["message"]
        text = message["content"]
        message["content"] = [{"type": "text", "text": text[:5]},
                              {"type": "text", "text": text[5:]}]
        return completion


def test_a_verdict_sent_as_text_parts_is_read() -> None:
    # Before: the parts were read as an empty reply, re-asked twice, then a judge error.
    with _TextPartsServer(max_lifetime_s=60.0) as server:
        [verdict] = make_judge(server).judge(requests_for(1))
    assert verdict.score == 0.5 and not verdict.judge_error
    assert server.requests == 1


class _NoUsageServer(FakeOpenAIServer):
    """Leaves ``usage`` out of every reply, as some servers do."""

    def _completion(self, body: dict[str, Any], fault: str | None) -> dict[str, Any]:
        completion = super()._completion(body, fault)
        del completion["usage"]
        return completion


def test_the_spend_line_says_which_tokens_are_unknown() -> None:
    # Before: "judge spend cost unknown: 2 requests, 0 cache hits, 0+0 tokens", a count
    # where the server had reported none.
    with _NoUsageServer(max_lifetime_s=60.0) as server:
        judge = make_judge(server)
        judge.judge(requests_for(2))
    assert judge.spend_line() == ("judge spend cost unknown: 2 requests, 0 cache hits, "
                                  "tokens unknown for 2 of 2 requests")


# --- transport faults -------------------------------------------------------------------


def test_retries_recover_from_20_percent_429_and_500(fake: Any) -> None:
    server = fake(fault_rate=0.2, faults=("429", "500"), seed=1, latency=0.005)
    judge = make_judge(server, concurrency=8, max_retries=6)
    # 80 requests: a fifth of them faulted is ~16, so "a real share" holds for any request
    # wording (the draw depends on the body), not only for one seed.
    verdicts = judge.judge(requests_for(80))
    injected = sum(server.faults_injected.values())
    assert injected >= 5
    assert set(server.faults_injected) <= {"429", "500"}
    assert all(v.score == 0.5 and not v.flagged for v in verdicts)
    assert server.requests == 80 + injected
    summary = judge.usage_summary()
    assert summary["retries"] == injected and summary["failures"] == 0


def test_retry_after_is_honoured(fake: Any) -> None:
    server = fake(schedule=["429"], retry_after="1")
    [verdict] = make_judge(server).judge(requests_for(1))
    assert verdict.score == 0.5
    first, second = server.log
    waited = second.received - first.received
    assert 1.0 <= waited < 5.0


def test_a_timeout_is_retried(fake: Any) -> None:
    server = fake(schedule=["timeout"], hang_s=1.5)
    judge = make_judge(server, timeout=0.3)
    [verdict] = judge.judge(requests_for(1))
    assert verdict.score == 0.5 and not verdict.flagged
    assert judge.usage_summary()["retries"] == 1


def test_exhausted_retries_give_a_judge_error(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "500")
    judge = make_judge(server, max_retries=2)
    [verdict] = judge.judge(requests_for(1))
    assert server.requests == 3
    assert verdict.judge_error and verdict.score is None and not verdict.flagged
    assert "judge call failed" in verdict.reason and "HTTP 500" in verdict.reason
    assert "gave up after 3 attempts" in verdict.reason


def test_a_rejected_key_stops_the_run_without_repeating_it(fake: Any) -> None:
    import traceback

    server = fake(fault_for=lambda index, body: "401")
    judge = make_judge(server)
    with pytest.raises(CallError) as caught:
        judge.judge(requests_for(3))
    assert server.log[0].authorization == f"Bearer {SECRET}"  # the key was really sent...
    message = str(caught.value)
    assert "HTTP 401" in message and "<redacted>" in message
    assert SECRET not in message  # ...and the server's echo of it was not repeated
    assert SECRET not in "".join(traceback.format_exception(caught.value))


def test_credentials_in_the_judge_url_are_never_repeated_in_any_form(
        fake: Any, caplog: pytest.LogCaptureFixture) -> None:
    # A URL's credentials go as HTTP Basic authentication: a server that echoes the header
    # echoes base64("user:password"), which the error must not repeat either; and httpx2
    # logs each request's URL, which must come without them.
    import base64
    import logging
    import traceback

    server = fake(fault_for=lambda index, body: "401")
    password = "pw%2FLEAK"  # percent-encoded in the URL, sent decoded
    url = server.base_url.replace("http://", f"http://user:{password}@")
    token = base64.b64encode(b"user:pw/LEAK").decode()
    judge = OpenAIJudge(MODEL, base_url=url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(None))
    with caplog.at_level(logging.DEBUG), pytest.raises(CallError) as caught:
        judge.judge(requests_for(1))
    assert server.log[0].authorization == f"Basic {token}"  # really sent...
    shown = "".join(traceback.format_exception(caught.value)) + caplog.text
    assert "Incorrect API key provided: Basic <redacted>" in str(caught.value)
    assert server.base_url in caplog.text  # ...and httpx2 logged the request
    for secret in (token, password, "pw/LEAK", SECRET):
        assert secret not in shown


# Each status the transport sorts: a key, permission or model the endpoint rejects stops the
# run (every later call would fail the same way); a transient status is retried; any other
# client error fails the one call without a retry.
STOPS_THE_RUN = ("401", "403", "404")
RETRIED = ("408", "409", "429", "500", "502", "503")
# Backoff waits a uniform draw in [25 ms, 50 ms] for every attempt: short, yet measurable.
SHORT_BACKOFF = Backoff(base_s=0.05, cap_s=0.05)


def call_once(server: FakeOpenAIServer, runner: ChatRunner) -> ChatOutcome:
    endpoint = Endpoint(MODEL, server.base_url, SECRET)
    request = ChatRequest(messages=[{"role": "user", "content": "hello"}])
    return runner.run_sync(lambda: runner.call(endpoint, request))


@pytest.mark.parametrize("status", STOPS_THE_RUN)
def test_a_rejecting_status_stops_the_run_naming_it(fake: Any, status: str) -> None:
    server = fake(fault_for=lambda index, body: status)
    runner = make_runner(max_retries=3)
    with pytest.raises(CallError) as caught:
        call_once(server, runner)
    # The message names the model, the endpoint and the status, before the server's words.
    assert str(caught.value).startswith(f"{MODEL} at {server.base_url}: HTTP {status}: ")
    assert server.requests == 1  # neither retried nor re-asked


@pytest.mark.parametrize("status", RETRIED)
def test_a_transient_status_is_retried_after_a_backoff(fake: Any, status: str) -> None:
    server = fake(schedule=[status])
    runner = make_runner(max_retries=3, backoff=SHORT_BACKOFF)
    outcome = call_once(server, runner)
    assert outcome.usable and outcome.content == "{}" and outcome.error is None
    assert server.requests == 2
    assert runner.usage(MODEL, "chat").retries == 1
    first, second = server.log
    assert second.received - first.received >= 0.025


def test_a_bad_request_is_not_retried(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "400")
    runner = make_runner(max_retries=3, backoff=SHORT_BACKOFF)
    outcome = call_once(server, runner)
    assert server.requests == 1
    assert not outcome.usable and outcome.content is None
    assert outcome.error is not None and outcome.error.startswith("HTTP 400")
    usage = runner.usage(MODEL, "chat")
    assert (usage.retries, usage.failures) == (0, 1)


# --- limits -----------------------------------------------------------------------------


def test_concurrency_never_exceeds_the_limit(fake: Any) -> None:
    server = fake(latency=0.03)
    make_judge(server, concurrency=4).judge(requests_for(24))
    assert server.requests == 24
    assert server.peak_in_flight == 4


def test_requests_per_minute_limit_spaces_requests(fake: Any) -> None:
    server = fake()
    judge = make_judge(server, concurrency=6, rpm=3, rpm_window_s=0.5)
    judge.judge(requests_for(6))
    starts = sorted(info.received for info in server.log)
    # The fourth goes out a window (0.5 s) after the first, unlimited ones within
    # milliseconds; arrivals, not sends, are timed, and a loaded machine can delay the
    # first arrival more than the fourth's.
    assert starts[3] - starts[0] >= 0.3


@pytest.mark.parametrize("shared", [False, True], ids=["in-process", "across-processes"])
def test_a_start_is_counted_when_the_request_goes_out(fake: Any, tmp_path: Path,
                                                       shared: bool) -> None:
    # The window counted a call when it began to queue for its slot: one that waited behind
    # a slow request went out with the next calls of the window, three starts within 4 ms
    # against a limit of two.

    def reply(body: dict[str, Any]) -> str:
        if "slow" in body["messages"][0]["content"]:
            time.sleep(0.9)
        return "ok"

    server = fake(reply=reply)
    cache = JudgeCache(tmp_path / "cache") if shared else None
    runner = make_runner(cache, concurrency=1, rpm=2, rpm_window_s=0.6)
    endpoint = Endpoint(MODEL, server.base_url, SECRET)

    async def send() -> None:
        async with runner.session():
            calls = []
            for text in ("slow", "b", "c", "d"):
                calls.append(asyncio.create_task(runner.call(
                    endpoint, ChatRequest(messages=[{"role": "user", "content": text}]))))
                await asyncio.sleep(0.01)
            await asyncio.gather(*calls)

    asyncio.run(send())
    starts = sorted(info.received for info in server.log)
    assert len(starts) == 4
    # No window of 0.6 s (less the timer's slack) holds more than two starts.
    assert all(sum(1 for t in starts if s <= t < s + 0.58) <= 2 for s in starts)


def test_budget_stops_new_calls_and_says_so(fake: Any) -> None:
    server = fake()
    # Free input, $1000 per million output tokens: each call reserves exactly $0.462 (the
    # 462-token bound of its reply schema, worked out in test_formats) and a fake verdict of
    # 55 tokens costs $0.055: three calls fit in $0.60 (0.110 + 0.462 <= 0.6), a fourth does
    # not (0.165 + 0.462 > 0.6).
    prices = PriceTable({MODEL: (0.0, 1000.0)})
    judge = make_judge(server, concurrency=1, budget_usd=0.6, prices=prices)
    results = evaluate_many(qa_items(8), judge=judge, benchmarks=False)
    sent = server.requests
    assert sent == 3
    assert all(info.body["max_tokens"] == 462 for info in server.log)
    stopped = [r.metrics[EVIDENCE] for r in results[sent:]]
    assert all(not m.scored and m.value is None and m.judge_error for m in stopped)
    assert all("budget of $0.6 exhausted" in (m.reason or "") for m in stopped)
    assert all("this request could cost up to $0.4620" in (m.reason or "") for m in stopped)
    summary = judge.usage_summary()
    assert summary["not_scored_budget"] == 8 - sent
    # Calls went out while their worst case fitted, and not once it did not.
    assert summary["spent_usd"] == summary["budget_spent_usd"] == pytest.approx(0.165)
    assert "budget reached" in judge.spend_line()
    # A call the budget stopped before sending is no call: before, each counted as one at
    # $0, and the run's "per 1000 judge calls" fell by as much as the budget cut.
    assert all(r.usage.get("judge_calls") == 1.0 for r in results[:sent])
    assert all("judge_calls" not in r.usage for r in results[sent:])


def test_a_call_no_reply_came_back_to_is_no_call(fake: Any) -> None:
    # Every other call refused (HTTP 400: nothing generated, nothing billed). Each counted as
    # a call at $0, so "per 1000 judge calls" came out at half the judge's real cost.
    server = fake(fault_for=lambda index, body: "400" if index % 2 else None)
    judge = make_judge(server, concurrency=1, prices=PriceTable({MODEL: (0.0, 1000.0)}))
    results = evaluate_many(qa_items(6), judge=judge, benchmarks=False)
    answered = [r for r in results if r.metrics[EVIDENCE].scored]
    refused = [r for r in results if r.metrics[EVIDENCE].judge_error]
    assert len(answered) == len(refused) == 3
    assert all(r.usage.get("judge_calls") == 1.0 and r.usage["judge_cost_usd"] > 0
               for r in answered)
    assert all("judge_calls" not in r.usage for r in refused)


@pytest.mark.parametrize("shared", [False, True], ids=["one-process", "ledger"])
def test_the_budget_holds_with_calls_in_flight(fake: Any, cache_dir: Path,
                                               shared: bool) -> None:
    # $1 per million tokens: each call reserves about $0.006 (3.9 kB of request, 2048
    # completion tokens) and costs about $0.001. Sixteen slots would let every call out at
    # once; the reservations let out only what the budget covers at worst.
    server = fake(latency=0.05)
    budget = 0.02
    options: dict[str, Any] = {"run_id": "run-1"} if shared else {}
    judge = make_judge(server, JudgeCache(cache_dir if shared else None, "off"),
                       concurrency=16, budget_usd=budget,
                       prices=PriceTable({MODEL: (1.0, 1.0)}), **options)
    evaluate_many(qa_items(24), judge=judge, benchmarks=False)
    summary = judge.usage_summary()
    assert summary["spent_usd"] <= budget and summary["budget_spent_usd"] <= budget
    assert server.peak_in_flight <= 3  # 3 x $0.006 fit in $0.02, 4 do not
    # Calls that did not fit waited for reservations to be settled instead of giving up:
    # many more than three went out, and the rest were stopped.
    assert 8 <= server.requests < 24
    assert summary["not_scored_budget"] == 24 - server.requests


def test_budget_needs_a_price() -> None:
    with pytest.raises(CallError, match="has no price"):
        OpenAIJudge("my-local-model", base_url="http://127.0.0.1:9/v1", budget_usd=1.0)


# --- cache ------------------------------------------------------------------------------


def test_warm_cache_sends_nothing(fake: Any, cache_dir: Path) -> None:
    server = fake()
    items = qa_items(10)
    cold = evaluate_many(items, judge=make_judge(server, JudgeCache(cache_dir)),
                         benchmarks=False)
    assert server.requests == 10
    judge = make_judge(server, JudgeCache(cache_dir))
    warm = evaluate_many(items, judge=judge, benchmarks=False)
    assert server.requests == 10
    assert [r.judge_record for r in warm] == [r.judge_record for r in cold]
    # A result is the same whether the cache or the server answered: which one did is the
    # run's counters' business (under xdist, which worker's result was kept decided it).
    assert [r.usage for r in warm] == [r.usage for r in cold]
    assert all("judge_cached_calls" not in r.usage for r in warm)
    # A cached call still has a cost per call (for cost per 1000 calls), not a spend.
    summary = judge.usage_summary()
    assert summary["cache_hits"] == 10 and summary["requests"] == 0
    assert summary["spent_usd"] == 0.0 and summary["cost_per_1000_calls"] > 0


def test_a_batch_the_cache_answers_starts_no_event_loop(
    fake: Any, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = fake()
    requests = requests_for(6)
    cold = make_judge(server, JudgeCache(cache_dir)).judge(requests[:4])
    assert server.requests == 4

    def no_loop(*_args: Any) -> None:
        raise AssertionError("an event loop was started")

    judge = make_judge(server, JudgeCache(cache_dir))
    monkeypatch.setattr(judge.runner, "run_sync", no_loop)
    warm = judge.judge(requests[:4])
    assert [(v.score, v.reason) for v in warm] == [(v.score, v.reason) for v in cold]
    assert [v.usage for v in warm] == [v.usage for v in cold]
    summary = judge.usage_summary()
    assert (summary["calls"], summary["cache_hits"], summary["requests"]) == (4, 4, 0)
    # Two cached, two not: only those two are sent, after the check before sending.
    monkeypatch.undo()
    judge = make_judge(server, JudgeCache(cache_dir))
    checked: list[bool] = []
    judge.before_send = lambda: checked.append(True)
    judge.judge(requests[2:])
    assert server.requests == 6 and checked == [True]
    summary = judge.usage_summary()
    assert (summary["calls"], summary["cache_hits"], summary["requests"]) == (4, 2, 2)


def test_a_reply_shared_in_one_process_is_charged_as_another_process_would_be(
    fake: Any, cache_dir: Path
) -> None:
    server = fake()
    endpoint = Endpoint(MODEL, server.base_url, SECRET)
    request = ChatRequest(messages=[{"role": "user", "content": "hello"}])
    runner = make_runner(JudgeCache(cache_dir))

    async def twice() -> list[ChatOutcome]:
        async with runner.session():
            return list(await asyncio.gather(runner.call(endpoint, request),
                                             runner.call(endpoint, request)))

    first, second = asyncio.run(twice())
    assert server.requests == 1 and not first.cached and first.usage["prompt_tokens"] > 0
    # The second consumer, and another process reading the cache, both see a cache hit
    # with the tokens and cost of the one request.
    assert second.cached and second.usage == {**first.usage, "cached": 1.0}
    elsewhere = make_runner(JudgeCache(cache_dir)).cached(endpoint, request)
    assert elsewhere is not None and elsewhere.usage == second.usage


def test_a_worker_reading_another_workers_unusable_reply_reports_it_as_that_worker_did(
    fake: Any, cache_dir: Path
) -> None:
    # Two xdist workers of one run, cache off: the second reads the first's outcome from the
    # run's exchange. It said "after 1 attempt" and charged the case nothing, so the report
    # of -n 2 differed from one process's (the reason, the case's and model's judge cost).
    server = fake(fault_for=lambda index, body: "garbage")

    def worker() -> OpenAIJudge:
        cache = JudgeCache(cache_dir, "off")
        return make_judge(server, cache, exchange=cache.run_exchange("run-1"),
                          prices=PriceTable({MODEL: (1.0, 1.0)}))

    sent = evaluate(qa_case(0), qa_output(qa_case(0)), judge=worker(), benchmarks=False)
    assert server.requests == 3
    read = evaluate(qa_case(0), qa_output(qa_case(0)), judge=worker(), benchmarks=False)
    assert server.requests == 3
    assert "judge reply unusable after 3 attempts" in (read.metrics[EVIDENCE].reason or "")
    assert read.judge_record == sent.judge_record
    assert read.usage == sent.usage and sent.usage["judge_cost_usd"] > 0


def test_a_check_before_sending_that_raises_stops_the_batch(fake: Any) -> None:
    server = fake()
    judge = make_judge(server)

    def refuse() -> None:
        raise RuntimeError("endpoint unusable")

    judge.before_send = refuse
    with pytest.raises(RuntimeError, match="endpoint unusable"):
        judge.judge(requests_for(2))
    assert server.requests == 0


def test_cache_key_changes_with_model_and_prompt_version(fake: Any, cache_dir: Path) -> None:
    from pytest_callqa.engine.llm.transport import ChatRequest

    a, b = Endpoint("a", "http://127.0.0.1:9/v1"), Endpoint("b", "http://127.0.0.1:9/v1")
    request = ChatRequest(messages=[{"role": "user", "content": "x"}], version=PROMPT_VERSION)
    other = ChatRequest(messages=[{"role": "user", "content": "x"}], version="other")
    assert request.key(a) != request.key(b)
    assert request.key(a) != other.key(a)
    assert request.key(a) == ChatRequest(messages=[{"role": "user", "content": "x"}],
                                         version=PROMPT_VERSION).key(a)


def test_read_only_cache_reads_but_never_writes(fake: Any, cache_dir: Path) -> None:
    server = fake()
    make_judge(server, JudgeCache(cache_dir)).judge(requests_for(2))
    entries = sorted(cache_dir.glob("??/*.json"))
    make_judge(server, JudgeCache(cache_dir, "ro")).judge(requests_for(4))
    assert server.requests == 4  # 2 cold, then 2 new ones; the 2 cached were read
    assert sorted(cache_dir.glob("??/*.json")) == entries


def test_cache_off_writes_nothing(fake: Any, tmp_path: Path) -> None:
    server = fake()
    make_judge(server, JudgeCache(None, "off")).judge(requests_for(2))
    make_judge(server, JudgeCache(None, "off")).judge(requests_for(2))
    assert server.requests == 4
    assert list(tmp_path.iterdir()) == []


# --- secrets ----------------------------------------------------------------------------


def test_the_key_is_absent_from_everything_written(fake: Any, cache_dir: Path) -> None:
    from .helpers import tree_text

    server = fake(schedule=["429", "garbage", "500", "out_of_range"])
    judge = make_judge(server, JudgeCache(cache_dir), mode="combined", budget_usd=100.0)
    results = evaluate_many([*qa_items(3), (text_case(), dict(text_case().expected_outcome),
                                            "candidate")], judge=judge, benchmarks=False)
    assert any(info.authorization == f"Bearer {SECRET}" for info in server.log)
    assert list(cache_dir.rglob("*.json"))
    assert SECRET not in tree_text(cache_dir)
    written = json.dumps([r.to_dict() for r in results]) + json.dumps(judge.usage_summary())
    assert SECRET not in written
    assert SECRET not in repr(judge) + judge.describe() + judge.spend_line()


def test_describe_names_model_endpoint_mode_and_price(fake: Any, cache_dir: Path) -> None:
    server = fake()
    judge = make_judge(server, JudgeCache(cache_dir), mode="combined", rpm=600)
    text = judge.describe()
    assert f"openai {MODEL} at {server.base_url}" in text
    assert "combined mode" in text and "concurrency 16" in text and "600 requests/min" in text
    assert f"cache rw ({cache_dir})" in text and "default price $0.15/$0.6" in text


def test_credentials_in_the_base_url_are_not_shown() -> None:
    judge = OpenAIJudge(MODEL, base_url="https://user:pa55word@proxy.example/v1")
    assert "pa55word" not in judge.describe() + repr(judge)
    assert judge.endpoint.redact("failed at https://user:pa55word@proxy") == (
        "failed at https://user:<redacted>@proxy")


def test_ajudge_runs_inside_an_existing_event_loop(fake: Any) -> None:
    import asyncio

    server = fake()
    judge = make_judge(server)

    async def main() -> list[float | None]:
        # The synchronous entry point works from async code too (on a private loop).
        return [v.score for v in judge.judge(requests_for(2))]

    assert asyncio.run(main()) == [0.5, 0.5]


def test_generator_and_judge_share_one_runner(fake: Any) -> None:
    from pytest_callqa.engine.generate import OpenAIGenerator

    server = fake(latency=0.03)
    runner = make_runner(concurrency=3)
    generator = OpenAIGenerator(MODEL, base_url=server.base_url, api_key=SECRET, runner=runner)
    judge = make_judge(server, runner=runner)
    cases = [qa_case(i) for i in range(6)]
    outputs = generator.generate(cases)
    results = evaluate_many([(c, g.text, "candidate") for c, g in zip(cases, outputs, strict=True)],
                            judge=judge, benchmarks=False)
    assert all(r.valid for r in results)
    assert server.peak_in_flight <= 3
    summary = runner.usage_summary()
    assert set(summary["by_kind"]) == {"generate", "judge"}
    assert summary["requests"] == 12


def test_server_shuts_down_by_itself() -> None:
    server = FakeOpenAIServer(max_lifetime_s=0.2).start()
    url = server.base_url
    deadline = time.monotonic() + 5
    while server.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server.running, f"{url} still running"


def test_rubric_diagnostics_are_kept_and_other_extras_dropped(fake: Any) -> None:
    server = fake(reply=lambda body: {
        "metric": EVIDENCE, "score": 0.25, "reason": "no quote",
        "failure_code": "missing_evidence", "turns": [2], "value": 99, "confidence": "high"})
    result = evaluate(qa_case(0), qa_output(qa_case(0)), judge=make_judge(server),
                      benchmarks=False)
    metric = result.metric(EVIDENCE)
    assert metric.value == 0.25
    assert metric.details == {"failure_code": "missing_evidence", "turns": [2]}


def test_an_unusable_reply_cut_short_by_the_budget_is_a_judge_error(fake: Any) -> None:
    server = fake(fault_for=lambda index, body: "garbage")
    # One worst case ($0.462) fits; after the first reply's cost ($0.014 for 14 tokens of
    # garbage), a second does not.
    prices = PriceTable({MODEL: (0.0, 1000.0)})
    judge = make_judge(server, budget_usd=0.47, prices=prices)
    [verdict] = judge.judge(requests_for(1))
    assert server.requests == 1
    assert verdict.judge_error and verdict.score is None
    assert "unusable after 1 attempt:" in verdict.reason and "budget" in verdict.reason


def test_params_adjust_the_request_and_progress_is_reported(fake: Any) -> None:
    server = fake()
    seen: list[tuple[int, int]] = []
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(), params={"temperature": None, "seed": 7},
                        on_progress=lambda done, total: seen.append((done, total)))
    judge.judge(requests_for(3))
    body = server.bodies[0]
    assert "temperature" not in body and body["seed"] == 7
    assert body["response_format"]["type"] == "json_schema"
    assert sorted(seen) == [(1, 3), (2, 3), (3, 3)]


# --- structured replies -----------------------------------------------------------------


def structured_judge(server: FakeOpenAIServer, response_format: str = "auto") -> OpenAIJudge:
    # One call at a time, so the order of the formats the server saw is the order of calls.
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                       runner=make_runner(concurrency=1), response_format=response_format)


def formats_sent(server: FakeOpenAIServer) -> list[str]:
    return [(body.get("response_format") or {}).get("type", "none") for body in server.bodies]


def test_a_server_that_honours_the_schema_answers_every_call_first_time(fake: Any) -> None:
    server = fake()
    requests = text_requests()
    verdicts = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="combined",
                           runner=make_runner()).judge(requests)
    assert server.requests == 1  # one combined call, no re-ask
    [body] = server.bodies
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == [r.metric for r in requests]
    assert schema["properties"]["call_intent_match"]["properties"]["score"]["enum"] == \
        [0, 0.5, 1]
    assert all(v.score is not None and not v.judge_error for v in verdicts)


def test_a_server_that_refuses_the_schema_gets_json_object_from_then_on(fake: Any) -> None:
    server = fake(refuses=("json_schema",))
    judge = structured_judge(server)
    verdicts = judge.judge(requests_for(3))
    # The second rung is json_object carrying the schema, which this server honours.
    assert formats_sent(server) == ["json_schema", "json_object", "json_object", "json_object"]
    assert all("schema" in body["response_format"] for body in server.bodies[1:])
    assert all(v.score == 0.5 and not v.judge_error for v in verdicts)
    assert judge.formats.formats() == {f"{MODEL} at {server.base_url}": "json_object_schema"}
    # Remembered for the session: the next batch goes straight to json_object.
    judge.judge(requests_for(4)[3:])
    assert formats_sent(server)[-1] == "json_object" and server.requests == 5


def test_a_server_without_any_json_mode_gets_the_prompt_alone(fake: Any) -> None:
    server = fake(refuses=("json_schema", "json_object"))
    [verdict] = structured_judge(server).judge(requests_for(1))
    assert formats_sent(server) == ["json_schema", "json_object", "json_object", "none"]
    assert "schema" in server.bodies[1]["response_format"]
    assert "schema" not in server.bodies[2]["response_format"]
    assert verdict.score == 0.5


def test_a_fixed_format_is_never_stepped_down(fake: Any) -> None:
    server = fake(refuses=("json_schema",))
    [verdict] = structured_judge(server, "json_schema").judge(requests_for(1))
    assert formats_sent(server) == ["json_schema"]
    assert verdict.judge_error and "HTTP 400" in verdict.reason
    plain = fake()
    structured_judge(plain, "json_object").judge(requests_for(1))
    assert formats_sent(plain) == ["json_object"]
    with pytest.raises(ValueError, match="response format must be one of"):
        structured_judge(plain, "xml")


# --- input size -------------------------------------------------------------------------


def huge_qa_case(megabytes: float = 5.0) -> Any:
    case = qa_case(0)
    filler = "The customer describes the damaged parcel again in great detail. "
    turns = int(megabytes * 1_000_000 / len(filler))
    return case.model_copy(update={"id": "huge-call", "transcript": [
        *case.transcript, *[case.transcript[1].model_copy(update={"text": filler})] * turns]})


def test_an_input_over_the_window_is_not_sent_and_is_a_judge_error(fake: Any) -> None:
    server = fake()
    case = huge_qa_case()
    result = evaluate(case, qa_output(case), judge=make_judge(server), benchmarks=False)
    assert server.requests == 0
    metric = result.metrics[EVIDENCE]
    assert metric.judge_error and result.incomplete
    reason = metric.reason or ""
    assert "input too large" in reason and "'huge-call'" in reason
    assert "over the 123,904-token input limit of gpt-4o-mini" in reason  # 128k less 4096


def test_the_input_limit_can_be_set_and_a_call_under_it_goes_out(fake: Any) -> None:
    server = fake()
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET,
                        runner=make_runner(), max_input_tokens=200)
    [verdict] = judge.judge(requests_for(1))
    assert verdict.judge_error and "200-token input limit" in verdict.reason
    roomy = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET,
                        runner=make_runner(), max_input_tokens=50_000)
    [verdict] = roomy.judge(requests_for(1))
    assert verdict.score == 0.5 and server.requests == 1


def test_an_unknown_model_is_not_checked(fake: Any) -> None:
    from pytest_callqa.engine.llm.windows import context_window, input_limit

    assert context_window("gpt-4o-mini-2024-07-18") == 128_000
    assert context_window("my-local-model") is None
    assert input_limit("my-local-model") is None and input_limit("my-local-model", 99) == 99


def test_a_conversation_call_over_the_limit_still_carries_no_transcript(fake: Any) -> None:
    from pytest_callqa.engine.core.cases import GoldenCase
    from tests.families.test_conversation import EXPECTED, GOOD, TRANSCRIPT

    padding = [{"speaker": "patient", "text": "I also want to describe my whole week. " * 40}]
    case = GoldenCase.model_validate({
        "id": "long-visit", "task": "conversation", "transcript": TRANSCRIPT + padding * 20,
        "config": {}, "expected_outcome": EXPECTED})
    server = fake()
    judge = OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode="per-metric",
                        runner=make_runner(), max_input_tokens=2_500)
    result = evaluate(case, GOOD, judge=judge, benchmarks=False)
    assert server.requests == 12  # four bot turns x three metrics, none refused
    for body in server.bodies:
        inputs = json.loads(body["messages"][1]["content"])
        assert "transcript" not in inputs and "expected_outcome" not in inputs
        assert inputs["metric"]["focus"]["text"]
    assert result.judge_errors == [] and result.score is not None


def test_the_conversation_seeds_own_rule_for_an_off_scale_score_stands(fake: Any) -> None:
    from pytest_callqa.engine.core.cases import GoldenCase
    from tests.families.test_conversation import EXPECTED, GOOD, TRANSCRIPT

    case = GoldenCase.model_validate({"id": "visit", "task": "conversation",
                                      "transcript": TRANSCRIPT, "config": {},
                                      "expected_outcome": EXPECTED})
    server = fake(fault_for=lambda index, body: "out_of_range")
    judge = make_judge(server)
    result = evaluate(case, GOOD, judge=judge, benchmarks=False)
    # Seed 004: an off-scale score counts as 1 with a warning — flagged, not a judge error.
    assert result.judge_errors == []
    intelligibility = result.metrics["intelligibility"]
    assert intelligibility.flagged and intelligibility.value is not None
    assert judge.usage_summary()["judge_errors"] == 0
    assert result.metrics["garbled_turn_rate"].value == 1.0


def test_a_failing_endpoint_is_not_probed_call_by_call(fake: Any) -> None:
    # The first call settles the format question even when it fails; the rest go out
    # together instead of waiting one after another for a reply that never comes.
    server = fake(fault_for=lambda index, body: "500", latency=0.05)
    judge = make_judge(server, concurrency=4, max_retries=0)
    verdicts = judge.judge(requests_for(9))
    assert all(v.judge_error for v in verdicts)
    assert server.requests == 9 and server.peak_in_flight == 4

"""The chat request on the wire (engine/llm/wire.py): what it sends, how it reads a reply
and each kind of failure. Every server here is on 127.0.0.1 and stops with its test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_callqa.engine.llm.wire import (
    ChatClient,
    ConnectionFailed,
    RequestTimeout,
    StatusError,
    error_message,
    read_completion,
    window_full,
)

from .helpers import MODEL, SECRET, fixed_reply

BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Say ok."}],
        "temperature": 0}


def complete(base_url: str, body: Any = BODY, timeout: float = 2.0,
             api_key: str = SECRET) -> Any:
    async def once() -> Any:
        client = ChatClient(base_url, api_key, timeout)
        try:
            return await client.complete(body)
        finally:
            await client.close()

    return asyncio.run(once())


REPLY = {"choices": [{"message": {"content": "ok"}}]}


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    with fixed_reply(json.dumps(REPLY).encode()) as served:
        yield served


def test_the_real_openai_client_and_this_one_send_the_same_request_and_read_one_reply(
        fake: Any) -> None:
    # The fake server stands in for OpenAI in every judge test; the openai package's own
    # client is the reference for what such a server is sent and answers.
    import openai

    server = fake()
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}},
              "required": ["verdict"], "additionalProperties": False}
    body = {**BODY, "response_format": {"type": "json_schema", "json_schema": {
        "name": "verdict", "strict": True, "schema": schema}}}
    reference = openai.OpenAI(api_key=SECRET, base_url=server.base_url, max_retries=0)
    expected = reference.chat.completions.create(**body).model_dump()
    reference.close()
    got = complete(server.base_url, body)
    assert server.requests == 2
    first, second = server.log
    assert first.path == second.path == "/v1/chat/completions"
    assert first.body == second.body == body
    assert first.authorization == second.authorization == f"Bearer {SECRET}"
    assert got["choices"][0]["message"]["content"] == \
        expected["choices"][0]["message"]["content"]
    assert json.loads(got["choices"][0]["message"]["content"])["verdict"]
    assert got["usage"]["prompt_tokens"] == expected["usage"]["prompt_tokens"] > 0


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_the_request_path_extends_the_base_url_with_or_without_its_slash(
        recorder: Any, suffix: str) -> None:
    base, seen = recorder
    assert complete(base + suffix) == REPLY
    [(path, _, body)] = seen
    assert path == "/v1/chat/completions" and json.loads(body) == BODY


def test_the_key_and_the_organisation_and_project_of_the_environment_are_sent(
        recorder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    base, seen = recorder
    monkeypatch.delenv("OPENAI_ORG_ID", raising=False)
    monkeypatch.delenv("OPENAI_PROJECT_ID", raising=False)
    complete(base)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-456")
    complete(base)
    (_, bare, _), (_, scoped, _) = seen
    bare = {k.lower(): v for k, v in bare.items()}
    scoped = {k.lower(): v for k, v in scoped.items()}
    assert bare["authorization"] == scoped["authorization"] == f"Bearer {SECRET}"
    assert bare["content-type"] == "application/json"
    assert bare["user-agent"].startswith("pytest-callqa/")
    assert "openai-organization" not in bare and "openai-project" not in bare
    assert scoped["openai-organization"] == "org-123"
    assert scoped["openai-project"] == "proj-456"


def test_an_error_status_carries_the_servers_message_and_headers(fake: Any) -> None:
    server = fake(schedule=["429"], retry_after="7")
    with pytest.raises(StatusError) as info:
        complete(server.base_url)
    assert info.value.status == 429
    assert info.value.message == "Rate limit reached (fake)"
    assert info.value.headers["retry-after"] == "7"
    assert str(info.value) == "HTTP 429: Rate limit reached (fake)"


def test_a_reply_later_than_the_timeout_is_a_timeout(fake: Any) -> None:
    server = fake(schedule=["timeout"], hang_s=2.0)
    with pytest.raises(RequestTimeout):
        complete(server.base_url, timeout=0.2)


def test_a_refused_connection_is_named_by_the_http_librarys_error() -> None:
    # Port 9 (discard) has no listener on the loopback: the connection is refused at once.
    with pytest.raises(ConnectionFailed) as info:
        complete("http://127.0.0.1:9/v1")
    assert info.value.cause == str(info.value) == "ConnectError"


def test_a_redirect_loop_is_a_failed_connection_named_by_its_error(recorder: Any) -> None:
    # Each hop drops one "/moved"; 25 of them are more hops than the client follows (20).
    base, seen = recorder
    with pytest.raises(ConnectionFailed) as info:
        complete(base + "/moved" * 25 + "/v1")
    assert info.value.cause == "TooManyRedirects"
    assert len(seen) == 21


def test_an_error_status_with_an_empty_body_is_named_by_its_reason_phrase() -> None:
    with fixed_reply(b"", status=503) as (base, _), pytest.raises(StatusError) as info:
        complete(base + "/v1")
    assert (info.value.status, info.value.message) == (503, "Service Unavailable")


def test_a_redirect_is_followed_with_the_same_request(recorder: Any) -> None:
    base, seen = recorder
    assert complete(base + "/moved/v1") == REPLY
    assert [path for path, _, _ in seen] == ["/moved/v1/chat/completions",
                                             "/v1/chat/completions"]
    assert json.loads(seen[0][2]) == json.loads(seen[1][2]) == BODY


def test_the_pool_holds_more_connections_than_any_usual_concurrency(fake: Any) -> None:
    # httpx2's own default pool stops at 100 connections, which would hold back a run
    # configured for more concurrent requests than that: all 120 must be in flight at once.
    # The latency leaves a slow, loaded machine time to send all 120 before the first reply
    # (0.3 s did not, twice, under a parallel suite: peak 90).
    server = fake(latency=1.5)

    async def together() -> None:
        client = ChatClient(server.base_url, SECRET, 5.0)
        try:
            await asyncio.gather(*(client.complete(
                {**BODY, "messages": [{"role": "user", "content": f"call {i}"}]})
                for i in range(120)))
        finally:
            await client.close()

    asyncio.run(together())
    assert server.requests == server.peak_in_flight == 120


@pytest.mark.parametrize(("text", "said"), [
    ('{"error": {"message": "model not found", "type": "invalid_request_error"}}',
     "model not found"),
    ('{"error": "model not found"}', "model not found"),
    ('{"detail": "Not Found"}', "Not Found"),
    ('{"error": {"code": 404}}', '{"error": {"code": 404}}'),
    ('{"error": {"message": 404}}', '{"error": {"message": 404}}'),
    ("[1, 2]", "[1, 2]"),
    ("  <html>Bad Gateway</html>\n", "<html>Bad Gateway</html>"),
    ("", "Service Unavailable"),
    ("   ", "Service Unavailable"),
], ids=["openai-shape", "error-text", "detail-text", "error-without-message",
        "message-not-text", "json-not-an-object", "not-json", "empty", "blank"])
def test_an_error_reply_is_read_for_what_the_server_said(text: str, said: str) -> None:
    assert error_message(text, "Service Unavailable") == said


def test_each_phase_of_a_request_is_bounded_by_the_runs_timeout_too() -> None:
    # The whole reply has a deadline of the run's timeout; each phase (connect, write, read,
    # the pool) has it as well, not httpx2's default of 5 s, which would end a slow but
    # legitimate reply (a local model generating for 20 s under a 60 s timeout) early.
    import httpx2

    client = ChatClient("http://127.0.0.1:9/v1", SECRET, 42.0)
    try:
        assert client._http.timeout == httpx2.Timeout(42.0)
    finally:
        asyncio.run(client.close())


@pytest.mark.parametrize("count", [10 ** 400, -(10 ** 400), -1, float("nan"), True, "12"])
def test_a_token_count_no_float_holds_is_unknown_not_a_crash(count: Any) -> None:
    # An integer past the largest float made float() raise OverflowError, which took the
    # whole batch down; the call is now settled at its worst case, as for any unknown count.
    reply = read_completion({"choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": count, "completion_tokens": 3}})
    assert reply.prompt_tokens is None and reply.completion_tokens == 3.0


@pytest.mark.parametrize(("params", "completion", "finish", "cut"), [
    ({"max_tokens": 462}, 8.0, "length", True),
    # A reasoning model's bound has another name.
    ({"max_completion_tokens": 462}, 8.0, "length", True),
    # At its bound: a reply the model ran long on, which a re-ask may shorten.
    ({"max_tokens": 462}, 462.0, "length", False),
    ({"max_tokens": 462}, 8.0, "stop", False),
    ({"max_tokens": 462}, None, "length", False),
    ({}, 8.0, "length", False),
    ({"max_tokens": True}, 0.0, "length", False),
])
def test_a_reply_the_window_cut_short_is_told_from_one_at_its_bound(
        params: dict[str, Any], completion: float | None, finish: str, cut: bool) -> None:
    reply = read_completion({"choices": [{"message": {"content": "{"}, "finish_reason": finish}],
                             "usage": {"prompt_tokens": 4088, "completion_tokens": completion}})
    found = window_full(params, reply)
    assert (found is not None) is cut
    if cut:
        assert found == ("input too large: the server stopped the reply at 8 of the 462 tokens "
                         "asked for, as the prompt (4,088 tokens) filled its context window")


def test_a_cut_reply_without_a_prompt_count_still_says_so() -> None:
    reply = read_completion({"choices": [{"message": {"content": "{"},
                                          "finish_reason": "length"}],
                             "usage": {"completion_tokens": 8}})
    assert window_full({"max_tokens": 462}, reply) == (
        "input too large: the server stopped the reply at 8 of the 462 tokens asked for, as "
        "the prompt filled its context window")

"""Prices, and the transport's pure parts: Retry-After, backoff, URLs, request keys, the
worst case a budget reserves."""

from __future__ import annotations

import base64
import http.server
import json
import random
import socket
import threading
import time
import urllib.error
from email.utils import formatdate
from typing import Any
from urllib.parse import quote

import pytest

from pytest_callqa.engine.core.urls import (
    redact_known,
    remember_secrets,
    safe_url,
    url_credentials,
    url_secrets,
    without_credentials,
)
from pytest_callqa.engine.llm.budget import (
    GENERATION_MAX_TOKENS,
    JUDGE_MAX_TOKENS,
    completion_bound,
    prompt_bound,
    worst_case,
)
from pytest_callqa.engine.llm.endpoint import CallError, Endpoint, ModelSpec, url_problem
from pytest_callqa.engine.llm.limits import Backoff, retry_after_seconds
from pytest_callqa.engine.llm.transport import ChatRequest
from pytest_callqa.engine.pricing import (
    DEFAULT_PRICES,
    ModelPrice,
    PriceError,
    PriceTable,
    parse_price_line,
)

from .helpers import SECRET


def test_default_prices_cover_common_models() -> None:
    table = PriceTable()
    assert table.get("gpt-4o-mini") == ModelPrice(0.15, 0.60)
    assert table.get("gpt-4o") == ModelPrice(2.50, 10.00)
    assert table.get("gpt-4.1") == ModelPrice(2.00, 8.00)
    assert table.get("gpt-4.1-mini") == ModelPrice(0.40, 1.60)
    assert table.is_default("gpt-4o")


def test_cost_is_per_million_tokens() -> None:
    assert PriceTable().cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert PriceTable().cost("gpt-4o", 2000, 500) == pytest.approx(0.01)


def test_unknown_model_has_no_cost_never_a_guess() -> None:
    table = PriceTable()
    assert table.cost("my-finetune", 100, 100) is None
    assert "my-finetune" not in table
    # No prefix matching either: gpt-4o-mini-tts is not gpt-4o-mini.
    assert table.get("gpt-4o-mini-tts") is None


def test_dated_snapshot_is_billed_as_its_alias() -> None:
    assert PriceTable().get("gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]


def test_price_lines_parse_and_override_defaults() -> None:
    table = PriceTable.parse("""
        # per million tokens
        gpt-4o-mini: 0.10 0.40
        llama3:8b: 0 0   # ollama tags contain colons
    """)
    assert table.get("gpt-4o-mini") == ModelPrice(0.10, 0.40)
    assert not table.is_default("gpt-4o-mini")
    assert table.cost("llama3:8b", 1000, 1000) == 0.0
    assert table.get("gpt-4o") == DEFAULT_PRICES["gpt-4o"]
    assert PriceTable.parse(["x: 1 2"], defaults=False).get("gpt-4o") is None


@pytest.mark.parametrize(("line", "message"), [
    ("gpt-4o 1 2", "expected 'model: <input> <output>'"),
    ("gpt-4o: 1", "expected two prices"),
    ("gpt-4o: one two", "must be numbers"),
    ("gpt-4o: -1 2", "non-negative"),
    ("gpt-4o: nan 2", "finite"),
])
def test_bad_price_lines_are_named(line: str, message: str) -> None:
    with pytest.raises(PriceError, match=message) as caught:
        parse_price_line(line)
    assert line.split(":")[0] in str(caught.value)


def test_prices_from_the_plugin_price_type() -> None:
    class PluginPrice:  # the shape of pytest_callqa.outputs.Price
        prompt_per_million = 1.0
        completion_per_million = 2.0

    assert PriceTable({"m": PluginPrice()}).get("m") == ModelPrice(1.0, 2.0)


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = time.time()
    in_ten = formatdate(now + 10, usegmt=True)
    assert retry_after_seconds({"retry-after": in_ten}, now=now) == pytest.approx(10, abs=1)
    assert retry_after_seconds({"retry-after": formatdate(now - 60, usegmt=True)}, now=now) == 0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "-5"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_grows_with_jitter_and_a_cap() -> None:
    backoff = Backoff(base_s=0.5, cap_s=4.0)
    rng = random.Random(3)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        delays = {backoff.delay(attempt, rng) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered


def test_credentials_are_stripped_from_urls() -> None:
    assert safe_url("https://u:p@host:8443/v1") == "https://host:8443/v1"
    assert safe_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    # Requests go to this URL too: an IPv6 host keeps its brackets, a password its '@'.
    assert safe_url("http://u:p@[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert safe_url("https://u:p@ss@Host.example/v1") == "https://Host.example/v1"
    # A URL urlsplit refuses is still shown (the run says it cannot be used), its
    # credentials blanked out: it raised, and ended a run that had scored something.
    assert safe_url("http://[::1/v1") == "http://[::1/v1"
    assert safe_url("http://u:SECRET@[::1/v1") == "http://<redacted>@[::1/v1"


@pytest.mark.parametrize(("url", "problem"), [
    ("https://api.openai.com/v1", None),
    ("http://user:pw@127.0.0.1:8000/v1/", None),
    ("http://[::1]:8000/v1", None),
    ("http://[::1/v1", "it cannot be parsed (Invalid IPv6 URL)"),
    ("http://127.0.0.1:80a0/v1", "it cannot be parsed (Port could not be cast to integer "
                                 "value as '80a0')"),
    ("http://127.0.0.1:99999/v1", "it cannot be parsed (Port out of range 0-65535)"),
    ("ftp://127.0.0.1/v1", "it is not an http:// or https:// URL"),
    ("127.0.0.1:8000/v1", "it is not an http:// or https:// URL"),
    ("http:///v1", "it names no host"),
    # urlsplit reads both as http URLs without a host: the missing slash is what is wrong.
    ("http:/u:LEAK@127.0.0.1:8000/v1", "it is not an http:// or https:// URL"),
    ("http:127.0.0.1:8000/v1", "it is not an http:// or https:// URL"),
    ("http://", "it names no host"),
    # urlsplit drops these without a word; the HTTP library refuses them.
    ("http://127.0.0.1:8000/v1\n", "it holds a space, a line break or another unprintable "
                                   "character"),
    ("http://u:p\tw@127.0.0.1:8000/v1", "it holds a space, a line break or another "
                                        "unprintable character"),
    ("http://1.2.3.999/v1", "its host is not a valid IPv4 address"),
    ("http://10.0.0.1/v1", None),
    # Requests append their path, so a query never reached the server as one; and the URL,
    # with its key, was shown in the header, the reports and the preflight's error.
    ("http://127.0.0.1:8000/v1?api_key=LEAK", "it has a '?' or '#' part, which requests to "
     "it cannot carry: give the key in OPENAI_API_KEY, and write a '#', '?' or '/' of a "
     "password as %23, %3F or %2F"),
    # A password's unencoded '#': urlsplit read "localhost:4242" as the host, and the rest
    # (the password) as a fragment shown wherever the URL was.
    ("http://localhost:4242#LEAK@127.0.0.1:8000/v1", "it has a '?' or '#' part, which "
     "requests to it cannot carry: give the key in OPENAI_API_KEY, and write a '#', '?' or "
     "'/' of a password as %23, %3F or %2F"),
    # urlsplit's own message would quote the part after the password's '/': not repeated.
    ("http://user:pw/LEAK@127.0.0.1:8000/v1", "it cannot be parsed (check its user:password@ "
                                              "part, host and port)"),
])
def test_a_base_url_that_cannot_reach_a_server_is_named_without_repeating_it(
        url: str, problem: str | None) -> None:
    assert url_problem(url) == problem


def test_an_unusable_base_url_is_refused_saying_where_it_came_from(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{SECRET}@[::1/v1")
    with pytest.raises(ValueError) as from_env:
        Endpoint("gpt-4o-mini")
    with pytest.raises(ValueError) as given:
        Endpoint("gpt-4o-mini", "ftp://127.0.0.1/v1")
    with pytest.raises(ValueError) as listed:
        ModelSpec.parse("candidate=m@http://[::1/v1")
    # With credentials in it, urlsplit's reason is not repeated (it may quote them).
    assert str(from_env.value) == ("OPENAI_BASE_URL of model 'gpt-4o-mini' is not usable: "
                                   "it cannot be parsed (check its user:password@ part, host "
                                   "and port)")
    assert str(given.value) == ("the base URL of model 'gpt-4o-mini' is not usable: it is "
                                "not an http:// or https:// URL")
    assert str(listed.value) == ("the base URL of model 'm' is not usable: it cannot be "
                                 "parsed (Invalid IPv6 URL)")


def test_a_urls_credentials_are_redacted_in_every_form_a_server_could_echo() -> None:
    url = "https://user:p%40ss@proxy.example/v1"
    token = base64.b64encode(b"user:p@ss").decode()
    assert url_credentials(url) == ("user", "p@ss")
    assert url_secrets(url) == sorted([token, "p%40ss", "p@ss"], key=len, reverse=True)
    # A user alone (a token in the user part) is the secret.
    assert url_secrets("https://sk-tok@proxy.example/v1")[-1] == "sk-tok"
    assert url_credentials("https://proxy.example/v1") is None
    assert url_secrets("https://proxy.example/v1") == []
    endpoint = Endpoint("gpt-4o-mini", url, SECRET)
    echoed = f"bad auth: Basic {token} for p%40ss (p@ss) with {SECRET}"
    assert endpoint.redact(echoed) == "bad auth: Basic <redacted> for <redacted> " \
                                      "(<redacted>) with <redacted>"
    assert "p%40ss" not in repr(endpoint.client_key)
    assert endpoint.client_key != Endpoint("gpt-4o-mini", "https://user:other@proxy.example/v1",
                                           SECRET).client_key


@pytest.mark.parametrize("password", ["pa\\ssw0rd-XYZ", 'pa"ssw0rd-XYZ', "pa/ss\\w0\"rd"])
def test_a_secret_a_json_reply_must_escape_is_redacted_as_the_reply_spells_it(
        password: str) -> None:
    # A backslash or a quote in a URL's password: a judge's JSON verdict spells it \\ or \",
    # the plain text was not found, and decoding the verdict restored the secret in its
    # reason (the cache entry, the judge records, the reports).
    url = f"http://u:{quote(password, safe='')}@127.0.0.1:9/v1"
    reply = json.dumps({"reason": f"the header said {password}"})
    assert password not in reply
    redacted = Endpoint("m", url, SECRET).redact(reply)
    assert json.loads(redacted) == {"reason": "the header said <redacted>"}


def test_a_known_secret_is_redacted_as_repr_shows_it() -> None:
    # pytest -l prints a frame's local variables as repr() does: a backslash doubled.
    remember_secrets(SECRET, "http://u:pa%5Cssw0rd-REPR@127.0.0.1:9/v1")
    shown = repr({"password": "pa\\ssw0rd-REPR"})
    assert "ssw0rd-REPR" not in redact_known(shown)


def test_the_preflight_is_authorised_as_the_chat_calls_will_be(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A gateway behind Basic authentication refused the preflight's bearer key, which the
    # chat calls never send to it: the run stopped on a check the calls would have passed.
    from pytest_callqa.engine.llm import preflight

    seen: list[tuple[str, str | None]] = []

    def refuse(request: Any, timeout: float) -> Any:
        seen.append((request.full_url, request.get_header("Authorization")))
        raise OSError("stop here")

    monkeypatch.setattr(preflight._OPENER, "open", refuse)
    token = base64.b64encode(b"user:p@ss").decode()
    preflight.check_endpoint(Endpoint("m", "https://user:p%40ss@gw.example/v1", SECRET))
    preflight.check_endpoint(Endpoint("m", "https://gw.example/v1", SECRET))
    assert seen == [("https://gw.example/v1/models", f"Basic {token}"),
                    ("https://gw.example/v1/models", f"Bearer {SECRET}")]


def test_a_model_spec_never_shows_its_urls_credentials() -> None:
    spec = ModelSpec.parse("fast=gpt-4o@HTTPS://user:pw-LEAK@proxy.example/v1")
    assert (spec.model, spec.base_url) == ("gpt-4o", "HTTPS://user:pw-LEAK@proxy.example/v1")
    assert "pw-LEAK" not in repr(spec)
    with pytest.raises(ValueError) as nameless:
        ModelSpec.parse("fast=@http://user:pw/LEAK@127.0.0.1:8000/v1")
    assert "LEAK" not in str(nameless.value) and "names no model" in str(nameless.value)
    assert without_credentials("a http://u:p@h/v1 b HTTPS://x@y c") == \
        "a http://<redacted>@h/v1 b HTTPS://<redacted>@y c"


@pytest.mark.parametrize(("spec", "message"), [
    # Before, each joined the model id (sent, shown and cached with its credentials).
    (f"live=gpt-4o-mini@http:/alice:{SECRET}@127.0.0.1:34101/v1",
     "the base URL of model 'gpt-4o-mini' is not usable: it is not an http:// or https:// URL"),
    (f"gpt-4o-mini@htps://alice:{SECRET}@127.0.0.1/v1",
     "the base URL of model 'gpt-4o-mini' is not usable: it is not an http:// or https:// URL"),
    (f"live=gpt-4o-mini@http//alice:{SECRET}@127.0.0.1/v1",
     "the base URL of model 'gpt-4o-mini' is not usable: it is not an http:// or https:// URL"),
    (f"live=gpt-4o-mini@alice:{SECRET}@127.0.0.1/v1",
     "the base URL of model 'gpt-4o-mini' is not usable: it is not an http:// or https:// URL"),
    (f"live=gpt-4o-mini@ https://alice:{SECRET}@127.0.0.1/v1",
     "the base URL of model 'gpt-4o-mini' is not usable: it holds a space, a line break or "
     "another unprintable character"),
    (f"claude@2024-10@htps://alice:{SECRET}@127.0.0.1/v1",
     "the base URL of model 'claude@2024-10' is not usable: it is not an http:// or https:// "
     "URL"),
    (f"live=http://alice:{SECRET}@127.0.0.1/v1",
     "a model spec has a URL where its name or model id goes; expected "
     "'name=model@base_url' (name and @base_url optional)"),
    (f"live=@htps://alice:{SECRET}@127.0.0.1/v1",
     "model spec 'live=@<base URL>' names no model; expected 'name=model@base_url' (name and "
     "@base_url optional)"),
])
def test_a_mistyped_url_in_a_model_spec_is_refused_without_repeating_it(
        spec: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        ModelSpec.parse(spec)
    assert str(refused.value) == message


def test_a_model_id_holding_a_colon_and_an_at_keeps_its_well_formed_url() -> None:
    # A digest-pinned id was split at its own "sha256:abc@", read as a mistyped URL's
    # user:password, and refused.
    spec = ModelSpec.parse("m=qwen@sha256:abc@http://localhost:11434/v1")
    assert (spec.name, spec.model, spec.base_url) == (
        "m", "qwen@sha256:abc", "http://localhost:11434/v1")
    # A mistyped URL before a well-formed one is still refused: its credentials would have
    # joined the model id (a first version of the rule above let them).
    for typo in ("//user:", "user:"):
        with pytest.raises(ValueError) as refused:
            ModelSpec.parse(f"m=gpt-4o@{typo}{SECRET}@https://api.example.com/v1")
        assert SECRET not in str(refused.value)
        assert "the base URL of model 'gpt-4o' is not usable" in str(refused.value)


@pytest.mark.parametrize("key", [f"{SECRET}\n", f" {SECRET}", f"{SECRET[:5]}\t{SECRET[5:]}"])
def test_a_key_no_http_header_can_carry_is_refused_without_repeating_it(
        monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    # A CI secret pasted with its line break: the HTTP library's error quoted the header,
    # key and all, in every test's error (and an INTERNALERROR under xdist).
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(ValueError) as from_env:
        Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError) as given:
        Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1", key)
    assert str(from_env.value).startswith("OPENAI_API_KEY of model 'gpt-4o-mini' is not "
                                          "usable: it has a line break")
    assert str(given.value).startswith("the API key of model 'gpt-4o-mini' is not usable")
    assert SECRET[5:] not in str(from_env.value) + str(given.value)


@pytest.mark.parametrize("key", [f"{SECRET}\u2019", f"{SECRET[:5]}\u00e9{SECRET[5:]}"])
def test_a_key_outside_ascii_is_refused_without_repeating_it(
        monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    # A key pasted from a document with its typographic quote: the HTTP library's
    # UnicodeEncodeError was a traceback in every test (an INTERNALERROR under xdist).
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(ValueError) as from_env:
        Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1")
    assert str(from_env.value).startswith("OPENAI_API_KEY of model 'gpt-4o-mini' is not "
                                          "usable: it has a character outside ASCII")
    assert SECRET[5:] not in str(from_env.value)


def test_the_preflight_sends_a_path_outside_ascii_percent_encoded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As the chat calls' HTTP library sends it; urllib raised UnicodeEncodeError, a
    # traceback in every test.
    from pytest_callqa.engine.llm import preflight

    seen: list[str] = []

    def listing(request: Any, timeout: float) -> Any:
        seen.append(request.full_url)
        raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, None)

    monkeypatch.setattr(preflight._OPENER, "open", listing)
    assert preflight.check_endpoint(Endpoint("m", "https://gw.example/v\u00e91", SECRET)) is None
    assert seen == ["https://gw.example/v%C3%A91/models"]


def test_a_request_urllib_cannot_encode_is_a_preflight_problem_not_a_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_callqa.engine.llm import preflight

    def unencodable(request: Any, timeout: float) -> Any:
        raise UnicodeEncodeError("latin-1", "\u2019", 0, 1, "ordinal not in range(256)")

    monkeypatch.setattr(preflight._OPENER, "open", unencodable)
    problem = preflight.check_endpoint(Endpoint("m", "https://gw.example/v1", SECRET))
    assert problem is not None and problem.startswith(
        "the judge endpoint https://gw.example/v1 (model 'm') cannot be reached "
        "(UnicodeEncodeError: ")


def test_a_short_secret_is_cut_out_of_a_message_only_where_it_stands_alone() -> None:
    # Before: the placeholder key "x" cut every x out of a judge error ("ma<redacted>imum").
    placeholder = Endpoint("m", "http://127.0.0.1:9/v1", "x")
    assert placeholder.redact("maximum context exceeded; key x refused (\\u0078)") == \
        "maximum context exceeded; key <redacted> refused (<redacted>)"
    # A short password still goes wherever it is itself, not inside the words holding it.
    short = Endpoint("m", "http://bob:pw@127.0.0.1:9/v1", SECRET)
    assert short.redact("pwd: http://bob:pw@host, 'pw'") == \
        "pwd: http://bob:<redacted>@host, '<redacted>'"
    assert short.redact(f"{SECRET} and {SECRET}x") == "<redacted> and <redacted>x"


def test_a_key_echoed_with_its_middle_starred_out_is_redacted() -> None:
    # OpenAI's 401 shows the key's first 8 and last 4 characters: both were kept.
    endpoint = Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1", SECRET)
    masked = f"{SECRET[:8]}{'*' * 10}{SECRET[-4:]}"
    assert endpoint.redact(f"Incorrect API key provided: {masked}. See the docs.") == \
        "Incorrect API key provided: <redacted>. See the docs."
    assert endpoint.redact(f"key=({masked})") == "key=(<redacted>)"
    # Starred words of a reply are left alone: a key's start alone ("s***", every OpenAI
    # key's) or an end of under four characters shows no key.
    for text in ("rated ***** by x***y", "what the s*** is this?", "Rating: ***9 of 10",
                 f"{SECRET[:3]}***{SECRET[-3:]}"):
        assert endpoint.redact(text) == text
    # Bounded: a long word before stars is not tried from each of its characters.
    started = time.perf_counter()
    endpoint.redact_reply("x" * 40_000 + " ***" + "y" * 40_000 + "***z")
    assert time.perf_counter() - started < 0.5


def test_a_client_the_http_library_cannot_make_is_the_tools_error_without_the_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ALL_PROXY=socks5://... without socksio: the raw ImportError went up through frames
    # whose local variables (shown by -l or --tb=long) held the key and its header.
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1")
    endpoint = Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1", SECRET)
    with pytest.raises(CallError) as info:
        endpoint.client(1.0)
    assert str(info.value).startswith("no HTTP client for http://127.0.0.1:9/v1 could be "
                                      "made (ImportError: ")
    assert info.value.__suppress_context__ and info.value.__traceback__ is not None
    assert SECRET not in str(info.value)


def test_the_key_is_not_part_of_cache_keys_or_reprs() -> None:
    endpoint = Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1", SECRET)
    assert SECRET not in repr(endpoint)
    assert endpoint.redact(f"bad key {SECRET}!") == "bad key <redacted>!"
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}])
    # Another API key, or other credentials in the URL, reach the same server: same key.
    assert request.key(endpoint) == request.key(
        Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1", "another-key"))
    assert request.key(Endpoint("gpt-4o-mini", "https://u:pw@proxy.example/v1")) == \
        request.key(Endpoint("gpt-4o-mini", "https://v:other@proxy.example/v1/"))


def test_the_cache_key_covers_endpoint_model_prompt_params_and_version() -> None:
    endpoint = Endpoint("gpt-4o-mini", "http://127.0.0.1:9/v1")
    base = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                       params={"temperature": 0}, version="1")
    key = base.key(endpoint)
    variants = {
        "base URL": base.key(Endpoint("gpt-4o-mini", "http://127.0.0.1:10/v1")),
        "model": base.key(Endpoint("gpt-4o", "http://127.0.0.1:9/v1")),
        "messages": ChatRequest(messages=[{"role": "user", "content": "hi!"}],
                                params={"temperature": 0}, version="1").key(endpoint),
        "parameters": ChatRequest(messages=base.messages, params={"temperature": 0.5},
                                  version="1").key(endpoint),
        "response format": ChatRequest(
            messages=base.messages, version="1",
            params={"temperature": 0, "response_format": {"type": "json_object"}},
        ).key(endpoint),
        "prompt version": ChatRequest(messages=base.messages, params={"temperature": 0},
                                      version="2").key(endpoint),
    }
    for what, other in variants.items():
        assert other != key, what
    assert len(set(variants.values())) == len(variants)


def test_a_request_without_a_completion_bound_gets_one_for_the_budget() -> None:
    assert completion_bound("gpt-4o-mini", "judge", {"temperature": 0}) == (
        {"temperature": 0, "max_tokens": JUDGE_MAX_TOKENS}, JUDGE_MAX_TOKENS)
    assert completion_bound("llama3:8b", "generate", {})[0] == {
        "max_tokens": GENERATION_MAX_TOKENS}
    # OpenAI's reasoning models only accept max_completion_tokens.
    assert completion_bound("o3-mini", "judge", {})[0] == {
        "max_completion_tokens": JUDGE_MAX_TOKENS}
    # The request's own bound is kept, whichever name it uses.
    assert completion_bound("gpt-4o", "judge", {"max_tokens": 300}) == (
        {"max_tokens": 300}, 300)
    assert completion_bound("o4-mini", "judge", {"max_completion_tokens": 900})[1] == 900
    with pytest.raises(CallError, match="max_tokens must be a whole number >= 1, got 'many'"):
        completion_bound("gpt-4o", "judge", {"max_tokens": "many"})


def test_the_prompt_bound_never_undercounts() -> None:
    # One token covers at least one byte; text that is not English takes several bytes per
    # character (and often a token or more per character), which characters/4 would miss.
    japanese = {"model": "m", "messages": [{"role": "user", "content": "請求が二重です。" * 50}]}
    assert prompt_bound(japanese) >= 3 * 8 * 50
    english = {"model": "m", "messages": [{"role": "user", "content": "charged twice " * 50}]}
    assert prompt_bound(english) >= len("charged twice " * 50)
    table = PriceTable({"m": (2.0, 8.0)})
    assert worst_case(table, "m", english, 100) == pytest.approx(
        (prompt_bound(english) * 2.0 + 100 * 8.0) / 1_000_000)
    with pytest.raises(CallError, match="no price"):
        worst_case(table, "unpriced", english, 100)


def test_environment_supplies_url_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    endpoint = Endpoint("gpt-4o-mini")
    assert endpoint.base_url == "http://127.0.0.1:9/v1"
    assert endpoint.redact(SECRET) == "<redacted>"  # the key came from the environment
    assert SECRET not in repr(endpoint.client_key)


def _listing_server(seen: list[tuple[int, str, str | None]],
                    redirect_to: str | None = None) -> http.server.ThreadingHTTPServer:
    """Answers ``GET /v1/models`` with a listing of model ``m`` — or, given ``redirect_to``
    (a path or URL), ``GET /v1/models`` with a 302 there and anything else with the
    listing — recording each request's port, path and Authorization header."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.server.server_address[1], self.path,
                         self.headers.get("Authorization")))
            if redirect_to is not None and self.path == "/v1/models":
                self.send_response(302)
                self.send_header("location", redirect_to)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            body = b'{"data": [{"id": "m"}]}'
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_preflight_keeps_the_key_from_a_redirect_to_another_origin() -> None:
    # urllib copies every header on a redirect: a server answering /models with a redirect
    # elsewhere was handed the key.
    from pytest_callqa.engine.llm import preflight

    seen: list[tuple[int, str, str | None]] = []
    elsewhere = _listing_server(seen)
    other = f"http://localhost:{elsewhere.server_address[1]}/v1/models"
    servers = [elsewhere, _listing_server(seen, other), _listing_server(seen, "/v2/models")]
    try:
        for origin in servers[1:]:
            base = f"http://127.0.0.1:{origin.server_address[1]}/v1"
            assert preflight.check_endpoint(Endpoint("m", base, SECRET)) is None
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    ports = [s.server_address[1] for s in servers]
    assert seen == [(ports[1], "/v1/models", f"Bearer {SECRET}"),
                    (ports[0], "/v1/models", None),
                    (ports[2], "/v1/models", f"Bearer {SECRET}"),
                    (ports[2], "/v2/models", f"Bearer {SECRET}")]


def test_a_model_listing_nested_past_pythons_limit_is_no_listing() -> None:
    from pytest_callqa.engine.llm import preflight

    assert preflight._listed(b"[" * 100_000 + b"]" * 100_000) == []


def test_a_live_models_preflight_names_where_its_url_was_set() -> None:
    # It named the judge's option, which has nothing to do with a live model's URL.
    from pytest_callqa.engine.llm import preflight

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    problem = preflight.check_endpoint(Endpoint("m", f"http://127.0.0.1:{port}/v1", SECRET),
                                       what="live model 'cand'", timeout=2.0)
    assert problem is not None and problem.startswith(
        f"the live model 'cand' endpoint http://127.0.0.1:{port}/v1 (model 'm') cannot be "
        "reached (URLError: ")
    assert problem.endswith(
        "check its callqa_models entry (name=model@URL; OPENAI_BASE_URL when it names none) "
        "and that the server is running")
    keyless = preflight.check_endpoint(Endpoint("m", "https://api.openai.com/v1", ""),
                                       what="live model 'cand'")
    assert keyless == (
        "the live model 'cand' endpoint https://api.openai.com/v1 (model 'm') needs an API key "
        "and none is set: export OPENAI_API_KEY, or point the run at another server with its "
        "callqa_models entry (name=model@URL; OPENAI_BASE_URL when it names none)")

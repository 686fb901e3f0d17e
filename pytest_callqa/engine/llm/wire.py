"""One chat completion over HTTP: a POST of a JSON body to an OpenAI-compatible
``/chat/completions``, answered by the parsed JSON reply or by one of three errors.

The calls go through ``httpx2``, the HTTP library the ``openai`` package itself sends with,
rather than through the ``openai`` client: importing that package builds a typed model of
every part of OpenAI's API (0.7-0.8 s of CPU on the 2-core machine of docs/performance.md,
~0.1 s for httpx2 alone), and that import stood between every cold run's start, in one
process and in each xdist worker, and its first request. The judge and the generator need
one endpoint and a JSON reply. What the ``openai`` client did that matters to them is kept:
the key as a bearer token, ``OPENAI_ORG_ID`` and ``OPENAI_PROJECT_ID`` as its headers, the
environment's proxies, redirects followed, a pool far larger than any concurrency limit,
one timeout for each phase of a request and one for the whole reply, and no retries of its
own (transport.py has them).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._version import __version__
from ..core.numbers import finite_number
from ..core.urls import authorization, safe_url
from .limits import refused_as_invalid
from .windows import count_tokens

if TYPE_CHECKING:
    import httpx2

_PATH = "chat/completions"


class StatusError(Exception):
    """The server answered with an error status; ``message`` is what it said."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.headers = headers


class RequestTimeout(Exception):
    """No complete reply within the timeout."""


class ConnectionFailed(Exception):
    """The request could not be sent or its reply not received whole; ``cause`` names how
    (the HTTP library's exception class: ``ConnectError``, ``TooManyRedirects``...)."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class ChatClient:
    """The HTTP connections to one endpoint with one key. Close it in the event loop that
    used it."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        # Loaded with the first client, so a run answered from the cache never loads it.
        import httpx2

        # A URL's credentials go as HTTP Basic authentication in place of the key, as httpx2
        # would send them from the URL itself; the client is given the URL without them, as
        # httpx2 logs each request's URL.
        headers = {"Authorization": authorization(base_url, api_key),
                   "User-Agent": f"pytest-callqa/{__version__}"}
        for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"),
                                 ("OPENAI_PROJECT_ID", "OpenAI-Project")):
            value = os.environ.get(variable)
            if value:
                headers[header] = value
        # The trailing slash makes the request path relative to the whole base URL
        # (``.../v1`` + ``chat/completions``), as the openai client joins them.
        self._http: httpx2.AsyncClient = httpx2.AsyncClient(
            base_url=safe_url(base_url).rstrip("/") + "/", headers=headers, timeout=timeout,
            follow_redirects=True,
            limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=100),
        )
        self._timeout_error = httpx2.TimeoutException
        self._deadline = timeout
        # Every failure of the request itself, not only the transport's: a redirect loop or
        # a body that cannot be decoded is as much a failed call as a refused connection.
        self._request_error = httpx2.RequestError

    async def complete(self, body: Mapping[str, Any]) -> Any:
        """The reply's parsed JSON. Raises :class:`StatusError`, :class:`RequestTimeout`,
        :class:`ConnectionFailed`, or :class:`ValueError` for a reply that is not JSON (a
        proxy's error page served with status 200)."""
        try:
            # The client's timeout bounds each read, not the whole reply: a server trickling
            # its body a byte at a time kept the call open without end.
            async with asyncio.timeout(self._deadline):
                response = await self._http.post(_PATH, json=body)
        except (self._timeout_error, TimeoutError):
            raise RequestTimeout() from None
        except self._request_error as exc:
            raise ConnectionFailed(type(exc).__name__) from None
        if response.status_code >= 400:
            raise StatusError(response.status_code, error_message(response.text,
                                                                   response.reason_phrase),
                              response.headers)
        try:
            return response.json()
        except RecursionError:
            # Valid JSON nested past Python's recursion limit: as unreadable as any other.
            raise ValueError("JSON nested deeper than Python reads") from None

    async def close(self) -> None:
        await self._http.aclose()


def error_message(text: str, reason: str) -> str:
    """What an error reply says: its ``error.message`` (OpenAI's shape, which vLLM, Ollama
    and llama.cpp follow), else its ``error`` or ``detail`` when that is text, else the whole
    body, else the status's reason phrase."""
    body = text.strip()
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return body or reason
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("error", "detail"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
    return body


@dataclass
class Reply:
    """What transport.py reads of a completion: its content, token counts (None: unknown) and
    finish reason, and the cost it works out."""

    content: str
    prompt_tokens: float | None
    completion_tokens: float | None
    cost: float | None
    finish_reason: str | None


def read_completion(completion: Any) -> Reply:
    """Content, token counts and finish reason of a completion's JSON, whatever the server
    left out or sent in the wrong shape. A first choice with no message content is an empty
    answer (a refusal, a content filter: the model's own); content sent as a list of text
    parts, as some gateways send it, is their texts joined. JSON with no choice holding a
    message is no answer at all — an error object or an empty list a gateway served with
    status 200 —, nor is content of any other shape, and either raises ValueError saying
    so."""
    usage = _field(completion, "usage")
    choices = _field(completion, "choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = _field(first, "message")
    if not isinstance(message, dict):
        error = _field(completion, "error")
        said = _field(error, "message") if isinstance(error, dict) else error
        raise ValueError("the reply holds no completion" +
                         (f": {said}" if isinstance(said, str) and said else ""))
    finish = _field(first, "finish_reason")
    return Reply(content=_content_text(message.get("content")),
                 prompt_tokens=_token_count(_field(usage, "prompt_tokens")),
                 completion_tokens=_token_count(_field(usage, "completion_tokens")),
                 cost=None, finish_reason=finish if isinstance(finish, str) else None)


def window_full(params: Mapping[str, Any], reply: Reply) -> str | None:
    """Why a reply cut short is no answer at all: it stopped (``finish_reason: length``)
    before the completion bound the call asked for, which a server such as llama.cpp's does
    when the prompt leaves too little of its context window — the reply holds a few tokens
    of the verdict, and a re-ask, which adds the reply and a message to the prompt, can only
    overflow. None when the reply stopped at the bound, or the counts are unknown."""
    asked = params.get("max_tokens", params.get("max_completion_tokens"))
    got = reply.completion_tokens
    if reply.finish_reason != "length" or isinstance(asked, bool) or not isinstance(
            asked, int) or got is None or got >= asked:
        return None
    prompt = "" if reply.prompt_tokens is None else f" ({reply.prompt_tokens:,.0f} tokens)"
    return (f"input too large: the server stopped the reply at {got:,.0f} of the {asked:,} "
            f"tokens asked for, as the prompt{prompt} filled its context window")


# llama-cpp-python (0.3.36) fails a generation that reaches the end of its context window
# with HTTP 500 and numpy's error on storing the next token's logits in a row past the
# window's last: nothing but a shorter prompt changes that, and each retry costs another
# generation up to the window's end (minutes on a CPU).
_WINDOW_OVERFLOW = re.compile(r"could not broadcast input array from shape \(\d+,\) into "
                              r"shape \(0,\)")


def settled_status(status: int, message: str, detail: str,
                   messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Why an error status is a call's answer for good, not retried (None: it is not):
    a server's refusal of the ``response_format`` dressed as a server error, or a reply that
    overflowed the window, as :func:`window_full` reads a cut one. ``message`` is the
    server's, ``detail`` what may be shown of it."""
    if refused_as_invalid(status, message):
        return f"HTTP {status}: response_format refused: {detail}"
    if status != 500 or not _WINDOW_OVERFLOW.search(message):
        return None
    # The server counted the prompt but says nothing of it: the size guard's estimate.
    tokens, _ = count_tokens(messages, estimate=True)
    return (f"input too large: the server failed the reply (HTTP {status}: {detail}) when "
            f"the prompt (about {tokens:,} tokens, estimated) and the reply filled its "
            "context window")


def _token_count(value: Any) -> float | None:
    """A token count as the server gave it, or None (unknown: the call is settled at its worst
    case) when it is none — a negative or non-finite count made the spend negative or NaN and
    let a budget be passed many times over; ``true`` is no count either."""
    if not finite_number(value):
        return None
    count = float(value)
    return count if count >= 0 else None


def _content_text(content: Any) -> str:
    """The text of a message's content. Content of a shape not known here was read as an
    empty answer, scored as the model's failure and cached: it is no answer at all."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
            _field(part, "type") == "text" and isinstance(_field(part, "text"), str)
            for part in content):
        return "".join(part["text"] for part in content)
    raise ValueError("the reply's content is neither text nor a list of text parts")


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else None

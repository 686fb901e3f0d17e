"""Structured replies: ask a server for JSON that follows a schema, and step down to what it
supports.

``json_schema`` (the reply must validate against the schema the caller gives) is what
OpenAI, vLLM, Ollama and recent llama.cpp servers honour; an older or stricter server refuses
it, usually with HTTP 400 naming ``response_format``. In ``auto`` mode such a refusal steps
that endpoint down to ``json_object`` (any JSON object), then to ``none`` (the prompt alone),
and the step is remembered for the rest of the session, so only the first calls pay for it.
Replies are validated by their callers whatever the format.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..core.defaults import DEFAULT_RESPONSE_FORMAT, RESPONSE_FORMATS
from .endpoint import Endpoint
from .transport import ChatOutcome, ChatRequest, ChatRunner, Check

# The order ``auto`` tries them in.
_LADDER: tuple[str, ...] = ("json_schema", "json_object", "none")
# An error that names the response format (or its schema): the server refused the format,
# not the request. Servers say it in many ways; all of them name one of these.
_REFUSAL = re.compile(r"response_format|json_schema|json_object|response format|schema",
                      re.IGNORECASE)
_REFUSAL_STATUS = re.compile(r"HTTP (400|415|422|500|501)\b")


def response_format_param(fmt: str, name: str, schema: Mapping[str, Any], *,
                          strict: bool) -> dict[str, Any] | None:
    """The ``response_format`` request parameter of ``fmt`` (None: send none)."""
    if fmt == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": name, "strict": strict, "schema": dict(schema)}}
    if fmt == "json_object":
        return {"type": "json_object"}
    return None


def refused_param(error: str | None, name: str) -> bool:
    """Whether a failed call's error says the server refused request parameter ``name``."""
    return error is not None and bool(_REFUSAL_STATUS.search(error)) and name in error


def refused_format(error: str | None) -> bool:
    """Whether a failed call's error says the server refused the response format."""
    return error is not None and bool(_REFUSAL_STATUS.search(error)) \
        and bool(_REFUSAL.search(error))


class FormatLadder:
    """The response format each endpoint gets, stepped down on a refusal (``auto``) or fixed
    (any other choice)."""

    def __init__(self, choice: str = DEFAULT_RESPONSE_FORMAT) -> None:
        if choice not in RESPONSE_FORMATS:
            raise ValueError(f"response format must be one of {', '.join(RESPONSE_FORMATS)}, "
                             f"got {choice!r}")
        self.choice = choice
        self._current: dict[tuple[str, str], str] = {}
        # Endpoints whose format a first call has settled; until then their calls go one at a
        # time, so a refusal is met once rather than by every call already queued.
        self._confirmed: set[tuple[str, str]] = set()
        self._probes: dict[tuple[str, str], asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # Endpoints that refused a ``seed`` parameter: it is left out of their requests.
        self._seedless: set[tuple[str, str]] = set()

    def current(self, endpoint: Endpoint) -> str:
        if self.choice != "auto":
            return self.choice
        return self._current.get((endpoint.base_url, endpoint.model), _LADDER[0])

    def step_down(self, endpoint: Endpoint, refused: str) -> bool:
        """After ``refused`` was refused: whether there is a lower format to try."""
        if self.choice != "auto" or refused == _LADDER[-1]:
            return False
        key = (endpoint.base_url, endpoint.model)
        lower = _LADDER[_LADDER.index(refused) + 1]
        # Concurrent calls refused together step down once; a call that used an older
        # format simply retries with the current one.
        if _LADDER.index(self._current.get(key, _LADDER[0])) < _LADDER.index(lower):
            self._current[key] = lower
        return True

    def seedless(self, endpoint: Endpoint) -> bool:
        return (endpoint.base_url, endpoint.model) in self._seedless

    def drop_seed(self, endpoint: Endpoint) -> None:
        self._seedless.add((endpoint.base_url, endpoint.model))

    def confirmed(self, endpoint: Endpoint) -> bool:
        return self.choice != "auto" or (endpoint.base_url, endpoint.model) in self._confirmed

    def confirm(self, endpoint: Endpoint) -> None:
        self._confirmed.add((endpoint.base_url, endpoint.model))

    def probe(self, endpoint: Endpoint) -> asyncio.Lock:
        """The lock the calls of an unconfirmed endpoint take in turn (one per event loop:
        each batch runs on a loop of its own)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._probes = loop, {}
        return self._probes.setdefault((endpoint.base_url, endpoint.model), asyncio.Lock())

    def formats(self) -> dict[str, str]:
        """The format each endpoint ended on (``auto`` mode), for the report."""
        return {f"{model} at {url}": fmt for (url, model), fmt in self._current.items()}


async def call_structured(
    runner: ChatRunner, endpoint: Endpoint, ladder: FormatLadder,
    build: Callable[[str], ChatRequest], check: Check | None = None,
) -> ChatOutcome:
    """One call, its request built for the endpoint's current format; a refusal of that
    format steps down and asks again. Until a first call has settled an endpoint's format its
    calls go one at a time (a single round trip, once per session)."""
    if not ladder.confirmed(endpoint):
        async with ladder.probe(endpoint):
            if not ladder.confirmed(endpoint):
                return await _call_stepping_down(runner, endpoint, ladder, build, check)
    return await _call_stepping_down(runner, endpoint, ladder, build, check)


async def _call_stepping_down(
    runner: ChatRunner, endpoint: Endpoint, ladder: FormatLadder,
    build: Callable[[str], ChatRequest], check: Check | None,
) -> ChatOutcome:
    while True:
        fmt = ladder.current(endpoint)
        request = build(fmt)
        if ladder.seedless(endpoint) and "seed" in request.params:
            request = dataclasses.replace(
                request, params={k: v for k, v in request.params.items() if k != "seed"})
        outcome: ChatOutcome = await runner.call(endpoint, request, check)
        if outcome.content is None and "seed" in request.params \
                and refused_param(outcome.error, "seed"):
            # A server without seeds answers the same request without one.
            ladder.drop_seed(endpoint)
            continue
        if outcome.content is None and refused_format(outcome.error) \
                and ladder.step_down(endpoint, fmt):
            continue
        # Whatever else happened (a reply, or a failure that is not the format's), the format
        # question is settled: the endpoint's calls need not wait for one another any more.
        ladder.confirm(endpoint)
        return outcome

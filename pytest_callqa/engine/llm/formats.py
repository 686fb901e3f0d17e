"""Structured replies: ask a server for JSON that follows a schema, and step down to what it
supports; and how many tokens such a reply can need.

``json_schema`` (the reply must validate against the schema the caller gives) is what
OpenAI, vLLM, Ollama and llama.cpp's own C++ server honour. llama-cpp-python's server refuses
it — with HTTP 500 and a validation error naming ``response_format``, not a 400 — but takes
``{"type": "json_object", "schema": ...}`` (``json_object_schema`` here) and turns the schema
into a grammar, so every reply parses. Other servers know only ``json_object`` (any JSON
object), or nothing. In ``auto`` mode a refusal steps that endpoint down this ladder —
``json_schema``, ``json_object_schema``, ``json_object``, ``none`` (the prompt alone) — and the
step is remembered for the rest of the session, so only the first calls pay for it, and in
the cache directory, so a later run asks in the settled format from its first call and finds
its replies in the cache (their keys hold the format). Replies are validated by their
callers whatever the format.

Every call carries ``max_tokens`` (:func:`schema_tokens`): what the reply schema can need,
with an allowance per free-text field, so a reply cannot run on for thousands of tokens; the
budget reserves exactly that bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.defaults import DEFAULT_RESPONSE_FORMAT, RESPONSE_FORMATS
from .cache import JudgeCache
from .endpoint import Endpoint
from .transport import ChatOutcome, ChatRequest, ChatRunner, Check

# The order ``auto`` tries them in.
_LADDER: tuple[str, ...] = ("json_schema", "json_object_schema", "json_object", "none")
# An error that names the response format (or its schema): the server refused the format,
# not the request. Servers say it in many ways; all of them name one of these.
_REFUSAL = re.compile(r"response_format|json_schema|json_object|response format|schema",
                      re.IGNORECASE)
_REFUSAL_STATUS = re.compile(r"HTTP (400|415|422|500|501)\b")
# Where the cache directory keeps what each endpoint settled on: a file per endpoint.
SETTLED_FOLDER = "formats"

# What a reply may spend on each part of its JSON. A free-text field (a reason of one or two
# sentences, what was read in the output) gets a generous allowance; under
# ``json_object_schema`` the server's grammar also caps its length at TEXT_MAX_CHARS, which
# English fills in about a quarter as many tokens.
TEXT_FIELD_TOKENS = 120
TEXT_MAX_CHARS = 3 * TEXT_FIELD_TOKENS
SCALAR_TOKENS = 6
# A number bounded on both sides is offered to a grammar in this many steps: 0.01 on 0–1,
# so every band edge of a 0–1 metric can be answered (on steps of 0.05, fabrication-free
# "acceptable 0.98" and critical facts "acceptable 0.97" could not, and 1 drift in 40 facts
# was 1.0 or 0.95, a blocker). 101 values is a grammar alternation llama.cpp takes readily.
RANGE_STEPS = 100
# Items counted for an array whose length the schema leaves open.
ARRAY_ITEMS = 8
# Braces, commas and whitespace a model writes around the structure.
REPLY_SLACK_TOKENS = 32


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return [str(k) for k in kind]
    return [str(kind)] if kind is not None else []


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return target if isinstance(target, Mapping) else {}
    return schema


def schema_tokens(schema: Mapping[str, Any], *, array_items: int = ARRAY_ITEMS,
                  _root: Mapping[str, Any] | None = None, _depth: int = 0) -> int:
    """The most tokens a reply following ``schema`` is expected to need: every key written
    out, each free-text value :data:`TEXT_FIELD_TOKENS`, each number or enum value
    :data:`SCALAR_TOKENS`, an open array ``array_items`` items long."""
    root = _root if _root is not None else schema
    schema = _resolve(schema, root)
    if _depth > 20:
        return SCALAR_TOKENS  # a recursive schema: count no deeper
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return max(schema_tokens(o, array_items=array_items, _root=root, _depth=_depth + 1)
                   for o in options if isinstance(o, Mapping))
    types = _types(schema)
    properties = schema.get("properties")
    if "object" in types or isinstance(properties, Mapping):
        fields = properties if isinstance(properties, Mapping) else {}
        # A key costs its quoted name, the colon and the comma.
        return 2 + sum(len(name) // 2 + 4 + schema_tokens(
            sub, array_items=array_items, _root=root, _depth=_depth + 1)
            for name, sub in fields.items() if isinstance(sub, Mapping))
    if "array" in types:
        items = schema.get("items")
        each = schema_tokens(items, array_items=array_items, _root=root, _depth=_depth + 1) \
            if isinstance(items, Mapping) else SCALAR_TOKENS
        return 2 + array_items * (each + 1)
    if "string" in types and "enum" not in schema:
        return TEXT_FIELD_TOKENS
    return SCALAR_TOKENS


# The most any call asks for: the output limit of the smallest common chat models (a larger
# ``max_tokens`` is refused by them).
MAX_REPLY_TOKENS = 4096


def reply_max_tokens(schema: Mapping[str, Any], *, array_items: int = ARRAY_ITEMS,
                     extra: int = 0) -> int:
    """``max_tokens`` for a reply following ``schema`` (plus ``extra`` tokens of content
    that grows with the input), at most :data:`MAX_REPLY_TOKENS`."""
    needed = schema_tokens(schema, array_items=array_items) + REPLY_SLACK_TOKENS + extra
    return min(needed, MAX_REPLY_TOKENS)


def _steps(low: Any, high: Any) -> list[float] | None:
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high))
    if not numeric or not low < high:
        return None
    return [round(low + (high - low) * i / RANGE_STEPS, 6) for i in range(RANGE_STEPS + 1)]


def with_text_limits(schema: Mapping[str, Any],
                     max_chars: int = TEXT_MAX_CHARS) -> dict[str, Any]:
    """``schema`` as a grammar can hold it, for a server that turns the schema into one
    (llama.cpp): ``maxLength`` on every free-text string, and a number bounded on both sides
    offered as :data:`RANGE_STEPS` + 1 evenly spaced values — llama.cpp's grammars keep
    ``enum`` but not ``minimum``/``maximum``, and a score off its scale costs a re-ask."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, Mapping):
            return node
        copy = {key: walk(value) for key, value in node.items()}
        types = _types(node)
        if "string" in types and "enum" not in node and "maxLength" not in node:
            copy["maxLength"] = max_chars
        steps = _steps(node.get("minimum"), node.get("maximum"))
        if types == ["number"] and "enum" not in node and steps is not None:
            copy = {"type": "number", "enum": steps}
        return copy

    limited: dict[str, Any] = walk(schema)
    return limited


def response_format_param(fmt: str, name: str, schema: Mapping[str, Any], *,
                          strict: bool) -> dict[str, Any] | None:
    """The ``response_format`` request parameter of ``fmt`` (None: send none)."""
    if fmt == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": name, "strict": strict, "schema": dict(schema)}}
    if fmt == "json_object_schema":
        return {"type": "json_object", "schema": with_text_limits(schema)}
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
        # Endpoints whose format a first reply has settled; until then at most one call per
        # concurrency slot is out, so a refusal is met by the calls already sent, not by every
        # call queued behind them with the refused format in its request.
        self._confirmed: set[tuple[str, str]] = set()
        self._gates: dict[tuple[str, str], asyncio.Semaphore] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # Endpoints that refused a ``seed`` parameter: it is left out of their requests.
        self._seedless: set[tuple[str, str]] = set()
        # Endpoints whose settled format this process has read from the cache directory, and
        # what it found or wrote there.
        self._recalled: dict[tuple[str, str], dict[str, Any]] = {}

    def current(self, endpoint: Endpoint) -> str:
        if self.choice != "auto":
            return self.choice
        return self._current.get((endpoint.base_url, endpoint.model), _LADDER[0])

    def has_lower(self, refused: str) -> bool:
        """Whether a refusal of ``refused`` leaves a lower format to try."""
        return self.choice == "auto" and refused != _LADDER[-1]

    def step_down(self, endpoint: Endpoint, refused: str) -> bool:
        """After ``refused`` was refused: whether there is a lower format to try."""
        if not self.has_lower(refused):
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

    def gate(self, endpoint: Endpoint, width: int) -> asyncio.Semaphore:
        """What the calls of an unconfirmed endpoint pass ``width`` at a time (one per event
        loop: each batch runs on a loop of its own)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._gates = loop, {}
        return self._gates.setdefault((endpoint.base_url, endpoint.model),
                                      asyncio.Semaphore(width))

    def recall(self, endpoint: Endpoint, cache: JudgeCache) -> None:
        """Take up what an earlier run settled for ``endpoint`` (a lower format, no seed),
        once per process: its cached replies are keyed by the requests that got them."""
        key = (endpoint.base_url, endpoint.model)
        if key in self._recalled:
            return
        self._recalled[key] = {}
        path = _settled_path(endpoint, cache)
        if path is None or not cache.readable:
            return
        try:
            settled = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return  # none kept, or not readable: the ladder starts at its top
        if not isinstance(settled, dict):
            return
        self._recalled[key] = settled
        if self.choice == "auto" and settled.get("format") in _LADDER:
            self._current[key] = settled["format"]
        if settled.get("seedless") is True:
            self._seedless.add(key)

    def keep(self, endpoint: Endpoint, cache: JudgeCache) -> None:
        """Write down what ``endpoint`` settled on, when it is not the ladder's top with a
        seed and not what is written already (a failed write only costs a later run the
        refused requests again)."""
        key = (endpoint.base_url, endpoint.model)
        settled = {"format": self.current(endpoint) if self.choice == "auto" else None,
                   "seedless": key in self._seedless}
        # The top of the ladder with a seed is where every run starts: nothing to write.
        if self._recalled.get(key) == settled or not cache.writable \
                or (settled["format"] in (None, _LADDER[0]) and not settled["seedless"]):
            return
        path = _settled_path(endpoint, cache)
        if path is None:
            return
        self._recalled[key] = settled
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(settled), encoding="utf-8")
            os.replace(temporary, path)

    def formats(self) -> dict[str, str]:
        """The format each endpoint ended on (``auto`` mode), for the report."""
        return {f"{model} at {url}": fmt for (url, model), fmt in self._current.items()}


async def call_structured(
    runner: ChatRunner, endpoint: Endpoint, ladder: FormatLadder,
    build: Callable[[str], ChatRequest], check: Check | None = None,
) -> ChatOutcome:
    """One call, its request built for the endpoint's current format; a refusal of that
    format steps down and asks again.

    Until a first reply has settled an endpoint's format, as many of its calls go out as the
    runner has concurrency slots, and the rest wait for that reply. The first wave goes at
    once: a server that takes the schema (OpenAI, vLLM, Ollama, llama.cpp) costs no round
    trip of its own, which one call sent alone first would cost every session; a server that
    refuses it does so at once, and costs at most one refused request per slot."""
    ladder.recall(endpoint, runner.cache)
    if not ladder.confirmed(endpoint):
        async with ladder.gate(endpoint, runner.concurrency):
            if not ladder.confirmed(endpoint):
                return await _call_stepping_down(runner, endpoint, ladder, build, check)
    return await _call_stepping_down(runner, endpoint, ladder, build, check)


def cached_structured(
    runner: ChatRunner, endpoint: Endpoint, ladder: FormatLadder,
    build: Callable[[str], ChatRequest], check: Check | None = None,
) -> ChatOutcome | None:
    """The reply :func:`call_structured` would find in the cache, found without an event
    loop (:meth:`ChatRunner.cached`); None when the request, built for the endpoint's
    current format, is not cached. A hit settles the format as a call's reply does."""
    ladder.recall(endpoint, runner.cache)
    _fmt, request = _built(endpoint, ladder, build)
    outcome = runner.cached(endpoint, request, check)
    if outcome is not None:
        ladder.confirm(endpoint)
    return outcome


def _built(endpoint: Endpoint, ladder: FormatLadder,
           build: Callable[[str], ChatRequest]) -> tuple[str, ChatRequest]:
    """The endpoint's current format and the request built for it (without a seed when
    the endpoint refused one)."""
    fmt = ladder.current(endpoint)
    request = build(fmt)
    if ladder.seedless(endpoint) and "seed" in request.params:
        request = dataclasses.replace(
            request, params={k: v for k, v in request.params.items() if k != "seed"})
    return fmt, request


async def _call_stepping_down(
    runner: ChatRunner, endpoint: Endpoint, ladder: FormatLadder,
    build: Callable[[str], ChatRequest], check: Check | None,
) -> ChatOutcome:
    while True:
        fmt, request = _built(endpoint, ladder, build)
        # A refusal asked again counts as a request only: counted as a failed $0 call, a
        # server refusing the schema and seeds showed 20 calls and 10 failures for 10 outputs,
        # and half the real cost per 1000 calls.
        outcome: ChatOutcome = await runner.call(
            endpoint, request, check,
            asked_again=functools.partial(_asked_again, ladder, fmt, request))
        refused = _refused(ladder, fmt, request, outcome)
        if refused == "seed":
            # A server without seeds answers the same request without one.
            ladder.drop_seed(endpoint)
            continue
        if refused == "format":
            ladder.step_down(endpoint, fmt)
            continue
        # Whatever else happened (a reply, or a failure that is not the format's), the format
        # question is settled: the endpoint's calls need not wait for one another any more.
        ladder.confirm(endpoint)
        if outcome.usable:
            ladder.keep(endpoint, runner.cache)
        return outcome


def _refused(ladder: FormatLadder, fmt: str, request: ChatRequest,
             outcome: ChatOutcome) -> str | None:
    """What of ``request`` (asked in ``fmt``) the server refused and the endpoint can ask
    again without: ``seed``, ``format`` (a lower one is left), or None."""
    if outcome.content is not None:
        return None
    if "seed" in request.params and refused_param(outcome.error, "seed"):
        return "seed"
    if refused_format(outcome.error) and ladder.has_lower(fmt):
        return "format"
    return None


def _asked_again(ladder: FormatLadder, fmt: str, request: ChatRequest,
                 outcome: ChatOutcome) -> bool:
    return _refused(ladder, fmt, request, outcome) is not None


def _settled_path(endpoint: Endpoint, cache: JudgeCache) -> Path | None:
    if cache.directory is None:
        return None
    name = hashlib.sha256(f"{endpoint.cache_name}\n{endpoint.model}".encode()).hexdigest()
    return cache.directory / SETTLED_FOLDER / f"{name[:32]}.json"

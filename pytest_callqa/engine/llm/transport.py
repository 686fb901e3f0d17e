"""Chat calls to OpenAI-compatible endpoints: concurrency, rate, retries, cache and cost.

One :class:`ChatRunner` serves the LLM judge and the live generator alike (share one to put both
under the same limits). For every call it: (1) answers from memory when it already has the
reply; (2) takes the key's cross-process lock and answers from the disk cache when it can (a
hit sends nothing), so of several processes wanting one reply exactly one sends the request and
the others read its entry; (3) waits for the requests-per-minute window and a concurrency slot
— held for one HTTP attempt only, so a request sleeping in backoff leaves room — and, slot in
hand, reserves the attempt's worst-case cost against the budget (settled with the real cost
once the reply is in), so the spend can never pass the budget; (4) retries 429, 408, 409, 5xx,
timeouts and connection errors with exponential backoff and jitter, never sooner than the
server's ``Retry-After`` — the only retries (wire.py's client has none), and what the tests
check; (5) checks the reply with the caller's ``check`` and, while it reports problems, re-asks
with the problems spelled out (bounded), then stores a usable reply in the cache.

:meth:`ChatRunner.cached` answers from memory and the disk cache alone, without a session: a
batch answered wholly from the cache starts no event loop and never loads the HTTP library.

The API key is held by :class:`Endpoint` alone: never part of a cache key, an entry, a repr or
a message; text that comes back from a server is redacted before it is kept. The cache key does
cover the base URL (without credentials): two servers of one model name may serve different
weights, quantisations or system prompts.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from ..core.defaults import DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_S
from ..pricing import PriceTable
from .budget import Budget, SpendLedger, completion_bound, no_price_message, worst_case
from .cache import FileRateWindow, FileSlots, JudgeCache, content_key
from .counters import ModelUsage, call_usage
from .endpoint import CallError, Endpoint
from .kept import keep, kept
from .limits import Backoff, LocalRateWindow, LocalSlots, retry_after_seconds
from .wire import (
    ChatClient,
    ConnectionFailed,
    Reply,
    RequestTimeout,
    StatusError,
    read_completion,
    settled_status,
    window_full,
)

T = TypeVar("T")
Check = Callable[[str], Sequence[str]]

BACKEND = "openai-chat"
_MAX_DETAIL = 300
# How much of an unusable reply is quoted back when re-asking; the model needs to see what
# it did, not a megabyte of it.
_REASK_QUOTE = 2000
_RETRYABLE_STATUS = frozenset({408, 409, 429})
# Status codes that say the endpoint, key or model is wrong: every later call would fail the
# same way, so the run stops with the error instead of scoring hundreds of failures.
_FATAL_STATUS = frozenset({401, 403, 404})


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to obtain. ``kind``, ``version`` and ``variant`` only shape the
    cache key: the prompt version invalidates old entries when the prompt wording changes,
    and ``variant`` separates repeated runs that must not share a reply."""

    messages: Sequence[Mapping[str, str]]
    params: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "chat"
    version: str = "1"
    variant: Mapping[str, Any] = field(default_factory=dict)

    def key(self, endpoint: Endpoint) -> str:
        """The cache key: where the request goes (base URL without credentials, never the
        API key), the model, the whole prompt, every parameter and the prompt version."""
        return content_key({
            "backend": BACKEND, "base_url": endpoint.cache_name,
            "model": endpoint.model, "kind": self.kind, "version": self.version,
            "messages": list(self.messages), "params": dict(self.params),
            "variant": dict(self.variant),
        })


@dataclass
class ChatOutcome:
    """What a call produced.

    ``content`` is the last reply (None when none arrived); ``problems`` what ``check``
    still found wrong with it; ``error`` why no (usable) reply came: a transport failure, or
    the budget (``budget_stopped``). ``usage`` totals every attempt of the call.
    ``truncated``: the reply stopped at its completion bound (``finish_reason: length``): not
    cached (the key leaves out a bound a budgeted run adds; a cut reply is no whole answer).
    """

    content: str | None
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    usage: dict[str, float] = field(default_factory=dict)
    cached: bool = False
    budget_stopped: bool = False
    asks: int = 0
    truncated: bool = False

    @property
    def usable(self) -> bool:
        return self.content is not None and not self.problems and self.error is None


@dataclass
class _Session:
    loop: asyncio.AbstractEventLoop
    slots: FileSlots | LocalSlots
    rate: FileRateWindow | LocalRateWindow | None
    active: asyncio.Semaphore
    # The task that opened the session: cancelled to interrupt the batch (interrupt()).
    task: asyncio.Task[Any] | None
    clients: dict[tuple[str, str], ChatClient] = field(default_factory=dict)
    inflight: dict[str, asyncio.Future[ChatOutcome]] = field(default_factory=dict)

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def client(self, endpoint: Endpoint, timeout: float) -> ChatClient:
        client = self.clients.get(endpoint.client_key)
        if client is None:
            client = self.clients[endpoint.client_key] = endpoint.client(timeout)
        return client


class ChatRunner:
    """Sends chat calls under one set of limits; see the module docstring.

    ``concurrency`` caps requests in flight — across processes when ``cache`` has a
    directory (its slot files), else in this process. ``rpm`` caps request starts per
    ``rpm_window_s`` the same way. ``budget_usd`` is a hard limit on the spend of this runner
    — or, with ``run_id`` and a cache directory, of every process of the run: a request is
    sent only once its worst-case cost is reserved within it. ``max_retries`` counts transport
    retries per ask, ``reasks`` extra asks after unusable replies. ``exchange`` (the run's,
    ``JudgeCache.run_exchange``) keeps for the run's other processes the replies ``cache``
    keeps none of — every reply when it is not writable, and always the outcomes no cache
    may keep: a call that failed or stayed unusable, a reply cut at its bound. Another
    xdist worker whose test needs the same judgement then reads it, as one process would
    have kept it, rather than sending the call again.
    """

    def __init__(
        self,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        rpm: int | None = None,
        rpm_window_s: float = 60.0,
        cache: JudgeCache | None = None,
        budget_usd: float | None = None,
        prices: PriceTable | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 4,
        reasks: int = 2,
        backoff: Backoff | None = None,
        max_retry_after_s: float = 120.0,
        run_id: str | None = None,
        seed: int | None = None,
        exchange: JudgeCache | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if rpm is not None and rpm < 1:
            raise ValueError(f"rpm must be at least 1, got {rpm}")
        if budget_usd is not None and not (math.isfinite(budget_usd) and budget_usd >= 0):
            raise ValueError(f"budget must be a non-negative number of dollars, got {budget_usd}")
        if max_retries < 0 or reasks < 0:
            raise ValueError("max_retries and reasks must be >= 0")
        self.concurrency = concurrency
        self.rpm = rpm
        self.rpm_window_s = rpm_window_s
        self.cache = cache or JudgeCache(None, "off")
        self.exchange = exchange
        self.prices = prices or PriceTable()
        self.timeout = timeout
        self.max_retries = max_retries
        self.reasks = reasks
        self.backoff = backoff or Backoff()
        self.max_retry_after_s = max_retry_after_s
        self.run_id = run_id
        ledger_path = self.cache.ledger_path(run_id) if run_id else None
        ledger = SpendLedger(ledger_path) if ledger_path is not None else None
        # A reservation is held for one attempt, which the timeout bounds.
        self.budget = Budget(budget_usd, ledger, hold_s=timeout)
        self._rng = random.Random(seed)
        self._usage: dict[tuple[str, str], ModelUsage] = {}
        self._memo: dict[str, ChatOutcome] = {}
        self._session: _Session | None = None
        self._depth = 0
        self._interrupted = False

    # --- sessions -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """The per-event-loop state (HTTP clients, slots); nested sessions share it."""
        loop = asyncio.get_running_loop()
        if self._session is not None and self._session.loop is not loop:
            raise RuntimeError("this ChatRunner is already serving another event loop")
        if self._session is None:
            slots = self.cache.slots(self.concurrency) or LocalSlots(self.concurrency)
            rate: FileRateWindow | LocalRateWindow | None = None
            if self.rpm is not None:
                rate = (self.cache.rate_window(self.rpm, self.rpm_window_s)
                        or LocalRateWindow(self.rpm, self.rpm_window_s))
            # Bounds the calls past the memo at once: each may hold a key lock (an open
            # file) while it waits for a slot, and a batch can hold thousands of calls.
            active = asyncio.Semaphore(max(64, 4 * self.concurrency))
            self._session = _Session(loop=loop, slots=slots, rate=rate, active=active,
                                     task=asyncio.current_task())
            if self._interrupted:
                self._session.cancel()
        session = self._session
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._session = None
                for client in session.clients.values():
                    await client.close()
                await session.slots.close()

    def run_sync(self, factory: Callable[[], Awaitable[T]]) -> T:
        """Run ``factory()`` to completion from synchronous code (the pytest plugin, a
        script); from inside a running event loop it runs on a private loop in a thread."""

        async def main() -> T:
            async with self.session():
                return await factory()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(main())
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, main()).result()

    def interrupt(self) -> None:
        """From another thread: cancel the batch this runner serves (its calls in flight
        are abandoned, none is sent after), and any batch it opens from then on."""
        self._interrupted = True
        if (session := self._session) is not None:
            # The batch may have ended, and its loop closed, since it was read.
            with contextlib.suppress(RuntimeError):
                session.loop.call_soon_threadsafe(session.cancel)

    # --- accounting -----------------------------------------------------------------------

    def usage(self, model: str, kind: str) -> ModelUsage:
        """The counters of ``model`` for calls of ``kind`` (``judge``, ``generate``)."""
        return self._usage.setdefault((kind, model), ModelUsage())

    def usage_summary(self) -> dict[str, Any]:
        """Counters per kind and model, totals, and the budget state."""
        kinds: dict[str, dict[str, Any]] = {}
        for (kind, model), counters in sorted(self._usage.items()):
            kinds.setdefault(kind, {})[model] = counters.to_dict()
        every = list(self._usage.values())
        known = all(u.cost_known for u in every)
        return {
            "by_kind": kinds,
            "calls": sum(u.calls for u in every),
            "cache_hits": sum(u.cache_hits for u in every),
            "damaged": sum(u.damaged for u in every),
            "requests": sum(u.requests for u in every),
            "spent_usd": sum(u.spent_usd for u in every) if known else None,
            "budget_usd": self.budget.limit_usd,
            "budget_spent_usd": self.budget.spent(),
            "budget_shared": self.budget.shared,
            "budget_stopped": sum(u.budget_stopped for u in every),
        }

    # --- calls ----------------------------------------------------------------------------

    async def call(self, endpoint: Endpoint, request: ChatRequest, check: Check | None = None,
                   asked_again: Callable[[ChatOutcome], bool] | None = None) -> ChatOutcome:
        """Obtain one reply (see the module docstring). Never raises for a failed call —
        the outcome says what happened — except :class:`CallError` for configuration
        problems. Must run inside :meth:`session`. An outcome ``asked_again`` holds true of
        (the caller asks again without a format or parameter it refused) is no call."""
        session = self._session
        if session is None:
            raise RuntimeError("ChatRunner.call must run inside 'async with runner.session()'")
        key = request.key(endpoint)
        stats = self.usage(endpoint.model, request.kind)
        known = self._memo.get(key)
        if known is not None:
            return _shared(known)
        pending = session.inflight.get(key)
        if pending is not None:
            return _shared(await asyncio.shield(pending))
        future: asyncio.Future[ChatOutcome] = asyncio.get_running_loop().create_future()
        session.inflight[key] = future
        try:
            async with session.active:
                outcome = await self._call(session, endpoint, request, key, check, stats,
                                           asked_again)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            # Waiters re-raise it; this marks the exception as retrieved when there are none.
            future.exception()
            raise
        finally:
            session.inflight.pop(key, None)
        future.set_result(outcome)
        if outcome.usable:
            self._memo[key] = outcome
        if asked_again is None or not asked_again(outcome):
            stats.add_call(outcome.usage)
        return outcome

    def cached(self, endpoint: Endpoint, request: ChatRequest,
               check: Check | None = None) -> ChatOutcome | None:
        """The reply in memory or the disk cache, counted as :meth:`call` counts a hit (None:
        a miss). No session (no event loop), no key lock: entries are moved into place whole."""
        key = request.key(endpoint)
        known = self._memo.get(key)
        if known is not None:
            return _shared(known)
        # Counted on a hit only (never a damaged entry): call() counts a miss, looking again.
        hit = _lookup(self.cache, self.prices, endpoint, key, check, ModelUsage())
        if hit is not None:
            self._memo[key] = hit
            stats = self.usage(endpoint.model, request.kind)
            stats.cache_hits += 1
            stats.add_call(hit.usage)
        return hit

    async def _call(self, session: _Session, endpoint: Endpoint, request: ChatRequest,
                    key: str, check: Check | None, stats: ModelUsage,
                    asked_again: Callable[[ChatOutcome], bool] | None) -> ChatOutcome:
        # Where the reply is kept for other processes: the cache, or else the run's exchange.
        store = self.exchange if self.exchange is not None and not self.cache.writable \
            else self.cache
        # Looked up under the key's lock only: a second lookup per miss costs more than it saves.
        async with store.lock(key):
            hit = _lookup(self.cache, self.prices, endpoint, key, check, stats)
            if hit is None and store is not self.cache:
                hit = _lookup(store, self.prices, endpoint, key, check, stats)
            if hit is not None:
                return hit
            # As a second asker of this process gets it (_shared): its asks, the call's usage.
            found = kept(self.exchange, key) if self.exchange is not None else None
            if found is not None:
                return ChatOutcome(**found)
            outcome = await self._fetch(session, endpoint, request, check, stats, asked_again)
            # In a thread (files can take milliseconds on a busy disk, and the loop has
            # requests to send), awaited under the key's lock so a waiting process finds it.
            if outcome.usable and outcome.content is not None and not outcome.truncated:
                await asyncio.to_thread(store.put, key, {
                    "kind": request.kind, "model": endpoint.model,
                    "prompt_version": request.version, "content": outcome.content,
                    "usage": {k: v for k, v in outcome.usage.items() if k != "cost_usd"},
                    "asks": outcome.asks,
                })
            elif self.exchange is not None and not outcome.budget_stopped:
                # A budget that stopped a call stops it in every process by itself.
                await asyncio.to_thread(keep, self.exchange, key, outcome)
            return outcome

    async def _fetch(self, session: _Session, endpoint: Endpoint, request: ChatRequest,
                     check: Check | None, stats: ModelUsage,
                     asked_again: Callable[[ChatOutcome], bool] | None) -> ChatOutcome:
        messages = [dict(m) for m in request.messages]
        params: Mapping[str, Any] = request.params
        bound: int | None = None
        if self.budget.limit_usd is not None:
            # A worst case needs a bound on the completion: the request's own, or one added.
            params, bound = completion_bound(endpoint.model, request.kind, params)
        prompt_total: float | None = 0.0
        completion_total: float | None = 0.0
        unreported = 0
        content: str | None = None
        problems: list[str] = []
        truncated = False
        for ask in range(self.reasks + 1):
            if ask:
                stats.reasks += 1
            reply, error, budget = await self._send(session, endpoint, messages, params,
                                                    bound, stats)
            if reply is not None:
                unreported += reply.prompt_tokens is None or reply.completion_tokens is None
                prompt_total = _plus(prompt_total, reply.prompt_tokens)
                completion_total = _plus(completion_total, reply.completion_tokens)
            if reply is None or error is not None:
                usage = call_usage(self.prices, endpoint.model, prompt_total, completion_total,
                                   unreported)
                outcome = ChatOutcome(content=content, problems=problems, error=error,
                                      usage=usage, budget_stopped=budget, asks=ask)
                if budget:
                    stats.budget_stopped += 1
                elif asked_again is None or not asked_again(outcome):
                    stats.failures += 1
                return outcome
            content = reply.content
            truncated = reply.finish_reason == "length"
            problems = list(check(content)) if check is not None else []
            if not problems:
                break
            messages = [dict(m) for m in request.messages] + [
                {"role": "assistant", "content": content[:_REASK_QUOTE]},
                {"role": "user", "content": reask_message(problems)},
            ]
        if problems:
            stats.unusable += 1
        usage = call_usage(self.prices, endpoint.model, prompt_total, completion_total,
                           unreported)
        return ChatOutcome(content=content, problems=problems, usage=usage, asks=ask + 1,
                           truncated=truncated)

    async def _send(
        self, session: _Session, endpoint: Endpoint, messages: list[dict[str, str]],
        params: Mapping[str, Any], bound: int | None, stats: ModelUsage,
    ) -> tuple[Reply | None, str | None, bool]:
        """One ask with transport retries: ``(reply, error, budget_stopped)``; a reply that
        is no answer (cut by a full context window) comes with its error, as it was billed.
        With a budget, ``bound`` caps the completion tokens (the request carries it)."""
        client = session.client(endpoint, self.timeout)
        body = {"model": endpoint.model, "messages": messages, **params}
        worst = (worst_case(self.prices, endpoint.model, body, bound)
                 if bound is not None else None)
        last_error = ""
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            reply: Reply | None = None
            slot = await session.slots.acquire()
            hold: str | None = ""
            billed: float | None = 0.0  # nothing is charged until the request goes out
            try:
                if session.rate is not None:
                    # Counted with the slot in hand (counted in the slot's queue, it let the
                    # minute's next calls through too), before the budget: a reservation
                    # held through the rate's wait looked abandoned, and was counted spent.
                    await session.rate.acquire()
                # Reserved with the slot in hand: calls queued while the budget ran out stay.
                hold = await self.budget.reserve(worst) if worst is not None else ""
                if hold is None:
                    return None, self.budget.refusal(worst or 0.0), True
                # What the attempt is charged: its worst case until the server says otherwise
                # (a timeout or a cut connection may still be billed).
                billed = worst
                stats.requests += 1
                reply = self._accept(endpoint, await client.complete(body), stats)
            except StatusError as exc:
                billed = 0.0  # an error status: nothing was generated
                status = exc.status
                last_error = f"HTTP {status}: {_detail(exc, endpoint)}"
                if status in _FATAL_STATUS:
                    raise CallError(endpoint.redact(
                        f"{endpoint.model} at {endpoint.display_url}: {last_error}"
                    )) from None
                settled = settled_status(status, exc.message, _detail(exc, endpoint), messages)
                if settled is not None:
                    return None, settled, False
                if status not in _RETRYABLE_STATUS and status < 500:
                    return None, endpoint.redact(last_error), False
                retry_after = retry_after_seconds(exc.headers)
            except (RequestTimeout, ConnectionFailed) as exc:
                last_error = (f"connection failed: {exc.cause}" if isinstance(
                    exc, ConnectionFailed) else f"timed out after {self.timeout:g}s")
                # No usage came back to say what the server billed, if anything: the
                # spend is unknown, as the budget settles the attempt at its worst case.
                stats.cost_known = False
                stats.requests_without_usage += 1
            except ValueError as exc:
                # Not JSON at all (a proxy's error page served with status 200), or JSON
                # without a completion: never the model's answer, never cached.
                return (None, endpoint.redact(f"unreadable response: {_detail(exc, endpoint)}"),
                        False)
            else:
                if reply.cost is not None:
                    billed = reply.cost
            finally:
                session.slots.release(slot)
                if hold and billed is not None:
                    self.budget.settle(hold, billed)
            if reply is not None:
                # Let the call that got this slot send before this one checks, caches and
                # scores its reply: replies come in bursts, and an idle slot is lost throughput.
                await asyncio.sleep(0)
                return reply, window_full(params, reply), False
            if attempt == self.max_retries:
                break
            if retry_after is not None and retry_after > self.max_retry_after_s:
                return (None, endpoint.redact(
                    f"{last_error}; the server asked to retry after {retry_after:g}s, longer "
                    f"than the {self.max_retry_after_s:g}s this run waits"), False)
            stats.retries += 1
            delay = self.backoff.delay(attempt, self._rng)
            await asyncio.sleep(max(delay, retry_after or 0.0))
        return (None, endpoint.redact(f"gave up after {self.max_retries + 1} attempts: "
                                      f"{last_error}"), False)

    def _accept(self, endpoint: Endpoint, completion: Any, stats: ModelUsage) -> Reply:
        reply = read_completion(completion)
        # A key (or URL password) echoed in a reply would reach the reason, cache and report.
        reply.content = endpoint.redact_reply(reply.content)
        if reply.prompt_tokens is None or reply.completion_tokens is None:
            stats.cost_known = False
            stats.requests_without_usage += 1
            return reply
        stats.prompt_tokens += reply.prompt_tokens
        stats.completion_tokens += reply.completion_tokens
        reply.cost = self.prices.cost(endpoint.model, reply.prompt_tokens,
                                      reply.completion_tokens)
        # Without a price the call's usage has tokens but no cost, which is what marks the
        # model's spend unknown when the call is counted (ModelUsage.add_call).
        if reply.cost is not None:
            stats.spent_usd += reply.cost
        return reply

    def require_price(self, model: str) -> None:
        """Refuse a budget that could not be enforced: spend is only known with a price."""
        if self.budget.limit_usd is not None and model not in self.prices:
            raise CallError(no_price_message(model))


def _lookup(cache: JudgeCache, prices: PriceTable, endpoint: Endpoint, key: str,
            check: Check | None, stats: ModelUsage) -> ChatOutcome | None:
    """The reply ``cache`` holds for ``key``, counted in ``stats`` as a hit (None: a miss,
    or an entry that is damaged or that ``check`` rejects)."""
    found = cache.lookup(key)
    entry = found.value
    if found.status == "damaged":
        stats.damaged += 1
    if entry is None:
        return None
    content = entry.get("content")
    stored = entry.get("usage")
    if not isinstance(content, str) or not isinstance(stored, dict):
        stats.damaged += 1
        return None
    # An entry the checks reject (another version's, or edited) is a miss, then replaced.
    if check is not None and list(check(content)):
        return None
    prompt = stored.get("prompt_tokens")
    completion = stored.get("completion_tokens")
    tokens_ok = all(isinstance(v, (int, float)) for v in (prompt, completion))
    usage = call_usage(prices, endpoint.model, prompt if tokens_ok else None,
                       completion if tokens_ok else None)
    usage["cached"] = 1.0
    stats.cache_hits += 1
    return ChatOutcome(content=content, usage=usage, cached=True, asks=0)


def _shared(outcome: ChatOutcome) -> ChatOutcome:
    """A second consumer of one reply, given what another process reads: a usable reply as a
    cache hit, with the tokens and cost of the call that got it; a failed or unusable call as
    the run's exchange keeps it (kept.py), with its asks and usage. So which of two identical
    calls is charged does not depend on which process asked (with or without xdist, cold or
    warm). The budget stops another process's call before it asks: shared without usage."""
    usage, asks = dict(outcome.usage), outcome.asks
    if outcome.usable:
        usage, asks = ({**usage, "cached": 1.0} if usage else {}), 0
    elif outcome.budget_stopped:
        usage, asks = {}, 0
    return replace(outcome, problems=list(outcome.problems), usage=usage,
                   cached=outcome.cached or outcome.usable, asks=asks)


def _plus(total: float | None, tokens: float | None) -> float | None:
    """A call's token total with one more reply's count (None: either is unknown)."""
    return None if total is None or tokens is None else total + tokens


def _detail(exc: Exception, endpoint: Endpoint) -> str:
    # Redacted before truncation, which could otherwise cut the key in half and leak it.
    detail = endpoint.redact(str(getattr(exc, "message", exc)))
    return detail[:_MAX_DETAIL] + "..." if len(detail) > _MAX_DETAIL else detail


def reask_message(problems: Sequence[str]) -> str:
    listed = "\n".join(f"- {p}" for p in problems)
    return (
        "Your previous reply could not be used:\n"
        f"{listed}\n"
        "Reply again with only the JSON object described in the instructions, with every "
        "verdict it asks for (those above corrected, the others repeated: this reply "
        "replaces the previous one), every score on its stated scale."
    )

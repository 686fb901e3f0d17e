"""The LLM judge: any OpenAI-compatible chat endpoint scores what the heuristics cannot.

Each judgement sends the transcript, the model output, the expected outcome (the human
truth), the task config and the metric — its scale, what the score means, and the part of
the output the task picked out for it (``focus``). Replies are JSON, validated with pydantic
and :func:`valid_score`; a verdict the judge cannot give — its call failed, its reply stayed
unusable after the re-asks, the budget was spent — is a *judge error*: not scored, never a
number and never a pass.

``mode="combined"`` sends all judge-scored metrics of one task output in one call (fewer
calls, one shared reading of the transcript); ``mode="per-metric"`` sends one call each.
Transport, limits, cache and cost are :class:`~.transport.ChatRunner`'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core.defaults import (
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_RESPONSE_FORMAT,
    DEFAULT_TIMEOUT_S,
)
from ..core.judging import JudgeRequest, JudgeVerdict
from ..llm.budget import bound_param
from ..llm.cache import JudgeCache, content_key
from ..llm.counters import tokens_unknown
from ..llm.endpoint import Endpoint, first_error
from ..llm.formats import (
    FormatLadder,
    cached_structured,
    call_structured,
    reply_max_tokens,
    response_format_param,
)
from ..llm.transport import ChatOutcome, ChatRequest, ChatRunner
from ..llm.windows import input_limit, too_large
from ..pricing import PriceTable
from .prompts import build_messages
from .replies import (
    Item,
    ParsedReply,
    kept_fields,
    parse_reply,
    reply_schema,
)

JudgeMode = Literal["combined", "per-metric"]
JUDGE_MODES: tuple[str, ...] = ("combined", "per-metric")
# Part of every cache key: change it whenever the prompt's wording or the reply contract
# changes, so replies to the old prompt are not reused for the new one.
PROMPT_VERSION = "callqa-judge-2026.1"
# Request parameters of every judge call; ``params=`` adds to them, and a None value removes
# one (reasoning models, for instance, refuse ``temperature``). ``response_format`` is set per
# call from the reply schema (see ``response_format=``) unless ``params`` sets it. ``seed``
# makes a sampling server repeat itself; one that refuses it is asked again without it.
DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0, "seed": 0}
SCHEMA_NAME = "callqa_verdicts"
_BOUND_NAMES = ("max_tokens", "max_completion_tokens")

# Runs and repeats beyond these get seeds of their own too, just not ones spaced this way.
SEED_RUN_STEP = 1000


def sample_seed(base: int, run: int, repeat: int) -> int:
    """The seed of run ``run``, repeat ``repeat`` of a judgement: the base seed for the first
    of both (a single-run session's request, unchanged), a different one for every other."""
    return base + run * SEED_RUN_STEP + repeat


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _share(usage: Mapping[str, float], parts: int) -> dict[str, float]:
    """One call's usage split over the ``parts`` verdicts it produced, so summing the
    verdicts of a result gives the calls' totals. Whether the cache answered it is left
    out: that is this process's luck, not the verdict's — under xdist a pair two workers
    resolve is sent by one and read from the cache by the other, and which result the
    report keeps would decide it (the run's counters count cache hits)."""
    shared = {k: v / parts for k, v in usage.items() if k != "cached"}
    shared["calls"] = 1.0 / parts
    return shared


@dataclass
class _JudgeStats:
    verdicts: int = 0
    flagged: int = 0
    judge_errors: int = 0
    failed: int = 0
    not_scored_budget: int = 0


class _Progress:
    """Reports ``(done, total)`` calls to ``on_progress`` as each call's verdicts are in."""

    def __init__(self, on_progress: Callable[[int, int], None] | None, total: int) -> None:
        self.on_progress = on_progress
        self.total = total
        self.done = 0

    def advance(self) -> None:
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)


class _Verdicts:
    """A batch's verdicts by request key, each call's handed on as soon as they are in."""

    def __init__(self, on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None
                 ) -> None:
        self.on_verdicts = on_verdicts
        self.known: dict[str, JudgeVerdict] = {}

    def add(self, answered: list[tuple[str, JudgeVerdict]]) -> None:
        new = dict(answered)
        self.known.update(new)
        if self.on_verdicts is not None:
            self.on_verdicts(new)


@dataclass
class _GroupCall:
    """One judge call: the (key, item) pairs it asks about, how its request is built for a
    response format, and why it is not sent (None: it is). ``check`` validates a reply and
    keeps the last one parsed, so a usable reply is parsed once."""

    group: list[tuple[str, Item]]
    build: Callable[[str], ChatRequest]
    refusal: str | None
    # What makes two calls one request: their messages, sample and reply bound.
    identity: tuple[Any, ...] = ()
    # Calls of the batch that would send this very request (the same turn, word for word, in
    # two models' outputs): answered with its reply, charged nothing (see _answers).
    copies: list[_GroupCall] = dataclasses.field(default_factory=list)
    _last: dict[str, ParsedReply] = dataclasses.field(default_factory=dict)

    @property
    def items(self) -> list[Item]:
        return [item for _key, item in self.group]

    @property
    def keys(self) -> list[str]:
        return [key for key, _item in self.group]

    def check(self, content: str) -> list[str]:
        self._last.clear()
        self._last[content] = parse_reply(content, self.items)
        return self._last[content].all_problems()

    def verdicts(self, judge: OpenAIJudge,
                 outcome: ChatOutcome) -> list[tuple[str, JudgeVerdict]]:
        parsed = None
        if outcome.content is not None:
            parsed = self._last.get(outcome.content) or parse_reply(outcome.content,
                                                                     self.items)
        return list(zip(self.keys, judge._verdicts(self.items, outcome, parsed), strict=True))


def _one_per_request(calls: list[_GroupCall]) -> list[_GroupCall]:
    """``calls`` less those that would send a request an earlier one sends, each kept as a
    copy of that one. Judgements of different outputs can ask the very same thing — a turn
    judged from its own window, said word for word by two models — and the transport sends
    such a request once; a refused call is its own (its verdicts say why)."""
    first: dict[tuple[Any, ...], _GroupCall] = {}
    kept = []
    for call in calls:
        same = first.setdefault(call.identity, call) if call.refusal is None else call
        if same is call:
            kept.append(call)
        else:
            same.copies.append(call)
    return kept


def _in_order(keys: list[str], verdicts: Mapping[str, JudgeVerdict]) -> list[JudgeVerdict]:
    """The verdict of each of ``keys`` in turn, a key asked again charged nothing."""
    answered: set[str] = set()
    result = []
    for key in keys:
        verdict = verdicts[key]
        if key in answered:
            # The same judgement asked twice in a batch: judged once, paid for once.
            verdict = dataclasses.replace(verdict, usage={})
        answered.add(key)
        result.append(verdict)
    return result


def _unit_by_unit(request: JudgeRequest) -> bool:
    """Whether ``request`` judges one unit of an output (a turn, a signal) from its focus
    alone: a call of such requests that is too large can send each of them on its own."""
    return request.item is not None and request.view.focus_only


class OpenAIJudge:
    """The LLM judge over an OpenAI-compatible endpoint; implements :class:`Judge`.

    ``runner`` shares limits, cache, budget and counters with a generator; without it the
    judge builds its own from ``concurrency``, ``rpm``, ``cache``, ``budget_usd``, ``prices``,
    ``timeout``, ``max_retries``, ``reasks`` and ``run_id`` (see :class:`ChatRunner`).
    ``params`` adjusts the request parameters (:data:`DEFAULT_PARAMS`). ``response_format``
    is ``auto`` (a strict JSON schema of the verdicts asked for, stepping down to
    ``json_object`` with the schema, then ``json_object``, then the prompt alone when the
    endpoint refuses it), ``json_schema``, ``json_object_schema``, ``json_object`` or
    ``none``. Every call carries ``max_tokens``: what its reply schema needs. ``max_input_tokens``
    is the most prompt tokens a call may carry (default: the model's window less room for the
    reply, when the model is known); ``context_window`` is the window a server reports (a
    local llama.cpp server): prompt and reply bound must fit in it together, the prompt
    estimated on the high side. A call over either is not sent, and its verdicts are judge
    errors — except that a combined call of requests judged unit by unit from their focus
    alone (a conversation's turns, each with its window) is first split into one call per
    request, each held to the limit in turn.
    ``backend`` names the kind of server in the judge's name (``local:<model>``).
    ``on_progress(done, total)`` is called as judge calls finish. ``before_send()`` is called
    before a batch that must call the endpoint (not for one the cache answers wholly); what it
    raises stops the batch before any request. ``cache_name`` names the server in cache keys
    in place of its URL (the local judge's changes every run).
    """

    def __init__(
        self,
        model: str = DEFAULT_JUDGE_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        mode: JudgeMode | str = "combined",
        concurrency: int = DEFAULT_CONCURRENCY,
        rpm: int | None = None,
        cache: JudgeCache | None = None,
        budget_usd: float | None = None,
        prices: PriceTable | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 4,
        reasks: int = 2,
        run_id: str | None = None,
        runner: ChatRunner | None = None,
        params: Mapping[str, Any] | None = None,
        response_format: str = DEFAULT_RESPONSE_FORMAT,
        max_input_tokens: int | None = None,
        context_window: int | None = None,
        backend: str = "openai",
        on_progress: Callable[[int, int], None] | None = None,
        before_send: Callable[[], None] | None = None,
        cache_name: str | None = None,
    ) -> None:
        if mode not in JUDGE_MODES:
            raise ValueError(f"judge mode must be one of {', '.join(JUDGE_MODES)}, got {mode!r}")
        self.model = model
        self.name = f"{backend}:{model}"
        self.mode: str = mode
        self.endpoint = Endpoint(model, base_url, api_key, cache_name=cache_name)
        self.runner = runner or ChatRunner(
            concurrency=concurrency, rpm=rpm, cache=cache, budget_usd=budget_usd,
            prices=prices, timeout=timeout, max_retries=max_retries, reasks=reasks,
            run_id=run_id,
        )
        self.runner.require_price(model)
        self.params: dict[str, Any] = dict(DEFAULT_PARAMS)
        for key, value in (params or {}).items():
            if value is None:
                self.params.pop(key, None)
            else:
                self.params[key] = value
        self.formats = FormatLadder(response_format)
        self.max_input_tokens = input_limit(model, max_input_tokens)
        self.context_window = context_window
        self.on_progress = on_progress
        self.before_send = before_send
        self._stats = _JudgeStats()

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.endpoint.display_url!r}, " \
               f"mode={self.mode!r})"

    # --- Judge protocol -------------------------------------------------------------------

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        """All verdicts of a batch: what the cache holds first, synchronously, then the
        rest concurrently on a private event loop — which a warm re-run, answered wholly
        from the cache, never starts."""
        return self.judge_as_ready(requests, None)

    def judge_as_ready(self, requests: Sequence[JudgeRequest],
                       on_verdicts: Callable[[Mapping[str, JudgeVerdict]], None] | None,
                       ) -> list[JudgeVerdict]:
        """:meth:`judge`, handing ``on_verdicts`` each call's verdicts (by request key) as
        soon as they are in, so a caller can use the first while the last are on their
        way. It is called on the thread that runs the batch."""
        if not requests:
            return []
        keys, calls = self._plan(requests)
        verdicts = _Verdicts(on_verdicts)
        progress = _Progress(self.on_progress, len(calls))
        drawn = self._not_cached(calls, verdicts, progress)
        first = next((call for call in drawn if call is not None), None)
        if first is not None:
            if self.before_send is not None:
                self.before_send()
            # The rest are looked up while the first ones are on their way: looked up before
            # the first was sent, 200 cold calls started a cache pass later.
            self.runner.run_sync(
                lambda: self._send(itertools.chain((first,), drawn), verdicts, progress))
        return _in_order(keys, verdicts.known)

    def _not_cached(self, calls: Sequence[_GroupCall], verdicts: _Verdicts,
                    progress: _Progress) -> Iterator[_GroupCall | None]:
        """Each of ``calls`` in turn: one to send, or None once a refused one or one the
        cache answers has its verdicts — so that a caller sending the first may read their
        replies between two look-ups rather than after a run of them."""
        for call in calls:
            if call.refusal is not None:
                verdicts.add(self._refused(call))
            else:
                outcome = cached_structured(self.runner, self.endpoint, self.formats,
                                            call.build, call.check)
                if outcome is None:
                    yield call  # sent as built: its prompt is not built twice
                    continue
                verdicts.add(self._answers(call, outcome))
            progress.advance()
            yield None

    async def ajudge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        keys, calls = self._plan(requests)
        verdicts = _Verdicts(None)
        await self._send(calls, verdicts, _Progress(self.on_progress, len(calls)))
        return _in_order(keys, verdicts.known)

    def _plan(self, requests: Sequence[JudgeRequest]) -> tuple[list[str], list[_GroupCall]]:
        """Each request's key, and the calls that ask the distinct ones."""
        unique: dict[str, JudgeRequest] = {}
        keys = [r.key for r in requests]
        for key, request in zip(keys, requests, strict=True):
            unique.setdefault(key, request)
        calls = []
        for group in self._groups(list(unique.items())):
            call = self._group_call(group)
            if call.refusal is not None and len(group) > 1 \
                    and all(_unit_by_unit(item.request) for _key, item in group):
                # Each of these judgements needs only its own focus (a turn and its window):
                # sent alone, as per-metric mode sends it, each may fit where all did not.
                calls += [self._group_call([(key, Item(item.request.metric, item.request))])
                          for key, item in group]
            else:
                calls.append(call)
        return keys, _one_per_request(calls)

    async def _send(self, calls: Iterable[_GroupCall | None], verdicts: _Verdicts,
                    progress: _Progress) -> None:
        """Every one of ``calls`` at once, under the runner's limits, each started as soon
        as it is drawn from ``calls`` (a None is a turn for the calls on their way)."""

        async def run(call: _GroupCall) -> None:
            verdicts.add(await self._judge_group(call))
            progress.advance()

        try:
            async with self.runner.session(), asyncio.TaskGroup() as tasks:
                for call in calls:
                    if call is not None:
                        tasks.create_task(run(call))
                    # The calls on their way go on — the new one starts, replies in are read —
                    # before the next is drawn: thousands of cache look-ups in a row held a
                    # reply unread past its timeout, and it was sent again.
                    await asyncio.sleep(0)
        except BaseExceptionGroup as failed:
            # A configuration error (bad key, unknown model) stops the batch; report it as
            # itself, not wrapped in the task group's exception group.
            raise first_error(failed) from None

    def _groups(self, unique: list[tuple[str, JudgeRequest]]) -> list[list[tuple[str, Item]]]:
        if self.mode == "per-metric":
            return [[(key, Item(request.metric, request))] for key, request in unique]
        grouped: dict[str, list[tuple[str, JudgeRequest]]] = {}
        for key, request in unique:
            identity: dict[str, Any] = {
                "case": request.case.model_dump(mode="json"), "task": request.task,
                "output": request.model_output,
            }
            if request.run or request.repeat:
                identity["sample"] = [request.run, request.repeat]
            if request.view.units_apart:
                identity["item"] = request.item
            output_key = content_key(identity)
            grouped.setdefault(output_key, []).append((key, request))
        groups = []
        for members in grouped.values():
            seen: dict[str, int] = {}
            group = []
            for key, request in members:
                seen[request.metric] = seen.get(request.metric, 0) + 1
                # A metric asked twice for one output (per-turn metrics) gets distinct ids.
                count = seen[request.metric]
                ident = request.metric if count == 1 else f"{request.metric}#{count}"
                group.append((key, Item(ident, request)))
            groups.append(group)
        return groups

    def _group_call(self, group: list[tuple[str, Item]]) -> _GroupCall:
        """The one call that asks ``group``'s verdicts, or why it is not sent."""
        items = [item for _key, item in group]
        messages = build_messages(items)
        case = items[0].request.case
        unit = items[0].request.item if len(items) == 1 else None
        what = (f"the judge call for {f'{unit} of ' if unit else ''}case {case.id!r} "
                f"({len(case.transcript_text):,} characters of transcript)")
        schema = reply_schema(items)
        # The caller's own bound, when ``params`` sets one, else what the schema needs.
        bound = {k: v for k, v in self.params.items() if k in _BOUND_NAMES} \
            or bound_param(self.model, reply_max_tokens(schema))
        refusal = self._too_large(messages, int(max(bound.values())), what)

        first = items[0].request
        variant = {k: v for k, v in (("run", first.run), ("repeat", first.repeat)) if v}

        def build(fmt: str) -> ChatRequest:
            params = dict(self.params)
            if variant and isinstance(params.get("seed"), int):
                params["seed"] = sample_seed(params["seed"], first.run, first.repeat)
            params.update(bound)
            if "response_format" not in params:
                chosen = response_format_param(fmt, SCHEMA_NAME, schema, strict=True)
                if chosen is not None:
                    params["response_format"] = chosen
            return ChatRequest(messages=messages, params=params, kind="judge",
                               version=PROMPT_VERSION, variant=variant)

        identity = (tuple((m["role"], m["content"]) for m in messages),
                    tuple(sorted(variant.items())), tuple(sorted(bound.items())))
        return _GroupCall(group=group, build=build, refusal=refusal, identity=identity)

    async def _judge_group(self, call: _GroupCall) -> list[tuple[str, JudgeVerdict]]:
        if call.refusal is not None:
            return self._refused(call)
        outcome = await call_structured(self.runner, self.endpoint, self.formats, call.build,
                                        call.check)
        return self._answers(call, outcome)

    def _answers(self, call: _GroupCall,
                 outcome: ChatOutcome) -> list[tuple[str, JudgeVerdict]]:
        """The verdicts of ``call`` and of its copies, from its one outcome. A copy's cost
        is the call's, paid once: counted again, a batch's results summed to more calls and
        spend than the server saw (142 calls for 139 requests in the example project)."""
        unpaid = dataclasses.replace(outcome, usage={})
        return [*call.verdicts(self, outcome),
                *(pair for copy in call.copies for pair in copy.verdicts(self, unpaid))]

    def _too_large(self, messages: list[dict[str, str]], reply: int, what: str) -> str | None:
        refusal = too_large(messages, self.model, self.max_input_tokens, what)
        if refusal is None and self.context_window is not None:
            refusal = too_large(
                messages, self.model, self.context_window - reply, what, estimate=True,
                hint=f"its server's context window of {self.context_window:,} tokens less "
                     f"{reply:,} for the reply; --callqa-local-ctx sets the window")
        return refusal

    def _verdicts(self, items: Sequence[Item], outcome: ChatOutcome,
                  parsed: ParsedReply | None) -> list[JudgeVerdict]:
        # A call no reply came back to, and nothing was billed for (the budget stopped it
        # before it was sent, an error status, a refused connection), is no call: counted as
        # one at $0, it lowered the judge's "per 1000 judge calls" (halved it in a run the
        # budget cut short; $0.1674 for $0.5578 with 7 of 10 calls refused).
        unanswered = outcome.content is None and not any(outcome.usage.get(key) for key in (
            "prompt_tokens", "completion_tokens", "cost_usd"))
        usage = _share(outcome.usage, len(items)) if outcome.usage and not unanswered else {}
        verdicts = []
        for item in items:
            metric = item.request.metric
            reply = parsed.replies.get(item.ident) if parsed is not None else None
            self._stats.verdicts += 1
            if reply is not None:
                extras = kept_fields(reply, item.request)
                verdicts.append(JudgeVerdict(
                    metric=metric, score=float(reply.score), reason=reply.reason,
                    expected_outcome_reference=_text(reply.expected_outcome_reference),
                    model_output_observed=_text(reply.model_output_observed),
                    details=extras, usage=dict(usage),
                ))
            elif parsed is not None:
                verdicts.append(self._unusable(item, outcome, parsed, usage))
            elif outcome.budget_stopped:
                self._stats.not_scored_budget += 1
                verdicts.append(JudgeVerdict(
                    metric=metric, score=None, usage=dict(usage), judge_error=True,
                    reason=f"not scored: judge {outcome.error}",
                    details={"judge_budget_exhausted": True},
                ))
            else:
                self._stats.failed += 1
                self._stats.judge_errors += 1
                verdicts.append(JudgeVerdict(
                    metric=metric, score=None, usage=dict(usage), judge_error=True,
                    reason=f"judge call failed: {outcome.error}",
                ))
        return verdicts

    def _refused(self, call: _GroupCall) -> list[tuple[str, JudgeVerdict]]:
        """The verdicts of a call too large to send: judge errors saying why."""
        assert call.refusal is not None
        return [(key, self._not_sent(item, call.refusal)) for key, item in call.group]

    def _not_sent(self, item: Item, reason: str) -> JudgeVerdict:
        self._stats.verdicts += 1
        self._stats.judge_errors += 1
        return JudgeVerdict(metric=item.request.metric, score=None, judge_error=True,
                            reason=reason)

    def _unusable(self, item: Item, outcome: ChatOutcome, parsed: ParsedReply,
                  usage: Mapping[str, float]) -> JudgeVerdict:
        """The judge answered, but not usably for this item, even after the re-asks (a later
        failure or the budget may have cut them short): a judge error — unless the only
        problem is a score off the scale and the family's seed scores that itself."""
        request = item.request
        problems = parsed.general + parsed.problems.get(item.ident, [])
        raw = parsed.off_scale.get(item.ident)
        if request.keeps_out_of_range and raw is not None and not parsed.general \
                and len(parsed.problems.get(item.ident, [])) == 1:
            self._stats.flagged += 1
            return JudgeVerdict(
                metric=request.metric, score=raw, flagged=True, usage=dict(usage),
                reason=f"judge score off the {request.scale} scale: {problems[0]}")
        if outcome.error is not None:
            problems.append(f"no further attempt: {outcome.error}")
        self._stats.judge_errors += 1
        asks = max(outcome.asks, 1)
        return JudgeVerdict(
            metric=request.metric, score=None, usage=dict(usage), judge_error=True,
            reason=f"judge reply unusable after {asks} attempt{'s' if asks != 1 else ''}: "
                   f"{'; '.join(problems)[:500]}")

    # --- reporting ------------------------------------------------------------------------

    def usage_summary(self) -> dict[str, Any]:
        """Calls, cache hits, requests, tokens, spend and cost per 1000 calls of the judge
        model, plus verdict counts (flagged, failed, not scored because of the budget)."""
        counters = self.runner.usage(self.model, "judge").to_dict()
        return {
            "model": self.model,
            **counters,
            "verdicts": self._stats.verdicts,
            "flagged": self._stats.flagged,
            "judge_errors": self._stats.judge_errors,
            "failed_call_verdicts": self._stats.failed,
            "not_scored_budget": self._stats.not_scored_budget,
            "budget_usd": self.runner.budget.limit_usd,
            "budget_spent_usd": self.runner.budget.spent(),
        }

    def describe(self) -> str:
        """One line for the scorecard header."""
        runner = self.runner
        parts = [f"{self.mode} mode", f"concurrency {runner.concurrency}"]
        if runner.rpm is not None:
            parts.append(f"{runner.rpm} requests/min")
        parts.append(runner.cache.describe())
        if runner.budget.limit_usd is not None:
            parts.append(f"budget ${runner.budget.limit_usd:g}")
        price = runner.prices.get(self.model)
        if price is None:
            parts.append("price unknown (cost not shown)")
        else:
            origin = "default price" if runner.prices.is_default(self.model) else "price"
            parts.append(f"{origin} ${price.input_per_million:g}/"
                         f"${price.output_per_million:g} per 1M tokens")
        return f"openai {self.model} at {self.endpoint.display_url} ({', '.join(parts)})"

    def spend_line(self) -> str:
        """The judge's spend so far, for the report header."""
        summary = self.usage_summary()
        spent = summary["spent_usd"]
        money = "cost unknown" if spent is None else f"${spent:.4f}"
        unreported = summary["requests_without_usage"]
        # Replies without token counts add none: 0+0 would read as measured.
        tokens = ([] if tokens_unknown(summary["requests"], unreported) else
                  [f"{summary['prompt_tokens']:.0f}+{summary['completion_tokens']:.0f} tokens"])
        if unreported:
            tokens.append(f"tokens unknown for {unreported} of {summary['requests']} requests")
        line = (f"judge spend {money}: {summary['requests']} requests, "
                f"{summary['cache_hits']} cache hits, {', '.join(tokens)}")
        if summary["not_scored_budget"]:
            line += (f"; budget reached, {summary['not_scored_budget']} verdicts not scored")
        if summary["judge_errors"]:
            line += f"; {summary['judge_errors']} judge errors"
        if summary["flagged"]:
            line += f"; {summary['flagged']} verdicts flagged"
        return line

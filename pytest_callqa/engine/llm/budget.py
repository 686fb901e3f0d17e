"""The spend budget as a hard limit: before a request is sent its worst-case cost is
reserved, and once its reply is in the reservation is settled with what it really cost.

The worst case of one attempt is its prompt bound (:func:`prompt_bound`: the request's size
in UTF-8 bytes — no tokenizer makes more tokens than bytes) at the input price, plus its
completion bound (the request's ``max_tokens`` / ``max_completion_tokens``, or one
:func:`completion_bound` adds) at the output price. A request is sent only if that fits in
what the budget has left after the settled spend and the reservations of requests in
flight, so the spend can reach the budget but not pass it — as long as the server honours
the completion bound and bills the usage it reports. With a run id the book is a
:class:`SpendLedger` file shared by every process of the run; without, it is this
process's.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..pricing import PriceTable
from .cache import acquire_file_lock, release_file_lock
from .endpoint import CallError

# Completion bounds a budgeted run adds to requests that set none (``max_tokens``): the
# worst case it reserves is only finite with one. Judge replies are a few short verdicts;
# generated outputs (a translated call, an extraction) can be long.
JUDGE_MAX_TOKENS = 2048
GENERATION_MAX_TOKENS = 4096
# Beyond the request timeout, how long a request may wait for other requests' reservations
# to be settled before they are counted as spent: a reservation outlives its request (one
# HTTP attempt, bounded by the timeout) only when the process holding it died.
SETTLE_GRACE_S = 5.0
_WAIT_FIRST_S = 0.005
_WAIT_MAX_S = 0.05


# OpenAI's reasoning models refuse ``max_tokens`` and bound the completion (reasoning
# included) with ``max_completion_tokens``; other servers know ``max_tokens``.
_REASONING_MODEL = re.compile(r"(^|/)(o\d|gpt-5)")
_BOUND_NAMES = ("max_completion_tokens", "max_tokens")


# What a reasoning model may think before it answers, on top of the reply's own bound.
REASONING_TOKENS = 8192


def bound_param(model: str, reply_tokens: int) -> dict[str, int]:
    """The completion bound of a request to ``model`` whose reply needs ``reply_tokens``:
    ``max_tokens``, or for a reasoning model ``max_completion_tokens`` with room to think."""
    if _REASONING_MODEL.search(model):
        return {_BOUND_NAMES[0]: reply_tokens + REASONING_TOKENS}
    return {_BOUND_NAMES[1]: reply_tokens}


def completion_bound(model: str, kind: str,
                     params: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """``(params, bound)``: the request's own completion bound, or ``params`` with a default
    one added (:data:`JUDGE_MAX_TOKENS` for ``kind="judge"``, else
    :data:`GENERATION_MAX_TOKENS`)."""
    for name in _BOUND_NAMES:
        value = params.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CallError(f"request parameter {name} must be a whole number >= 1, got "
                            f"{value!r}")
        return dict(params), value
    bound = JUDGE_MAX_TOKENS if kind == "judge" else GENERATION_MAX_TOKENS
    name = _BOUND_NAMES[0] if _REASONING_MODEL.search(model) else _BOUND_NAMES[1]
    return {**params, name: bound}, bound


def prompt_bound(body: Mapping[str, Any]) -> int:
    """An upper bound on the prompt tokens of a request body: its size in UTF-8 bytes as
    JSON. A token covers at least one byte, and the JSON syntax around each message outweighs
    the few tokens a chat template adds per message."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8"))


def worst_case(prices: PriceTable, model: str, body: Mapping[str, Any], bound: int) -> float:
    """The most one attempt of request ``body`` can cost, in US dollars."""
    cost = prices.cost(model, prompt_bound(body), bound)
    if cost is None:
        raise CallError(no_price_message(model))
    return cost


def no_price_message(model: str) -> str:
    return (f"a budget is set but model {model!r} has no price, so its spend cannot be "
            f"counted; add a price line such as '{model}: <input> <output>' (US dollars per "
            "million tokens)")


ReserveVerdict = Literal["go", "wait", "stop"]


def reserve_verdict(spent: float, held: float, amount: float, limit: float) -> ReserveVerdict:
    """Whether a request whose worst case costs ``amount`` may go out: ``stop`` when it
    could not fit even if every reservation still held (``held``) came back unused, ``wait``
    when it fits only if some do, else ``go``."""
    if spent + amount > limit:
        return "stop"
    if spent + held + amount > limit:
        return "wait"
    return "go"


def _book_verdict(spent: float, held: Mapping[str, tuple[float, float]], amount: float,
                  limit: float, stale_before: float) -> ReserveVerdict:
    """The reservations held (amount, when this process first saw it) since before
    ``stale_before`` count as spent — a live holder settles its own within the hold time, so
    their holder died — and the others as possibly freed. Counting every reservation held
    as spent once the asker had waited its own patience refused calls that fit: those taken
    by live calls while it waited were counted too."""
    stale = _stale(held, stale_before)
    return reserve_verdict(spent + stale, sum(a for a, _ in held.values()) - stale, amount,
                           limit)


def _stale(held: Mapping[str, tuple[float, float]], before: float) -> float:
    """What the reservations first seen before ``before`` hold."""
    return sum(amount for amount, seen in held.values() if seen < before)


class SpendLedger:
    """The budget of one run, shared by every process that reports to it.

    Text lines appended with ``O_APPEND`` (a write of a few bytes lands whole): ``R <id>
    <usd> ;`` reserves the worst-case cost of a request about to be sent, ``S <id> <usd> ;``
    settles that reservation with what the request cost. Reserving reads the ledger and
    appends under ``<name>.lock`` so two processes cannot both take the last of the budget;
    settling is a plain append. Each record starts on a fresh line and ends with ``;``, so a
    record a writer left unfinished is skipped and spoils no other. Reading is incremental:
    each process parses only what was appended since it last looked.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_suffix(".lock")
        self._offset = 0
        self._spent = 0.0
        self._held: dict[str, tuple[float, float]] = {}
        self._next = 0

    def _append(self, line: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"\n{line} ;\n".encode())
        finally:
            os.close(fd)

    def _refresh(self) -> None:
        try:
            with self.path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self._offset:
                    # Removed and started again (a new run reusing the id): read it afresh.
                    self._offset, self._spent, self._held = 0, 0.0, {}
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:
            return
        # What follows the last newline is a record still being (or never fully) written.
        complete = chunk[:chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode("utf-8", "replace").split("\n"):
            self._apply(line.split())

    def _apply(self, fields: list[str]) -> None:
        if len(fields) != 4 or fields[0] not in ("R", "S") or fields[3] != ";":
            return
        try:
            amount = float(fields[2])
        except ValueError:
            return
        if not math.isfinite(amount) or amount < 0:
            return
        if fields[0] == "R":
            # Dated when this process first reads it (its own, when it takes them).
            self._held.setdefault(fields[1], (amount, time.monotonic()))
        else:
            self._held.pop(fields[1], None)
            self._spent += amount

    @property
    def held(self) -> Mapping[str, tuple[float, float]]:
        """The reservations not settled when this process last read the ledger: amount,
        and when it first saw each (monotonic)."""
        return self._held

    def total(self) -> float:
        """What the run's settled requests cost, in US dollars."""
        self._refresh()
        return self._spent

    async def reserve(self, amount: float, limit: float, *,
                      stale_after: float) -> str | Literal["wait"] | None:
        """Reserve ``amount`` against ``limit``: the reservation's id, None when it does not
        fit, or ``"wait"`` when it would fit once reservations held now are settled; those
        this process has seen held for over ``stale_after`` seconds count as spent."""
        fd = await acquire_file_lock(self.lock_path)
        try:
            self._refresh()
            now = time.monotonic()
            verdict = _book_verdict(self._spent, self._held, amount, limit, now - stale_after)
            if verdict != "go":
                return None if verdict == "stop" else "wait"
            self._next += 1
            reservation = f"{os.getpid()}-{id(self):x}-{self._next}"
            self._append(f"R {reservation} {amount!r}")
            self._held[reservation] = (amount, now)
            return reservation
        finally:
            release_file_lock(fd)

    def settle(self, reservation: str, cost_usd: float) -> None:
        """Replace a reservation by what its request cost (0 when nothing was billed)."""
        self._append(f"S {reservation} {cost_usd!r}")

    def remove(self) -> None:
        """Delete the ledger and its lock file (the run is over)."""
        for path in (self.path, self.lock_path):
            path.unlink(missing_ok=True)


class Budget:
    """A spending limit no request can pass: each reserves its worst-case cost before it is
    sent and settles it with its real cost afterwards (see :class:`SpendLedger`, which does
    the same for every process of a run; without one the book is this process's).

    A request whose worst case does not fit waits while reservations of requests in flight
    might still free enough; a reservation held for longer than ``hold_s`` (the longest an
    attempt may hold one: the request timeout) plus ``grace_s`` counts as spent (its holder
    died). A request is refused once it cannot fit.
    """

    def __init__(self, limit_usd: float | None, ledger: SpendLedger | None,
                 hold_s: float = 60.0, grace_s: float = SETTLE_GRACE_S) -> None:
        self.limit_usd = limit_usd
        self.patience_s = hold_s + grace_s
        self._ledger = ledger
        self._spent = 0.0
        self._held: dict[str, tuple[float, float]] = {}
        self._next = 0

    def spent(self) -> float:
        """What settled requests cost (those of every process of the run with a ledger)."""
        return self._ledger.total() if self._ledger is not None else self._spent

    @property
    def shared(self) -> bool:
        """Whether :meth:`spent` is the run's (a ledger every process settles in), not only
        this process's."""
        return self._ledger is not None

    async def reserve(self, amount_usd: float) -> str | None:
        """A reservation id for a request whose worst case costs ``amount_usd``, or None when
        the budget cannot cover it. Without a limit every request may go."""
        limit = self.limit_usd
        if limit is None:
            return ""
        delay = _WAIT_FIRST_S
        # Ends: a reservation held for longer than the patience counts as spent, and new
        # ones are taken only by requests that fit.
        while True:
            verdict = await self._reserve(amount_usd, limit)
            if verdict != "wait":
                return verdict
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, _WAIT_MAX_S)

    async def _reserve(self, amount: float, limit: float) -> str | Literal["wait"] | None:
        if self._ledger is not None:
            return await self._ledger.reserve(amount, limit, stale_after=self.patience_s)
        now = time.monotonic()
        verdict = _book_verdict(self._spent, self._held, amount, limit, now - self.patience_s)
        if verdict != "go":
            return None if verdict == "stop" else "wait"
        self._next += 1
        reservation = str(self._next)
        self._held[reservation] = (amount, now)
        return reservation

    def refusal(self, worst_usd: float) -> str:
        """Why a request whose worst case costs ``worst_usd`` was not sent."""
        book = self._ledger.held if self._ledger is not None else self._held
        lost = _stale(book, time.monotonic() - self.patience_s)
        unsettled = f", ${lost:.4f} held by requests that never settled" if lost else ""
        return (f"budget of ${self.limit_usd:g} exhausted (${self.spent():.4f} spent"
                f"{unsettled}; this request could cost up to ${worst_usd:.4f}); it was not "
                "sent")

    def settle(self, reservation: str, cost_usd: float) -> None:
        """Replace ``reservation`` by what its request cost."""
        if self.limit_usd is None:
            return
        if self._ledger is not None:
            self._ledger.settle(reservation, cost_usd)
            return
        self._held.pop(reservation, None)
        self._spent += cost_usd

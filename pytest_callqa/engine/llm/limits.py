"""The limits a chat runner keeps: backoff between retries, the server's Retry-After, and
the in-process concurrency slots and rate window (the cross-process ones live in ``cache``;
the budget in ``budget``)."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: attempt ``n`` waits a uniform draw from
    ``[d/2, d]`` with ``d = min(cap, base × 2ⁿ)`` — the spread keeps workers that failed
    together from retrying together."""

    base_s: float = 0.5
    cap_s: float = 20.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        ceiling = min(self.cap_s, self.base_s * 2 ** attempt)
        return rng.uniform(ceiling / 2, ceiling)


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a server asks for: ``retry-after-ms``, or ``Retry-After`` as seconds or an
    HTTP date. None when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            value = float(millis) / 1000
            if math.isfinite(value) and value >= 0:
                return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    with contextlib.suppress(ValueError):
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class LocalSlots:
    def __init__(self, limit: int) -> None:
        self._semaphore = asyncio.Semaphore(limit)

    async def acquire(self) -> int:
        await self._semaphore.acquire()
        return 0

    def release(self, slot: int) -> None:
        self._semaphore.release()

    async def close(self) -> None:
        return None


class LocalRateWindow:
    def __init__(self, limit: int, window_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self._starts: list[float] = []

    async def acquire(self) -> None:
        while True:
            now = time.monotonic()
            self._starts = [t for t in self._starts if now - t < self.window_s]
            if len(self._starts) < self.limit:
                self._starts.append(now)
                return
            await asyncio.sleep(min(self._starts) + self.window_s - now)


# llama-cpp-python answers a request it cannot validate (a ``response_format`` type it does
# not know) with HTTP 500 and a validation error: asking again cannot change the answer, and
# the structured-reply ladder must see it as the refusal it is.
_VALIDATION_ERROR = re.compile(r"validation error", re.IGNORECASE)


def refused_as_invalid(status: int, message: str) -> bool:
    """Whether an error status is a server's refusal of the request's ``response_format``
    dressed as a server error (a 500 whose message is a validation error naming it)."""
    return status == 500 and "response_format" in message \
        and bool(_VALIDATION_ERROR.search(message))

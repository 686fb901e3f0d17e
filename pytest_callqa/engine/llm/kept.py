"""What one xdist worker of a run keeps for the others and no cache may keep: the outcome of
a call that failed or stayed unusable, a reply cut at its completion bound (transport.py),
and that the judge refused the run's key or model (a 401, 403 or 404: run/verdicts.py).
It lies in the run's exchange (``JudgeCache.run_exchange``), beside the key's reply, and goes
with the exchange when the run ends; a later run asks again."""

from __future__ import annotations

from typing import Any, Protocol

from .cache import JudgeCache

_PREFIX = "run-only-"


class Outcome(Protocol):
    """What :func:`keep` keeps of a call's outcome (transport.ChatOutcome)."""

    content: str | None
    problems: list[str]
    error: str | None
    truncated: bool
    asks: int
    usage: dict[str, float]


def keep(exchange: JudgeCache, key: str, outcome: Outcome) -> None:
    """Keep a call's outcome, with its asks and usage: the process that reads it says and
    charges what the one that sent it does ("unusable after 3 attempts", at the call's cost),
    as one process would have."""
    exchange.put(_PREFIX + key, {
        "content": outcome.content, "problems": list(outcome.problems),
        "error": outcome.error, "truncated": outcome.truncated, "asks": outcome.asks,
        "usage": dict(outcome.usage)})


def kept(exchange: JudgeCache, key: str) -> dict[str, Any] | None:
    """The fields :func:`keep` kept for ``key`` (``content``, ``problems``, ``error``,
    ``truncated``, ``asks``, ``usage``), or None: none kept, or one that is not so shaped."""
    found = exchange.get(_PREFIX + key)
    if found is None:
        return None
    content, problems, error = found.get("content"), found.get("problems"), found.get("error")
    asks, usage = found.get("asks"), found.get("usage")
    if not (isinstance(content, (str, type(None))) and isinstance(error, (str, type(None)))
            and isinstance(problems, list) and all(isinstance(p, str) for p in problems)
            and isinstance(found.get("truncated"), bool)
            and _count(asks) and isinstance(usage, dict)
            and all(_number(v) for v in usage.values())):
        return None
    return {"content": content, "problems": problems, "error": error,
            "truncated": found["truncated"], "asks": asks, "usage": usage}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_REFUSED = _PREFIX + "judge-refused"


def refuse(exchange: JudgeCache, message: str) -> None:
    """Keep that the judge cannot be used, and why (a redacted :class:`CallError`'s text)."""
    exchange.put(_REFUSED, {"message": message})


def refusal(exchange: JudgeCache) -> str | None:
    """Why another process of the run found the judge unusable, or None."""
    found = exchange.get(_REFUSED)
    message = found.get("message") if found is not None else None
    return message if isinstance(message, str) else None

"""The header's spend line and the budget's spend, worked out from the call counters the
run's processes ship (run/usage.py): tokens and cost a server did not report are unknown,
never 0, and said why."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_callqa.run.settings import Settings
from pytest_callqa.run.usage import COUNTERS, Usage, _spend, sum_kind


def shipped(requests: int, without_usage: int, prompt: float, completion: float, *,
            budget_spent: float = 0.0, shared: bool = True) -> dict[str, Any]:
    """One process's counters as it ships them: judge calls to model ``m``."""
    counters = {**dict.fromkeys(COUNTERS, 0), "requests": requests,
                "requests_without_usage": without_usage, "prompt_tokens": prompt,
                "completion_tokens": completion,
                "spent_usd": None if without_usage else 0.01}
    return {"runner": {"by_kind": {"judge": {"m": counters}},
                       "budget_spent_usd": budget_spent, "budget_shared": shared}}


def test_tokens_no_reply_reported_are_unknown_not_0() -> None:
    totals = sum_kind([shipped(1, 1, 0.0, 0.0), shipped(1, 1, 0.0, 0.0)], "judge")
    assert (totals["requests"], totals["requests_without_usage"]) == (2, 2)
    assert totals["prompt_tokens"] is None and totals["completion_tokens"] is None
    # Some replies reported theirs: those are the tokens counted, beside how many did not.
    some = sum_kind([shipped(3, 2, 10.0, 4.0)], "judge")
    assert (some["prompt_tokens"], some["completion_tokens"]) == (10.0, 4.0)
    assert sum_kind([], "judge")["prompt_tokens"] == 0


def test_the_spend_line_says_why_the_spend_is_unknown() -> None:
    some = sum_kind([shipped(3, 2, 10.0, 4.0)], "judge")
    assert _spend(some, []) == (
        "unknown (no token usage came back for 2 requests: a reply without it, a timeout or "
        "a lost connection) for 3 requests (10+4 tokens; tokens unknown for 2 of 3 requests)")
    none = sum_kind([shipped(1, 1, 0.0, 0.0)], "judge")
    assert _spend(none, ["m"]) == (
        "unknown (no price for m; no token usage came back for 1 request: a reply without "
        "it, a timeout or a lost connection) for 1 request (tokens unknown for 1 of 1 "
        "request)")
    known = sum_kind([shipped(3, 0, 10.0, 4.0)], "judge")
    assert _spend(known, []) == "$0.0100 for 3 requests (10+4 tokens)"


def test_the_budget_spent_is_the_ledgers_over_the_processes() -> None:
    # Processes sharing the ledger each read the run's total; one without it, its own calls.
    usage = Usage(Settings(), None, SimpleNamespace(built_runner=None), {})  # type: ignore[arg-type]
    usage.worker_usage = [shipped(1, 1, 0.0, 0.0, budget_spent=0.3),
                          shipped(1, 1, 0.0, 0.0, budget_spent=0.46),
                          shipped(1, 1, 0.0, 0.0, budget_spent=0.1, shared=False)]
    assert usage.budget_spent() == 0.56

"""What a chat runner counts per model and kind of call: calls, cache hits, requests,
retries, tokens, spend and the cost per call; and the usage one call reports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..pricing import PriceTable


@dataclass
class ModelUsage:
    """Counters of one model over the runner's life."""

    calls: int = 0
    cache_hits: int = 0
    damaged: int = 0
    requests: int = 0
    retries: int = 0
    reasks: int = 0
    failures: int = 0
    unusable: int = 0
    budget_stopped: int = 0
    # Requests whose token counts never came back (a reply without them, a timeout, a lost
    # connection): their tokens are in no total, their cost is unknown (the budget settled
    # each at its worst case).
    requests_without_usage: int = 0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    spent_usd: float = 0.0
    call_cost_usd: float = 0.0
    costed_calls: int = 0
    cost_known: bool = True

    def add_call(self, usage: Mapping[str, float]) -> None:
        """One finished call, with its cost when its usage was priced."""
        self.calls += 1
        if usage.get("cost_usd") is not None:
            self.call_cost_usd += usage["cost_usd"]
            self.costed_calls += 1
        elif usage:
            self.cost_known = False

    def to_dict(self) -> dict[str, Any]:
        per_1000 = (self.call_cost_usd / self.costed_calls * 1000
                    if self.cost_known and self.costed_calls else None)
        return {
            "calls": self.calls, "cache_hits": self.cache_hits, "damaged": self.damaged,
            "requests": self.requests,
            "retries": self.retries, "reasks": self.reasks, "failures": self.failures,
            "unusable": self.unusable, "budget_stopped": self.budget_stopped,
            "requests_without_usage": self.requests_without_usage,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "spent_usd": self.spent_usd if self.cost_known else None,
            "cost_per_1000_calls": per_1000,
        }


def call_usage(prices: PriceTable, model: str, prompt: float | None, completion: float | None,
               unreported: int = 0) -> dict[str, float]:
    """The usage of a call: its token counts and, when the model has a price, its cost;
    nothing of them when the counts are not both known. ``unreported`` replies of the call
    came back without token counts: a call with only those was an empty usage, which left it
    out of the judge's calls."""
    usage: dict[str, float] = {}
    if prompt is not None and completion is not None:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        cost = prices.cost(model, prompt, completion)
        if cost is not None:
            usage["cost_usd"] = cost
    if unreported:
        usage["requests_without_usage"] = float(unreported)
    return usage


def tokens_unknown(requests: float, without_usage: float) -> bool:
    """Whether no reply of ``requests`` reported its token counts: their sum is unknown, not
    0 (a server that leaves ``usage`` out)."""
    return bool(requests) and without_usage == requests

"""What model calls cost: a price table per model, in US dollars per million tokens.

The built-in prices are *defaults* copied from OpenAI's public price list (standard tier, 2025)
so a first run shows a plausible figure; prices change and proxies or self-hosted servers bill
differently, so teams should set their own (``"model: <input> <output>"`` lines). A model
without a price has an unknown cost (``None``), never a guessed one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# A dated snapshot ("gpt-4o-mini-2024-07-18") is billed like its alias ("gpt-4o-mini").
_DATED_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


class PriceError(ValueError):
    """A price line or value that cannot be used; the message quotes it."""


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million input (prompt) and output (completion) tokens."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        for value in (self.input_per_million, self.output_per_million):
            if isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise PriceError(f"a price must be a finite, non-negative number, got {value!r}")

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        return (prompt_tokens * self.input_per_million
                + completion_tokens * self.output_per_million) / 1_000_000


DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "o3-mini": ModelPrice(1.10, 4.40),
    "o4-mini": ModelPrice(1.10, 4.40),
}


def parse_price_line(line: str) -> tuple[str, ModelPrice] | None:
    """``"model: 0.15 0.60"`` → ``("model", ModelPrice(0.15, 0.60))``; None for a blank or
    ``#`` comment line. The model name may itself contain colons (``ollama`` tags such as
    ``llama3:8b``), so the prices are what follows the *last* colon."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    model, sep, rest = text.rpartition(":")
    model = model.strip()
    parts = rest.split()
    if not sep or not model:
        raise PriceError(f"price line {line.strip()!r}: expected 'model: <input> <output>' "
                         "(US dollars per million tokens)")
    if len(parts) != 2:
        raise PriceError(f"price line {line.strip()!r}: expected two prices after the colon, "
                         f"got {len(parts)}")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise PriceError(f"price line {line.strip()!r}: prices must be numbers "
                         "(US dollars per million tokens)") from None
    try:
        return model, ModelPrice(values[0], values[1])
    except PriceError as exc:
        raise PriceError(f"price line {line.strip()!r}: {exc}") from None


def _as_price(value: Any) -> ModelPrice:
    if isinstance(value, ModelPrice):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return ModelPrice(float(value[0]), float(value[1]))
    # Any price object with these named fields (a caller's own config type) is accepted.
    prompt = getattr(value, "prompt_per_million", None)
    completion = getattr(value, "completion_per_million", None)
    if prompt is not None and completion is not None:
        return ModelPrice(float(prompt), float(completion))
    raise PriceError(f"cannot read a price from {value!r}; give (input, output) per 1M tokens")


class PriceTable:
    """Prices per model: the defaults, overridden by whatever the user configured."""

    def __init__(
        self, prices: Mapping[str, Any] | None = None, *, defaults: bool = True
    ) -> None:
        self._prices: dict[str, ModelPrice] = dict(DEFAULT_PRICES) if defaults else {}
        self._user: set[str] = set()
        for model, value in (prices or {}).items():
            self._prices[model] = _as_price(value)
            self._user.add(model)

    @classmethod
    def parse(cls, lines: str | Iterable[str], *, defaults: bool = True) -> PriceTable:
        """A table from ``"model: <input> <output>"`` lines (later lines win)."""
        items = lines.splitlines() if isinstance(lines, str) else lines
        prices: dict[str, ModelPrice] = {}
        for line in items:
            parsed = parse_price_line(line)
            if parsed is not None:
                prices[parsed[0]] = parsed[1]
        return cls(prices, defaults=defaults)

    def get(self, model: str) -> ModelPrice | None:
        price = self._prices.get(model)
        if price is None:
            price = self._prices.get(_DATED_SUFFIX.sub("", model))
        return price

    def is_default(self, model: str) -> bool:
        """Whether ``model``'s price is a built-in default rather than the user's figure."""
        return self.get(model) is not None and model not in self._user

    def configured(self) -> dict[str, list[float]]:
        """The prices the user gave, by model: input and output dollars per million tokens
        (the defaults are the package version's, which a report records apart)."""
        return {model: [self._prices[model].input_per_million,
                        self._prices[model].output_per_million] for model in sorted(self._user)}

    def cost(self, model: str, prompt_tokens: float, completion_tokens: float) -> float | None:
        """The cost of one call in US dollars, or None when ``model`` has no price."""
        price = self.get(model)
        return None if price is None else price.cost(prompt_tokens, completion_tokens)

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.get(model) is not None

    def __repr__(self) -> str:
        return f"PriceTable({len(self._prices)} models, {len(self._user)} configured)"

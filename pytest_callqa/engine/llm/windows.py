"""How much a model can read: its context window, and the prompt tokens of a request counted
before it is sent, so nothing goes out that the server must reject.

Tokens are counted with tiktoken when it is installed (the encoding of OpenAI's models);
otherwise they are estimated: a digit is a token (small models' tokenizers split numbers
digit by digit: a ten-digit account number is ten tokens, three times the bytes-based
guess), a character outside ASCII one per 1.5 bytes of its UTF-8 (Chinese and Japanese
came to 1.7-1.8 tokens a character on SmolLM2's tokenizer), anything else one per three
bytes (English needs about four characters a token). The estimate errs towards refusing an
input that might fit rather than sending one the server cuts short or refuses; a server that
cuts a reply short for want of room is told apart from a reply at its bound (wire.py).
Windows of common OpenAI models are built in; any model's limit can be set (the plugin's
``--callqa-judge-max-input-tokens``), and a model with neither is not checked.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Mapping, Sequence
from typing import Any

# Context windows in tokens (prompt and completion together), by model name prefix: a dated
# snapshot ("gpt-4o-mini-2024-07-18") has its family's window.
CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
}
# Room left in the window for the reply (a judge's verdicts, a generated output).
REPLY_RESERVE_TOKENS = 4096
_BYTES_PER_TOKEN = 3
_WIDE_BYTES_PER_TOKEN = 1.5


def context_window(model: str) -> int | None:
    """The model's window from the table (longest matching prefix), or None when unknown."""
    name = model.rsplit("/", 1)[-1]
    matches = [prefix for prefix in CONTEXT_WINDOWS
               if name == prefix or name.startswith(prefix + "-")]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else None


def input_limit(model: str, override: int | None = None) -> int | None:
    """The most prompt tokens a request to ``model`` may carry (None: not checked)."""
    if override is not None:
        return override
    window = context_window(model)
    return None if window is None else window - REPLY_RESERVE_TOKENS


@functools.cache
def _encoding() -> Any:
    if importlib.util.find_spec("tiktoken") is None:
        return None
    # An optional dependency, loaded with the first count; it may need a download of its
    # encoding file, which an offline machine cannot make.
    import tiktoken

    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception:
        return None


def count_tokens(messages: Sequence[Mapping[str, Any]], *,
                 estimate: bool = False) -> tuple[int, str]:
    """The prompt tokens of ``messages`` and how they were counted (``tiktoken`` or
    ``estimate``). ``estimate=True`` always estimates: a local model's tokenizer is not
    OpenAI's, and the estimate errs on the high side for any of them."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    encoding = None if estimate else _encoding()
    if encoding is not None:
        return len(encoding.encode(text)) + 4 * len(messages), "tiktoken"
    return _estimate(text), "estimate"


def _estimate(text: str) -> int:
    """Prompt tokens of ``text`` by the estimate of the module docstring."""
    digits = sum(map(text.count, "0123456789"))
    # The characters outside ASCII, counted in C: a loop over a prompt's characters was
    # most of the time a batch took to plan its calls.
    wide = 0 if text.isascii() else len(text) - len(text.encode("ascii", "ignore"))
    # The UTF-8 bytes of the characters outside ASCII: each of the others is one byte.
    wide_bytes = len(text.encode("utf-8")) - (len(text) - wide) if wide else 0
    narrow = len(text) - wide - digits
    return digits + math.ceil(narrow / _BYTES_PER_TOKEN + wide_bytes / _WIDE_BYTES_PER_TOKEN)


def too_large(messages: Sequence[Mapping[str, Any]], model: str, limit: int | None,
              what: str, *, estimate: bool = False,
              hint: str = "--callqa-judge-max-input-tokens sets it") -> str | None:
    """Why ``messages`` must not be sent to ``model`` (None: they fit or are not checked)."""
    if limit is None:
        return None
    tokens, method = count_tokens(messages, estimate=estimate)
    if tokens <= limit:
        return None
    counted = "counted with tiktoken" if method == "tiktoken" else "estimated"
    return (f"input too large: {what} is about {tokens:,} prompt tokens ({counted}), over the "
            f"{max(limit, 0):,}-token input limit of {model} ({hint}); nothing was sent")


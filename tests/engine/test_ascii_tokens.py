"""The ASCII tokens found by blanking non-word bytes are the token pattern's."""

from __future__ import annotations

import random

import pytest

from pytest_callqa.engine.text import _ASCII_TOKEN_RE, _find_tokens


@pytest.mark.parametrize("text", [
    "Refund of 1,200.50 dollars on 3.5 kg", "abc3.5 and 3.5abc", "3. and ,5 and 1.2.3",
    "didn't_say__it", "A\x1cB\x1fC\tD\x0bE", "", "...", "x1,y2 7,a",
])
def test_ascii_tokens_are_the_token_patterns(text: str) -> None:
    assert _find_tokens(text) == tuple(_ASCII_TOKEN_RE.findall(text.lower()))


def test_random_ascii_texts_tokenise_as_the_token_pattern_does() -> None:
    rng = random.Random(13)
    pools = ("aZ09_ .,-'\t\n\x0b\x0c\x1c\x1f\x00!~", "".join(map(chr, range(128))))
    for i in range(20_000):
        text = "".join(rng.choice(pools[i % 2]) for _ in range(rng.randint(0, 24)))
        assert _find_tokens(text) == tuple(_ASCII_TOKEN_RE.findall(text.lower())), repr(text)

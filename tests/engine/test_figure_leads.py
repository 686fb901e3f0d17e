"""The figure leads' pattern finds what the plain alternation it replaced found (it only
opens on one character class, for speed)."""

import itertools
import re

from pytest_callqa.engine.anchors import _FIGURE_LEADS

_PLAIN = re.compile(r"[0-9]+|[+(]|\.(?=[0-9])")


def test_same_spans_as_the_alternation_on_every_short_string() -> None:
    for n in range(6):
        for chars in itertools.product("1+(.a ", repeat=n):
            text = "".join(chars)
            assert ([m.span() for m in _FIGURE_LEADS.finditer(text)]
                    == [m.span() for m in _PLAIN.finditer(text)]), text


def test_same_spans_on_figures() -> None:
    text = "Call +1 (977) 625-2661 by 10.30; .5 of $1,540.25. (x) 2024-03-05 ... 7."
    assert ([m.span() for m in _FIGURE_LEADS.finditer(text)]
            == [m.span() for m in _PLAIN.finditer(text)])

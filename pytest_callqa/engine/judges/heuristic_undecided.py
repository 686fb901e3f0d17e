"""What the customer said before a turn that its digits do not show — numbers in words
("five tickets"), days named relative to today ("tomorrow") — and the offline agent
rubric when such words may explain a figure: the figure is undecided, never counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..anchors import Anchor, may_be_said, numbers_said
from ..lexicon import names_relative_day
from ..tasks.agent_metrics import rubric_from_count
from ..text import tokens


class SaidBefore:
    """What the customer (or another party) said before a turn that the digits do not show:
    the numbers said in words, worked out once per turn asked about (a reply's every figure
    may ask), and whether a day was named relative to today ("tomorrow", "Friday")."""

    def __init__(self, view: Sequence[Mapping[str, Any]]) -> None:
        self.heard = [(int(e["turn"]), str(e["text"])) for e in view
                      if e["speaker"] in ("customer", "other")]
        self.by_turn: dict[int, frozenset[str]] = {}
        self.first_relative: int | None = None
        self.relative_read = False

    def __call__(self, turn: int) -> frozenset[str]:
        if turn not in self.by_turn:
            self.by_turn[turn] = numbers_said(text for at, text in self.heard if at < turn)
        return self.by_turn[turn]

    def relative_day_before(self, turn: int) -> bool:
        if not self.relative_read:
            # Read once, and only when a date is left untraced: most conversations never ask.
            self.relative_read = True
            self.first_relative = next((at for at, text in self.heard
                                        if names_relative_day(tokens(text))), None)
        return self.first_relative is not None and self.first_relative < turn

    def why_undecided(self, anchors: Sequence[Anchor], turn: int) -> str | None:
        """Why every one of ``anchors``, untraced in the digits said before ``turn``, may
        still be right — a number said in words, a date worked out from a day named
        relative to today — or None when one of them cannot be."""
        whys: set[str] = set()
        for anchor in anchors:
            if may_be_said(anchor, self(turn)):
                whys.add(_IN_WORDS)
            elif anchor.kind == "date" and self.relative_day_before(turn):
                whys.add(_RELATIVE_DAY)
            else:
                return None
        return " and ".join(sorted(whys)) or None


def rubric_undecided(sure: int, words: int, checked: int) -> float | None:
    """The rubric of ``sure`` problems plus any number of ``words`` figures that what was said
    before may explain (a number in words, "five tickets" for quantity=5; a date from
    "tomorrow"): None when it depends on them."""
    scores = {rubric_from_count(sure + k, checked) for k in range(words + 1)}
    return scores.pop() if len(scores) == 1 else None


_IN_WORDS = ("the customer said that number in words before, which the offline check cannot "
             "read")
_RELATIVE_DAY = ("the customer named a day relative to today before (tomorrow, Friday, next "
                 "week), which the offline check cannot turn into a date")

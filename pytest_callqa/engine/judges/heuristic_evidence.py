"""What a QA reason cites as evidence besides quotes and timestamps, for the offline judge's
evidence check: the turns it names by number ("turn 3", "turns 2-4")."""

from __future__ import annotations

import re

# "turn 3", "turns 2-4", "turns 2 to 4", "turns 2 and 5": turn numbers as the prompts show
# them, counted from 1. Only "turns" takes a second number ("turn 3 and 49 dollars" cites one).
_TURN_CITATION = re.compile(
    r"\bturn\s+(\d+)|\bturns\s+(\d+)(?:\s*(?:-|–|—|to|and|&)\s*(\d+))?", re.IGNORECASE)


def cited_turns(reason: str) -> list[int]:
    """The turn numbers ``reason`` cites, a range ("turns 2-4") by its ends: the turns
    between them exist when its ends do."""
    cited: list[int] = []
    for match in _TURN_CITATION.finditer(reason):
        cited.extend(int(number) for number in match.groups() if number is not None)
    return list(dict.fromkeys(cited))


def without_turn_citations(reason: str) -> str:
    """``reason`` with its turn citations removed: a turn's number is no figure of the call."""
    return _TURN_CITATION.sub(" ", reason)

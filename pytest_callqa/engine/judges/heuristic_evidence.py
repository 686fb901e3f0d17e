"""What a QA reason cites as evidence besides quotes and timestamps, for the offline judge's
evidence check: the turns it names by number ("turn 3", "turns 2-4") and the speaker it
gives a quote to ("Customer said "…"")."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

# "turn 3", "turns 2-4", "turns 2 to 4", "turns 2 and 5": turn numbers as the prompts show
# them, counted from 1. Only "turns" takes a second number ("turn 3 and 49 dollars" cites one).
# The word on its own: "turn" ending a hyphenated word ("a U-turn 5 minutes later", "in-turn")
# names no turn of the transcript.
_TURN_CITATION = re.compile(
    r"(?<![-\u2010\u2011])\b(?:turn\s+(\d+)|turns\s+(\d+)(?:\s*(?:-|–|—|to|and|&)\s*(\d+))?)",
    re.IGNORECASE)


def _may_cite_turns(reason: str) -> bool:
    """Whether ``reason`` may hold a :data:`_TURN_CITATION`: most reasons never say "turn",
    and the case-blind pattern costs far more to run than a lower-cased search (no letter
    but T, U, R and N matches t, u, r or n case-blind, so this misses none)."""
    return "turn" in reason.lower()


def cited_turns(reason: str) -> list[int]:
    """The turn numbers ``reason`` cites, a range ("turns 2-4") by its ends: the turns
    between them exist when its ends do."""
    if not _may_cite_turns(reason):
        return []
    cited: list[int] = []
    for match in _TURN_CITATION.finditer(reason):
        cited.extend(int(number) for number in match.groups() if number is not None)
    return list(dict.fromkeys(cited))


def without_turn_citations(reason: str) -> str:
    """``reason`` with its turn citations removed: a turn's number is no figure of the call."""
    return _TURN_CITATION.sub(" ", reason) if _may_cite_turns(reason) else reason


# Words a reason may name a party by, grouped by party: a word stands for the transcript's
# speaker of that very name, or else for its one speaker named by a word of the same group.
_PARTIES: tuple[frozenset[str], ...] = (
    frozenset({"customer", "caller", "client", "user", "patient", "consumer"}),
    frozenset({"agent", "rep", "representative", "operator", "advisor", "associate",
               "assistant", "bot"}),
)
_WORD = re.compile(r"[^\W\d_]+")
# What makes a named party the one a quote is given to: a verb of saying within two words
# of it ("the agent then said "…""), or a colon right after it ("Customer: "…""), which
# yields to a verb earlier in the sentence ("the agent told the customer: "…""). A party
# named otherwise ("Agent confirmed the customer's address "…"") gives the quote to no one,
# and so does a passive ("the customer was asked "…"": the other party said it).
_SAYS = re.compile(
    r"(?:\s+(?!(?:was|were|is|are|be|been|being|get|gets|got|gotten)\b)[^\W\d_]+){0,2}?"
    r"\s+(?:said|says|saying|stated|states|asked|asks|asking|"
    r"replied|replies|replying|answered|answers|responded|responds|told|tells|telling|"
    r"wrote|writes)\b", re.IGNORECASE)
_COLON = re.compile(r"\s*:")
_SENTENCE_END = re.compile(r"[.;!?](?:\s|$)")
# A quote listed right after one given to a speaker is that speaker's too ('the customer
# said "A", "B" and "C"'): between the two only the marks, a comma, "and"/"or" (the quote's
# own end punctuation comes first, as quotes are taken without it); and after it the
# sentence ends or the list goes on. 'And "B" was the reply' makes it the subject of a new
# clause, '"B", the agent replied' gives it to another: both stay given to no one.
_MARK = ("\"\u201c\u201d\u201e\u00ab\u00bb\u300c\u300d\u300e\u300f\uff02"
         "'\u2018\u2019\u201a\u2039\u203a")
_NEXT_IN_LIST = rf"\s*,?\s*(?:(?:and|or|&)\s+)?[{_MARK}]"
_LIST_GAP = re.compile(rf"[.!?]*[{_MARK}]{_NEXT_IN_LIST}", re.IGNORECASE)
_LIST_GOES_ON = re.compile(rf"[.!?]*[{_MARK}](?:\s*$|\s*[.;!?)]|{_NEXT_IN_LIST})",
                           re.IGNORECASE)


def quote_speakers(reason: str, quotes: Sequence[str],
                   speakers: frozenset[str]) -> list[str | None]:
    """For each of ``quotes`` (in their order in ``reason``), the transcript's speaker (of
    ``speakers``, its distinct speakers) the reason gives it to in the quote's sentence,
    since the previous quote (:data:`_SAYS`), or in a list of quotes after one given to a
    speaker (:data:`_LIST_GAP`); None when it gives it to none."""
    if not quotes:
        return []
    named_by = _speaker_words(speakers)
    named_ascii = _named_in_ascii(speakers)
    given: list[str | None] = []
    cursor = 0
    for quote in quotes:
        at = reason.find(quote, cursor)
        lead = reason[cursor:at] if at >= 0 else ""
        if (at >= 0 and given and given[-1] is not None and _LIST_GAP.fullmatch(lead)
                and _LIST_GOES_ON.match(reason, at + len(quote))):
            cursor = at + len(quote)
            given.append(given[-1])
            continue
        cursor = at + len(quote) if at >= 0 else cursor
        # Only the quote's own sentence: a party named in an earlier one is no attribution.
        sentence = _SENTENCE_END.split(lead)[-1]
        says: list[str] = []
        colon: list[str] = []
        # Of an ASCII sentence only the words that name a speaker are visited (lower-cased
        # in place: ASCII letters keep their places).
        words = (_WORD.finditer(sentence) if named_ascii is None or not sentence.isascii()
                 else named_ascii.finditer(sentence.lower()))
        for word in words:
            named = named_by.get(word[0].lower())
            if named is not None and _SAYS.match(sentence, word.end()):
                says.append(named)
            elif named is not None and _COLON.match(sentence, word.end()):
                colon.append(named)
        attributed = says or colon
        given.append(attributed[-1] if attributed else None)
    return given


@functools.lru_cache(maxsize=256)
def _named_in_ascii(speakers: frozenset[str]) -> re.Pattern[str] | None:
    """The words of a lower-cased ASCII text that :func:`_speaker_words` names, as
    :data:`_WORD` finds them (whole runs of letters, which there are a-z): what a reason's
    sentences are searched for instead of looking every word up (None when no name is
    ASCII letters, as an empty alternation would match everywhere). A pattern of lower-case
    literals is searched several times faster than a case-blind one."""
    names = sorted((word for word in _speaker_words(speakers)
                    if re.fullmatch("[a-z]+", word, re.ASCII)), key=lambda w: (-len(w), w))
    if not names:
        return None
    return re.compile(rf"(?<![a-z])(?:{'|'.join(names)})(?![a-z])")


@functools.lru_cache(maxsize=256)
def _speaker_words(speakers: frozenset[str]) -> Mapping[str, str]:
    """The words that name one of ``speakers`` (lower case): its own name, and every word of
    its party (:data:`_PARTIES`) when it is the transcript's one speaker of that party.
    Every reason of a case asks the same (one map per transcript, not one per word)."""
    # Speakers that differ only in case ("Ann", "ANN") share one lower-case name: the first
    # in code-point order stands for it. Taken in the frozenset's order, which the hash seed
    # decides, each process (an xdist worker, a rerun) could give the quote to another.
    names: dict[str, str] = {}
    for speaker in sorted(s for s in speakers if s):
        names.setdefault(speaker.lower(), speaker)
    words: dict[str, str] = {}
    for party in _PARTIES:
        matching = {s for name, s in names.items() if name in party}
        if len(matching) == 1:
            words.update(dict.fromkeys(party, matching.pop()))
    # A speaker's own name is that speaker, whatever party the word belongs to.
    words.update(names)
    return MappingProxyType(words)

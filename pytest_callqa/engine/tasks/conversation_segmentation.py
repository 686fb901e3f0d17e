"""Seed 004's segmentation proxy: how well a bot turn is cut into sentences, read offline from
its punctuation and sentence lengths (the heuristic judge's estimate of the segmentation
metric; an LLM judge reads the turn itself)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from ..core.unicode_text import has_words

# A full stop after a title or a Latin abbreviation does not end the sentence.
_ABBREVIATIONS = "".join(rf"(?<!\b{a}\.)" for a in ("Mr", "Mrs", "Ms", "Dr", "St", "vs", "etc",
                                                      r"e\.g", r"i\.e", r"a\.m", r"p\.m"))
# Sentence ends: the Latin and CJK marks, the danda and double danda (Devanagari, Bengali...),
# the Arabic full stop (Urdu) and question mark, the Armenian, Ethiopic and Myanmar full stops,
# the Ethiopic question mark and the Greek question mark.
_ENDS = ".!?…。！？\u0964\u0965\u06d4\u061f\u0589\u1362\u1367\u104b\u037e"
# Closing quotes and brackets that may follow a sentence end and stay with its sentence.
_CLOSERS = "\"'”’»)]"
_CLOSER = f"[{re.escape(_CLOSERS)}]"
# Python's look-behind has a fixed width: one branch per count of closers (up to two). The
# leading (?=\s) only fails fast: without it every character of a turn ran the fourteen
# look-behinds before failing.
_BOUNDARY = re.compile(r"(?=\s)" + _ABBREVIATIONS
                       + rf"(?:(?<=[{_ENDS}])|(?<=[{_ENDS}]{_CLOSER})"
                       rf"|(?<=[{_ENDS}]{_CLOSER}{{2}}))\s+")
_TERMINAL = re.compile(rf"[{_ENDS}]{_CLOSER}*$")
# Greek writers type the ASCII semicolon as their question mark.
_GREEK_QUESTION = "\u037e"
# Georgian Mkhedruli letters are lower case to Unicode (Mtavruli capitals exist), but
# Georgian writes every sentence in Mkhedruli: capitals are for all-caps headings only.
_CASELESS_LOWER = ("\u10d0", "\u10ff")
# Scripts written without spaces between words (the first word of their letters' Unicode
# names), with the name a reason gives them: the proxy counts words by spaces, so it cannot
# measure a sentence in them.
_UNSPACED_SCRIPTS = {
    "THAI": "Thai", "LAO": "Lao", "KHMER": "Khmer", "MYANMAR": "Myanmar",
    "TIBETAN": "Tibetan", "CJK": "Chinese (CJK)", "HIRAGANA": "Japanese (Hiragana)",
    "KATAKANA": "Japanese (Katakana)", "KATAKANA-HIRAGANA": "Japanese (Katakana)",
    "JAVANESE": "Javanese", "BALINESE": "Balinese", "TAI": "Tai", "NEW": "New Tai Lue",
}
_FIRST_UNSPACED = "\u0e00"
# No language spaces a comma or a full stop; French puts one space (often a no-break or
# narrow no-break space) before ! ? ; : so only more or another kind of space is flagged.
# Searched from the space on, with the word character behind it: (?=\s) fails fast at each
# other character (a leading \w tried the three branches at every letter).
_SPACE_BEFORE_PUNCT = re.compile(
    r"(?=\s)(?<=\w)(?:\s+[,.]|\s{2,}[!?;:]|[^\S \u00a0\u202f][!?;:])(?!\w)")
# A whitespace-delimited token holding a word character: its non-word lead, the first word
# character, the rest of the token (one findall per sentence instead of a search per token).
_WORD_TOKEN = re.compile(r"[^\s\w]*\w\S*")
# (?=[.,?!;]) fails fast where no doubled mark can start, before the look-behind and branches.
_DOUBLED = re.compile(r"(?=[.,?!;])(?<!\.)(?:\.\.(?!\.)|,,|\?\?|!!|;;)")
RUN_ON_SEVERE = 40
RUN_ON_MAJOR = 25
UNSEGMENTED_MAJOR = 15
# A "sentence" of this many words or fewer is a fragment ("In your.").
FRAGMENT_WORDS = 2


@dataclass
class SegmentationCheck:
    """The proxy's score, or None with ``why_not`` when it cannot measure the turn."""

    score: int | None
    issues: list[str] = field(default_factory=list)
    sentences: int = 0
    longest: int = 0
    why_not: str | None = None


def _unspaced_script(text: str) -> str | None:
    """The script without word spacing that a quarter or more of ``text``'s letters are in
    (the most used of them), or None. A letter of these scripts stands for a syllable or a
    word where a spaced script spends about five on a word, so a quarter of the letters is
    already most of the words; NFKC first folds half-width Katakana into Katakana."""
    if not text or max(text) < _FIRST_UNSPACED:
        # Every letter of those scripts lies above Thai's first code point: a text with no
        # character past it (most turns) needs no look at each character's name.
        return None
    scripts = Counter(unicodedata.name(ch, "").split(" ", 1)[0]
                      for ch in unicodedata.normalize("NFKC", text)
                      if unicodedata.category(ch).startswith("L"))
    unspaced = Counter({name: n for name, n in scripts.items() if name in _UNSPACED_SCRIPTS})
    if not unspaced or 4 * sum(unspaced.values()) < sum(scripts.values()):
        return None
    return _UNSPACED_SCRIPTS[unspaced.most_common(1)[0][0]]


def _mostly_greek(text: str) -> bool:
    """Whether more than half of ``text``'s letters are Greek (basic or extended block)."""
    if max(text) < "\u0370":
        return False
    letters = [ch for ch in text if ch.isalpha()]
    greek = sum(1 for ch in letters if "\u0370" <= ch <= "\u03ff" or "\u1f00" <= ch <= "\u1fff")
    return 2 * greek > len(letters)


def _starts_lower(text: str) -> bool:
    """Whether ``text`` starts with a lower-case letter of a script whose sentences start
    with a capital."""
    first = text.lstrip()[:1]
    return (first.islower() and first.upper() != first
            and not _CASELESS_LOWER[0] <= first <= _CASELESS_LOWER[1])


def _word_count(text: str) -> int:
    """Words in ``text``; a token of punctuation only (French's detached ``?``) is none."""
    return len(_WORD_TOKEN.findall(text))


def _sentences(text: str) -> list[str]:
    """``text`` cut at its sentence ends. A piece starting in lower case after a closing
    quote stays with the quote: that is the sentence going on (`"Stop!" he said.`)."""
    sentences: list[str] = []
    for piece in _BOUNDARY.split(text):
        if not piece.strip():
            continue
        if sentences and sentences[-1][-1] in _CLOSERS and _starts_lower(piece):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return sentences


def segmentation_proxy(text: str) -> SegmentationCheck:
    """Segmentation from punctuation and sentence lengths, on the seed's 1–5 scale.

    1 = no letter or digit at all (the seed's missing text), a run-on sentence over 40
    words, or a turn of 4+ sentences that are all fragments
    (two words or fewer); 2 = a sentence over 25 words, 15+ words without any sentence end,
    3+ sentences of which three quarters are fragments, or two or more sentences that start
    in lower case after a boundary (wrong splits); 3 = two or more minor issues; 4 = one;
    5 = none. Minor issues:
    no closing punctuation (3+ words), a lower-case start, a space before punctuation
    (before `! ? ; :` only other than French's one space), doubled punctuation, one wrong
    split. Words are tokens holding a letter or digit; a sentence end may be followed by
    closing quotes or brackets. This measures the form only — a judge is needed
    for whether the breaks fall where the meaning does. A turn written mostly in a script
    without spaces between words (Thai, Lao, Khmer, Myanmar, Chinese, Japanese...) is not
    scored: its words cannot be counted by spaces.
    """
    if not has_words(text):
        # Seed 004 fails a turn with no text at 1; a turn of "..." or an emoji has no
        # sentence to cut either, and zero words would otherwise meet no issue and score 5.
        return SegmentationCheck(1, ["empty turn" if not text.strip()
                                     else "no words: the turn has no letter or digit"])
    script = _unspaced_script(text)
    if script is not None:
        return SegmentationCheck(None, why_not=(
            f"written in {script} script, which puts no spaces between words: the proxy "
            "counts words by spaces and cannot measure its sentences"))
    if ";" in text and _mostly_greek(text):
        text = text.replace(";", _GREEK_QUESTION)
    sentences = _sentences(text.strip())
    lengths = [_word_count(s) for s in sentences]
    word_count = sum(lengths)
    longest = max(lengths)
    fragments = sum(1 for n in lengths if n <= FRAGMENT_WORDS)
    wrong_splits = sum(1 for s in sentences[1:] if _starts_lower(s))
    has_end = bool(_TERMINAL.search(text.strip()))
    severe, major, minor = [], [], []
    if longest > RUN_ON_SEVERE:
        severe.append(f"run-on sentence of {longest} words")
    elif longest > RUN_ON_MAJOR:
        major.append(f"long sentence of {longest} words")
    elif len(sentences) == 1 and not has_end and word_count >= UNSEGMENTED_MAJOR:
        major.append(f"{word_count} words without any sentence boundary")
    if len(sentences) >= 4 and fragments == len(sentences):
        severe.append(f"all {len(sentences)} sentences are fragments")
    elif len(sentences) >= 3 and fragments * 4 >= 3 * len(sentences):
        major.append(f"{fragments} of {len(sentences)} sentences are fragments")
    if wrong_splits >= 2:
        major.append(f"{wrong_splits} sentences start in lower case after a boundary")
    elif wrong_splits == 1:
        minor.append("one sentence starts in lower case after a boundary")
    if not has_end and word_count >= 3:
        minor.append("no closing punctuation")
    if _starts_lower(text):
        minor.append("starts in lower case")
    if _SPACE_BEFORE_PUNCT.search(text):
        minor.append("space before punctuation")
    if _DOUBLED.search(text):
        minor.append("doubled punctuation")
    if severe:
        score = 1
    elif major:
        score = 2
    else:
        score = {0: 5, 1: 4}.get(len(minor), 3)
    return SegmentationCheck(score, severe + major + minor, len(sentences), longest)



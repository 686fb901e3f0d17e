"""Seed 004's segmentation proxy: how well a bot turn is cut into sentences, read offline from
its punctuation and sentence lengths (the heuristic judge's estimate of the segmentation
metric; an LLM judge reads the turn itself)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

# A full stop after a title or a Latin abbreviation does not end the sentence.
_ABBREVIATIONS = "".join(rf"(?<!\b{a}\.)" for a in ("Mr", "Mrs", "Ms", "Dr", "St", "vs", "etc",
                                                      r"e\.g", r"i\.e", r"a\.m", r"p\.m"))
# Sentence ends: the Latin and CJK marks, the danda and double danda (Devanagari, Bengali...),
# the Arabic full stop (Urdu) and question mark, the Armenian, Ethiopic and Myanmar full stops
# and the Ethiopic question mark.
_ENDS = ".!?…。！？\u0964\u0965\u06d4\u061f\u0589\u1362\u1367\u104b"
_BOUNDARY = re.compile(_ABBREVIATIONS + rf"(?<=[{_ENDS}])\s+")
_TERMINAL = re.compile(rf"[{_ENDS}][\"'”’)\]]*$")
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
_SPACE_BEFORE_PUNCT = re.compile(r"\w\s+[,.!?;:](?!\w)")
_DOUBLED = re.compile(r"(?<!\.)(?:\.\.(?!\.)|,,|\?\?|!!|;;)")
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


def segmentation_proxy(text: str) -> SegmentationCheck:
    """Segmentation from punctuation and sentence lengths, on the seed's 1–5 scale.

    1 = a run-on sentence over 40 words, or a turn of 4+ sentences that are all fragments
    (two words or fewer); 2 = a sentence over 25 words, 15+ words without any sentence end,
    3+ sentences of which three quarters are fragments, or two or more sentences that start
    in lower case after a boundary (wrong splits); 3 = two or more minor issues; 4 = one;
    5 = none. Minor issues:
    no closing punctuation (3+ words), a lower-case start, a space before punctuation,
    doubled punctuation, one wrong split. This measures the form only — a judge is needed
    for whether the breaks fall where the meaning does. A turn written mostly in a script
    without spaces between words (Thai, Lao, Khmer, Myanmar, Chinese, Japanese...) is not
    scored: its words cannot be counted by spaces.
    """
    words = text.split()
    if not words:
        return SegmentationCheck(1, ["empty turn"])
    script = _unspaced_script(text)
    if script is not None:
        return SegmentationCheck(None, why_not=(
            f"written in {script} script, which puts no spaces between words: the proxy "
            "counts words by spaces and cannot measure its sentences"))
    sentences = [s for s in _BOUNDARY.split(text.strip()) if s.strip()]
    lengths = [len(s.split()) for s in sentences]
    longest = max(lengths)
    fragments = sum(1 for n in lengths if n <= FRAGMENT_WORDS)
    wrong_splits = sum(1 for s in sentences[1:] if s.lstrip()[:1].islower())
    has_end = bool(_TERMINAL.search(text.strip()))
    severe, major, minor = [], [], []
    if longest > RUN_ON_SEVERE:
        severe.append(f"run-on sentence of {longest} words")
    elif longest > RUN_ON_MAJOR:
        major.append(f"long sentence of {longest} words")
    elif len(sentences) == 1 and not has_end and len(words) >= UNSEGMENTED_MAJOR:
        major.append(f"{len(words)} words without any sentence boundary")
    if len(sentences) >= 4 and fragments == len(sentences):
        severe.append(f"all {len(sentences)} sentences are fragments")
    elif len(sentences) >= 3 and fragments * 4 >= 3 * len(sentences):
        major.append(f"{fragments} of {len(sentences)} sentences are fragments")
    if wrong_splits >= 2:
        major.append(f"{wrong_splits} sentences start in lower case after a boundary")
    elif wrong_splits == 1:
        minor.append("one sentence starts in lower case after a boundary")
    if not has_end and len(words) >= 3:
        minor.append("no closing punctuation")
    if text.strip()[:1].islower():
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



"""Text primitives shared by the metrics: normalisation, tokens, phrases, quotes, timestamps
and fuzzy support (factual anchors are in ``anchors``).

Everything here is deterministic and script-aware: call transcripts mix English with Hindi
and other Indic languages, whose words carry combining marks that Python's ``\\w`` does not
treat as word characters, so the character classes below are built from Unicode
categories instead.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
from rapidfuzz import fuzz, process

from .core.memo import batch_memoised
from .lexicon import STOPWORDS
from .unicode_ranges import RANGES, UNIDATA_VERSION

# Combining marks, punctuation and decimal digits only occur in planes 0, 1 and 14 (planes
# 2-3 hold CJK ideographs, 15-16 private use); scanning those three keeps the import cheap
# compared with walking all 1.1M code points.
_SCANNED_PLANES: tuple[range, ...] = (range(0x0, 0x20000), range(0xE0000, 0xE1000))


def scan_categories() -> dict[str, list[int]]:
    """Code points of the categories this module needs, from one pass over the planes."""
    wanted: dict[str, list[int]] = {"M": [], "P": [], "Nd": []}
    for plane in _SCANNED_PLANES:
        for cp in plane:
            category = unicodedata.category(chr(cp))
            if category[0] in "MP":
                wanted[category[0]].append(cp)
            elif category == "Nd":
                wanted["Nd"].append(cp)
    return wanted


def _char_class(code_points: Iterable[int]) -> str:
    """A regex character-class body covering ``code_points`` as compact ranges."""
    parts: list[str] = []
    ordered = sorted(code_points)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        lo, hi = re.escape(chr(ordered[i])), re.escape(chr(ordered[j]))
        parts.append(lo if i == j else f"{lo}-{hi}")
        i = j + 1
    return "".join(parts)


def _categories() -> dict[str, list[int]]:
    """The categories from the generated table of this Unicode version (a scan costs ~15 ms
    at every import), or scanned under another version."""
    if unicodedata.unidata_version != UNIDATA_VERSION:
        return scan_categories()
    return {category: [cp for lo, hi in spans for cp in range(lo, hi + 1)]
            for category, spans in RANGES.items()}


_CATEGORIES = _categories()
_PLANE_END = 0xFFFF
# Python's regex engine tests a character against a class's ranges beyond the Basic
# Multilingual Plane one by one, and against the rest of the class at a glance: a text with
# no character beyond the plane (nearly every text) is searched with the classes cut to
# it, for the same matches many times faster.
_BEYOND_PLANE_RE = re.compile(f"[{chr(_PLANE_END + 1)}-{chr(0x10FFFF)}]")


class _PlanePattern:
    """A regex made of character classes, compiled as it is for a text with characters
    beyond the Basic Multilingual Plane and with its classes cut to the plane for any other,
    each when first needed."""

    def __init__(self, pattern: Callable[[Callable[[Iterable[int]], str]], str]) -> None:
        """``pattern`` writes the regex given how to write a class of code points."""
        self._pattern = pattern
        self._compiled: dict[bool, re.Pattern[str]] = {}

    def for_text(self, text: str) -> re.Pattern[str]:
        beyond = _BEYOND_PLANE_RE.search(text) is not None
        compiled = self._compiled.get(beyond)
        if compiled is None:
            compiled = self._compiled[beyond] = re.compile(self._pattern(
                _char_class if beyond
                else lambda code_points: _char_class(cp for cp in code_points
                                                     if cp <= _PLANE_END)))
        return compiled


def _word_char(marks: str) -> str:
    # Letters, digits and combining marks; "_" is excluded because it separates entity names.
    return rf"(?:[^\W_]|[{marks}])"


_WORD_CHAR = _word_char(_char_class(_CATEGORIES["M"]))
NOT_AFTER_WORD = r"(?<![^\W_])"
NOT_BEFORE_WORD = r"(?![^\W_])"
# Scripts written without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar): a run
# of their letters is one token however many words it holds.
_UNSEGMENTED = ("\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
                "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f")
# Not right after a letter or digit of a script written with spaces: "退款49元" and "は4,900円"
# hold the numbers 49 and 4,900, where "A49" holds none.
NOT_AFTER_SPACED_WORD = rf"(?<![^\W_{_UNSEGMENTED}])"
UNSEGMENTED_LETTER = re.compile(f"[{_UNSEGMENTED}]")

# Every Unicode decimal digit maps to one ASCII digit, so rewriting keeps string offsets.
# Characters are replaced through a regex of the few to replace rather than str.translate,
# which looks up every character of a non-ASCII text in its table: tens of times slower.
_ASCII_DIGITS = {
    cp: str(unicodedata.digit(chr(cp))) for cp in _CATEGORIES["Nd"] if not 0x30 <= cp <= 0x39
}
_OTHER_DIGITS = _PlanePattern(lambda char_class: f"[{char_class(_ASCII_DIGITS)}]")


def _ascii_digit(match: re.Match[str]) -> str:
    return _ASCII_DIGITS[ord(match[0])]


def ascii_digits(text: str) -> str:
    """``text`` with every decimal digit written as an ASCII one."""
    # An ASCII text has none other.
    return text if text.isascii() else _OTHER_DIGITS.for_text(text).sub(_ascii_digit, text)

_DASHES = "_-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_DASHES_RE = re.compile(f"[{_char_class(map(ord, _DASHES))}]")
# Joiners and soft hyphens sit inside words without changing them; dropping them lets
# the same Indic word compare equal whether or not an editor inserted one.
_INVISIBLE_RE = re.compile("[\u00ad\u200c\u200d\u2060]")
_APOSTROPHES_RE = re.compile("['\u2019\u02bc]")
# Punctuation is dropped unless it sits between two digits, which keeps "3.5" and "1,200".
# The class comes first so the regex engine skips quickly to the candidates, and an ASCII
# text is scanned with the class's ASCII part, far smaller.
_NOT_BETWEEN_DIGITS = r"(?:(?<!\d.)|(?!\d))"
_LOOSE_PUNCT = _PlanePattern(
    lambda char_class: rf"[{char_class(_CATEGORIES['P'])}]{_NOT_BETWEEN_DIGITS}")
_ASCII_LOOSE_PUNCT_RE = re.compile(
    rf"[{_char_class(cp for cp in _CATEGORIES['P'] if cp < 0x80)}]{_NOT_BETWEEN_DIGITS}")
_TOKEN = _PlanePattern(
    lambda char_class: rf"\d+(?:[.,]\d+)+|{_word_char(char_class(_CATEGORIES['M']))}+")
_ASCII_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+")
# An ASCII text without a digit, "." or "," and a digit in a row holds no number with
# separators: its tokens are its runs of letters and digits, which blanking every other byte
# and splitting finds several times faster than the token pattern's scan, position by position.
_NUMBER_WITH_SEPARATOR_RE = re.compile(r"[0-9][.,][0-9]")
_ASCII_NON_WORD_AS_SPACE = bytes(b if b < 0x80 and chr(b).isalnum() else 0x20 for b in range(256))


@batch_memoised
def normalize(s: str) -> str:
    """NFKC, casefolded, with underscores and dashes as spaces and whitespace collapsed."""
    return _normalize(s)


def _normalize(s: str) -> str:
    folded = _DASHES_RE.sub(" ", unicodedata.normalize("NFKC", s).casefold())
    return " ".join(folded.split())


@batch_memoised
def normalize_exact(s: str) -> str:
    """NFKC, casefolded, whitespace collapsed, and nothing else: how a translation's domain
    terms and proper nouns are compared (SPEC 5.1), where "KYC-AML" and "KYC_AML" are not
    the same term handled the same way."""
    return " ".join(unicodedata.normalize("NFKC", s).casefold().split())


@batch_memoised
def normalize_loose(s: str) -> str:
    """``normalize`` without punctuation, keeping separators inside numbers."""
    # Apostrophes vanish rather than become spaces so "didn't" stays one word. A text new
    # here is nearly always new to normalize too: its memo is not asked.
    without_apostrophes = _APOSTROPHES_RE.sub("", _normalize(s))
    punctuation = (_ASCII_LOOSE_PUNCT_RE if without_apostrophes.isascii()
                   else _LOOSE_PUNCT.for_text(without_apostrophes))
    return " ".join(punctuation.sub(" ", without_apostrophes).split())


def tokens(s: str) -> list[str]:
    """Lower-cased word tokens of any script; "3.5" and "1,200" stay single tokens."""
    return list(_tokens(s))


@batch_memoised
def _tokens(s: str) -> tuple[str, ...]:
    return _find_tokens(s)


def _find_tokens(s: str) -> tuple[str, ...]:
    if s.isascii():
        # NFKC leaves ASCII as it is and casefolds it to lower case, and no combining mark or
        # invisible joiner can occur: the short pattern finds the same tokens, much faster.
        if _NUMBER_WITH_SEPARATOR_RE.search(s) is None:
            return tuple(s.lower().encode().translate(_ASCII_NON_WORD_AS_SPACE).decode().split())
        return tuple(_ASCII_TOKEN_RE.findall(s.lower()))
    text = _INVISIBLE_RE.sub("", unicodedata.normalize("NFKC", s)).casefold()
    return tuple(_TOKEN.for_text(text).findall(text))


def content_tokens(s: str) -> list[str]:
    """Tokens that carry meaning: no stopwords and no single letters (single digits stay)."""
    return list(_content_tokens(s))


@batch_memoised
def _content_tokens(s: str) -> tuple[str, ...]:
    # A claim's content words are read by several metrics of its output. Its tokens are
    # hardly ever asked for apart: their memo is not asked.
    return tuple([t for t in _find_tokens(s)
                  if t not in STOPWORDS and (len(t) > 1 or t.isdecimal())])


def token_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the two texts' :func:`units` (a run of a script written
    without spaces as its character pairs), as the family matching compares them; 0.0 when
    either has no word: a text without one matches nothing."""
    return set_jaccard(frozenset(units(a)), frozenset(units(b)))


def set_jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets; 0.0 when either is empty."""
    return len(a & b) / len(a | b) if a and b else 0.0


_WORD_CHAR_RE = re.compile(_WORD_CHAR)


def contains_phrase(haystack: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as whole words; an empty needle never does.
    Between two letters of a script written without spaces (退款 in 我要退款) there is no
    word boundary to ask for: there, an occurrence is enough. An apostrophe also ends a word
    (visa in "Visa's fee", avion in "l'avion"), except in the negation n't, so that "don"
    is not said in "don't"."""
    n = normalize_loose(needle)
    if not n:
        return False
    for h in _phrase_haystacks(haystack):
        # str.find plus a look at the neighbours avoids compiling a pattern per needle,
        # which the Unicode word-character class makes slow.
        start = h.find(n)
        while start != -1:
            end = start + len(n)
            before = start > 0 and _joined(h, start - 1, n, 0)
            after = end < len(h) and _joined(h, end, n, len(n) - 1)
            if not before and not after:
                return True
            start = h.find(n, start + 1)
    return False


@batch_memoised
def _phrase_haystacks(haystack: str) -> tuple[str, ...]:
    """The readings of ``haystack`` :func:`contains_phrase` searches: one text is searched
    for many needles."""
    folded = normalize(haystack)
    # Loose normalisation deletes apostrophes so that "didn't" stays one word, which also
    # glues a possessive to its word ("visas"): the haystack is read a second time with
    # them as spaces.
    if not _APOSTROPHES_RE.search(folded):
        return (normalize_loose(folded),)
    return (normalize_loose(folded), normalize_loose(
        re.sub(r"(?<!n)['\u2019\u02bc]|['\u2019\u02bc](?!t\b)", " ", folded)))


def _joined(haystack: str, at: int, needle: str, edge: int) -> bool:
    """Whether the haystack's character at ``at``, beside the needle's ``edge`` character,
    continues the needle's word: both are letters or digits, neither of an unsegmented
    script."""
    return (_WORD_CHAR_RE.match(haystack, at) is not None
            and UNSEGMENTED_LETTER.match(haystack, at) is None
            and UNSEGMENTED_LETTER.match(needle, edge) is None)


# --- quotes and timestamps -------------------------------------------------------------------

# The quotation marks of the languages a judge reason may be written in: English “…”,
# German and Polish „…“ „…”, French «…», German and Danish »…«, Chinese and Japanese
# 「…」『…』, and full-width ＂…＂. A reason quoting in any of them cites evidence. A mark
# that may open as well as close (“ in German and English) cannot open a quote inside one.
_QUOTE_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r'"([^"\n]+)"'),
    re.compile("\u201c([^\u201c\u201d\n]+)\u201d"),
    re.compile("\u201e([^\u201c\u201d\n]+)[\u201c\u201d]"),
    re.compile("\u00ab([^\u00ab\u00bb\n]+)\u00bb"),
    re.compile("\u00bb([^\u00ab\u00bb\n]+)\u00ab"),
    re.compile("\u300c([^\u300d\n]+)\u300d"),
    re.compile("\u300e([^\u300f\n]+)\u300f"),
    re.compile("\uff02([^\uff02\n]+)\uff02"),
)
# An opening quote follows no letter and a closing one precedes none, and an apostrophe
# followed by a letter is part of a word, which keeps "didn't" from opening or closing.
# German ‚…‘ and the single guillemets ‹…› ›…‹ count as single quotes too.
_SINGLE_QUOTE_RES: tuple[re.Pattern[str], ...] = (
    re.compile(rf"{NOT_AFTER_WORD}'(?!\s)((?:[^'\n]|'(?=[^\W_]))+?)'{NOT_BEFORE_WORD}"),
    # In a script written without spaces a letter follows a closing ’ at once: there it
    # closes the quote, and is no apostrophe ("客服说‘我已为您退款’然后说‘请查收短信’").
    re.compile(rf"\u2018((?:[^\u2019\n]|\u2019(?=[^\W_])(?![{_UNSEGMENTED}]))+?)\u2019"
               rf"(?:{NOT_BEFORE_WORD}|(?=[{_UNSEGMENTED}]))"),
    re.compile(rf"\u201a((?:[^\u2018\u2019\n]|[\u2018\u2019](?=[^\W_]))+?)[\u2018\u2019]"
               rf"{NOT_BEFORE_WORD}"),
    re.compile("\u2039([^\u203a\n]+)\u203a"),
    re.compile("\u203a([^\u2039\n]+)\u2039"),
)
_QUOTE_OPENINGS = tuple(zip(_QUOTE_RES, ('"', "\u201c", "\u201e", "\u00ab", "\u00bb", "\u300c",
                                        "\u300e", "\uff02"), strict=True))
_SINGLE_QUOTE_OPENINGS = tuple(zip(_SINGLE_QUOTE_RES, ("'", "\u2018", "\u201a", "\u2039",
                                                       "\u203a"), strict=True))


def _is_edge_noise(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch)[0] == "P"


def _strip_span(span: str) -> str:
    start, end = 0, len(span)
    while start < end and _is_edge_noise(span[start]):
        start += 1
    while end > start and _is_edge_noise(span[end - 1]):
        end -= 1
    return span[start:end]


def extract_quotes(text: str) -> list[str]:
    """Quoted spans in order; single quotes count only around two or more words (an
    apostrophe pairs with another across a sentence), or around four or more characters of a
    script written without spaces (‘我已为您发起退款’ is one "word").

    A quotation nested inside another is part of the outer one and is not listed again.
    """
    return list(_quotes(text))


@batch_memoised
def _quotes(text: str) -> tuple[str, ...]:
    # An output's statements are searched for quotes by several metrics, a case's truth by
    # every model's.
    spans: list[tuple[int, int, str]] = []
    # A pattern whose opening mark the text lacks cannot match: most texts hold one or two
    # kinds of mark, and looking for a character is far cheaper than running a pattern.
    for pattern, opening in _QUOTE_OPENINGS:
        if opening in text:
            spans.extend((m.start(), m.end(), m[1]) for m in pattern.finditer(text))
    for pattern, opening in _SINGLE_QUOTE_OPENINGS:
        if opening in text:
            spans.extend((m.start(), m.end(), m[1]) for m in pattern.finditer(text)
                         if len(m[1].split()) >= 2
                         or (len(m[1]) >= 4 and unsegmented(m[1])))
    # Each pattern opens on a mark of its own, its matches apart: no two spans start together.
    spans.sort()
    quotes: list[str] = []
    outer_end = -1
    for start, end, body in spans:
        # A span that starts inside a quote already taken is nested in it, or opens on the
        # mark that closed it: «oui» dit-il «non» holds no quote »dit-il«.
        if start < outer_end:
            continue
        outer_end = max(outer_end, end)
        stripped = _strip_span(body)
        if len(stripped) >= 2:
            quotes.append(stripped)
    return tuple(quotes)


_TIMESTAMP_RE = re.compile(
    r"(?<![0-9:.])(?:(?P<h>[0-9]{1,2}):)?(?P<m>[0-9]{1,3}):(?P<s>[0-5][0-9])(?:\.(?P<f>[0-9]+))?"
    r"(?![0-9:])(?!\s?[ap]\.?m\b)",
    re.IGNORECASE,
)


# Every offset holds a digit, a colon and two digits ("1:05"): a text without such a run
# ("Agent said: …"), most of them, is not scanned with the full pattern.
_OFFSET_HINT = re.compile(r"[0-9]:[0-5][0-9]")


def _offset_matches(text: str) -> Iterator[re.Match[str]]:
    """The :data:`_TIMESTAMP_RE` matches of ``text`` (its digits in ASCII)."""
    # Every offset has a colon; most statements have none.
    ascii_text = ascii_digits(text) if ":" in text else ""
    return _TIMESTAMP_RE.finditer(ascii_text) if _OFFSET_HINT.search(ascii_text) else iter(())


def extract_timestamps(text: str) -> list[float]:
    """Call offsets such as "01:23", "[02:15]" or "1:02:03", in seconds.

    Clock times marked am/pm are not offsets; an unmarked "15:30" reads as 15 min 30 s.
    """
    return [_offset(m) for m in _offset_matches(text)]


def _offset(m: re.Match[str]) -> float:
    """A :data:`_TIMESTAMP_RE` match in seconds."""
    seconds = int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + int(m["s"])
    return seconds + (float(f"0.{m['f']}") if m["f"] else 0.0)


def without_timestamps(text: str, starts: Sequence[float], tolerance: float, *,
                       zero_led: bool = False) -> str:
    """``text`` with each call offset it cites blanked out (spaces, so offsets hold) when a
    turn of ``starts`` begins within ``tolerance`` seconds of it: a reason that says "at
    00:12" cites the call's timing, which its text does not hold, so the offset is no clock
    time to look for there. With ``zero_led``, only an offset written with a leading zero
    ("00:20", "03:20") or in brackets: in a statement that is not a cited reason, "10:30"
    is a clock time as much as an offset (a long call has a turn near nearly every one).
    Without ``starts`` (a call with no timings), a cited reason's offset written so is
    blanked too: no timing can check it and it is no clock time, so what it cites rests on
    its quote ("10:30" stays). A statement's (``zero_led``) stays: it states the time."""
    if ":" not in text or (zero_led and not starts):
        return text
    pieces, end = [], 0
    for m in _offset_matches(text):
        led = m.group().startswith("0") or text[max(m.start() - 1, 0)] == "["
        if (zero_led or not starts) and not led:
            continue
        if not starts or min(abs(_offset(m) - start) for start in starts) <= tolerance:
            pieces += [text[end:m.start()], " " * (m.end() - m.start())]
            end = m.end()
    return "".join([*pieces, text[end:]])


# --- fuzzy support, scripts, coverage --------------------------------------------------------


def best_fuzzy_match(
    needle: str, haystacks: Sequence[str], *, normalized: bool = False
) -> tuple[float, int]:
    """How well ``needle`` is found inside the best haystack (0-1), and that haystack's index
    (-1 when nothing matches). With ``normalized=True`` the haystacks are already
    ``normalize_loose``d, which saves the work when one transcript is searched many times.

    ``partial_ratio`` aligns the *shorter* string inside the longer one, so against a
    haystack shorter than the needle it would measure the reverse containment; such
    haystacks are scored with plain ``ratio`` instead.
    """
    return _best_fuzzy_match(needle, tuple(haystacks), normalized)


@batch_memoised
def _best_fuzzy_match(needle: str, haystacks: tuple[str, ...],
                      normalized: bool) -> tuple[float, int]:
    # One quote is looked up in one transcript by several metrics of an output.
    n = normalize_loose(needle)
    if not n:
        return 0.0, -1
    texts = haystacks if normalized else tuple(map(normalize_loose, haystacks))
    # A quote found word for word scores 100 in the first haystack that holds it and below
    # 100 in every one before: the answer the scan below gives, without aligning.
    for index, h in enumerate(texts):
        if n in h:
            return 1.0, index
    best, where = 0.0, -1
    for index, h in enumerate(texts):
        scorer = fuzz.partial_ratio if len(h) >= len(n) else fuzz.ratio
        score = scorer(n, h, score_cutoff=best)
        if score > best:
            best, where = score, index
            if best >= 100.0:
                break
    return best / 100.0, where


def fuzzy_support(needle: str, haystacks: Sequence[str]) -> float:
    """How well ``needle`` is found inside the best haystack, 0-1 (see ``best_fuzzy_match``)."""
    return best_fuzzy_match(needle, haystacks)[0]


def _script(ch: str) -> str:
    return unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]


def dominant_script(s: str) -> str | None:
    """The Unicode script most letters of ``s`` belong to ("LATIN", "DEVANAGARI", ...).

    Ties go to the script seen first; NFKC first folds full-width Latin into Latin.
    """
    counts = Counter(
        _script(ch) for ch in unicodedata.normalize("NFKC", s) if unicodedata.category(ch)[0] == "L"
    )
    if not counts:
        return None
    return counts.most_common(1)[0][0]


_FUZZY_TOKEN_CUTOFF = 85.0


@batch_memoised
def _vocabulary(contexts: tuple[str, ...]) -> frozenset[str]:
    return frozenset(t for c in contexts for t in tokens(c))


@batch_memoised
def _without_digits(vocabulary: frozenset[str]) -> tuple[str, ...]:
    """The words of a context that a claim's token may fuzzily match; many claims are
    checked against one context."""
    # isalpha first: a word of letters only, most of them, has no digit to look for.
    return tuple([t for t in vocabulary if t.isalpha() or not any(ch.isdigit() for ch in t)])


# Whole tokens of an unsegmented script (_UNSEGMENTED) in a claim and in a call hardly ever
# meet: their content is compared by character pairs instead.


def unsegmented(text: str) -> bool:
    """Whether ``text`` holds a letter of a script written without spaces."""
    return not text.isascii() and UNSEGMENTED_LETTER.search(text) is not None


def content_units(s: str) -> list[str]:
    """:func:`content_tokens`, a token of a script written without spaces taken as its
    character pairs: "客服确认重复扣款" is one token, which a single particle more ("确认了")
    makes another; its pairs mostly stay the same."""
    return _as_units(content_tokens(s))


def units(s: str) -> list[str]:
    """:func:`tokens`, a token of a script written without spaces taken as its character
    pairs (see :func:`content_units`): "价格担忧" and "对价格的担忧" share no token, and two
    of their six pairs."""
    # A text without such a letter, nearly every one, is its tokens.
    return _as_units(tokens(s)) if unsegmented(s) else tokens(s)


def _as_units(words: Sequence[str]) -> list[str]:
    # Most texts hold no letter of such a script: one look at all their words, not one a
    # word.
    if not unsegmented("".join(words)):
        return list(words)
    return [unit for t in words for unit in (_character_pairs(t) if unsegmented(t) else (t,))]


def _character_pairs(token: str) -> tuple[str, ...]:
    return tuple(token[i:i + 2] for i in range(len(token) - 1)) or (token,)


@batch_memoised
def _unsegmented_units(vocabulary: frozenset[str]) -> frozenset[str]:
    """The character pairs of a context's tokens in unsegmented scripts."""
    return frozenset(pair for t in vocabulary if unsegmented(t)
                     for pair in _character_pairs(t))


def content_coverage(
    claim: str, *contexts: str, vocabulary: frozenset[str] | None = None
) -> float:
    """Share of the claim's distinct content tokens that the contexts contain.

    A token also counts when some context token is at least 85 % similar (refund /
    refunded), except tokens with digits: "1200" and "12000" are different facts. A token
    of a script written without spaces (Chinese, Japanese, Thai...) counts as its character
    pairs, each found in a context token of such a script or not.
    ``vocabulary`` (the contexts' tokens, precomputed) replaces ``contexts`` when given.
    """
    claim_tokens = list(dict.fromkeys(_content_tokens(claim)))
    if not claim_tokens:
        return 1.0
    if vocabulary is None:
        vocabulary = _vocabulary(contexts)
    if unsegmented(claim):
        claim_tokens = list(dict.fromkeys(_as_units(claim_tokens)))
        vocabulary = vocabulary | _unsegmented_units(vocabulary)
    missing = [t for t in claim_tokens if t not in vocabulary]
    if not missing:
        return 1.0
    # isalpha first: a word of letters only, most of them, has no digit to look for.
    fuzzy_candidates = [t for t in missing if t.isalpha() or not any(ch.isdigit() for ch in t)]
    words = _without_digits(vocabulary) if fuzzy_candidates else ()
    rescued = 0
    if fuzzy_candidates and words:
        scores = process.cdist(
            fuzzy_candidates,
            words,
            scorer=fuzz.ratio,
            processor=None,
            score_cutoff=_FUZZY_TOKEN_CUTOFF,
            dtype=np.float32,
        )
        rescued = int(np.count_nonzero(scores.max(axis=1) >= _FUZZY_TOKEN_CUTOFF))
    return (len(claim_tokens) - len(missing) + rescued) / len(claim_tokens)

"""Text primitives shared by the metrics: normalisation, tokens, factual anchors, quotes.

Everything here is deterministic and script-aware: call transcripts mix English with Hindi
and other Indic languages, whose words carry combining marks that Python's ``\\w`` does not
treat as word characters, so the character classes below are built from Unicode
categories instead.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

import numpy as np
from rapidfuzz import fuzz, process

# Combining marks, punctuation and decimal digits only occur in planes 0, 1 and 14 (planes
# 2-3 hold CJK ideographs, 15-16 private use); scanning those three keeps the import cheap
# compared with walking all 1.1M code points.
_SCANNED_PLANES: tuple[range, ...] = (range(0x0, 0x20000), range(0xE0000, 0xE1000))


def _scan_categories() -> dict[str, list[int]]:
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


_CATEGORIES = _scan_categories()
_MARKS = _char_class(_CATEGORIES["M"])
_PUNCT = _char_class(_CATEGORIES["P"])
# Letters, digits and combining marks; "_" is excluded because it separates entity names.
_WORD_CHAR = rf"(?:[^\W_]|[{_MARKS}])"
_NOT_AFTER_WORD = r"(?<![^\W_])"
_NOT_BEFORE_WORD = r"(?![^\W_])"

# Every Unicode decimal digit maps to one ASCII digit, so translating keeps string offsets.
_ASCII_DIGITS = {
    cp: str(unicodedata.digit(chr(cp))) for cp in _CATEGORIES["Nd"] if not 0x30 <= cp <= 0x39
}

_DASHES = "_-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_DASH_TO_SPACE = str.maketrans(dict.fromkeys(_DASHES, " "))
# Joiners and soft hyphens sit inside words without changing them; dropping them lets
# the same Indic word compare equal whether or not an editor inserted one.
_INVISIBLE = str.maketrans(dict.fromkeys(["\u00ad", "\u200c", "\u200d", "\u2060"]))
_APOSTROPHES_RE = re.compile("['\u2019\u02bc]")
# Punctuation is dropped unless it sits between two digits, which keeps "3.5" and "1,200".
_LOOSE_PUNCT_RE = re.compile(rf"(?<!\d)[{_PUNCT}]|[{_PUNCT}](?!\d)")
_TOKEN_RE = re.compile(rf"\d+(?:[.,]\d+)+|{_WORD_CHAR}+")


def normalize(s: str) -> str:
    """NFKC, casefolded, with underscores and dashes as spaces and whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", s).casefold().translate(_DASH_TO_SPACE)
    return " ".join(folded.split())


def normalize_loose(s: str) -> str:
    """``normalize`` without punctuation, keeping separators inside numbers."""
    # Apostrophes vanish rather than become spaces so "didn't" stays one word.
    without_apostrophes = _APOSTROPHES_RE.sub("", normalize(s))
    return " ".join(_LOOSE_PUNCT_RE.sub(" ", without_apostrophes).split())


def tokens(s: str) -> list[str]:
    """Lower-cased word tokens of any script; "3.5" and "1,200" stay single tokens."""
    text = unicodedata.normalize("NFKC", s).translate(_INVISIBLE).casefold()
    return _TOKEN_RE.findall(text)


_STOPWORD_TEXT = """
    a an the this that these those
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    who whom whose which what
    am is are was were be been being have has had having do does did doing
    will would shall should can could may might must
    of at by for with about against between into through during before after above below
    to from up down in out on off over under again further
    and but or nor so yet if then else than because as until while
    there here when where why how all any both each few more most other some such
    no not only own same too very just also
    s t d ll m o re ve y don didn doesn isn wasn weren aren hasn haven hadn won wouldn
    shouldn couldn mustn needn
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())


def content_tokens(s: str) -> list[str]:
    """Tokens that carry meaning: no stopwords and no single letters (single digits stay)."""
    return [t for t in tokens(s) if t not in STOPWORDS and (len(t) > 1 or t.isdecimal())]


def token_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the token sets; two empty strings are identical."""
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 1.0
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


_WORD_CHAR_RE = re.compile(_WORD_CHAR)


def contains_phrase(haystack: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as whole words; an empty needle never does."""
    n = normalize_loose(needle)
    if not n:
        return False
    h = normalize_loose(haystack)
    # str.find plus a look at the neighbours avoids compiling a pattern per needle, which
    # the Unicode word-character class makes slow.
    start = h.find(n)
    while start != -1:
        end = start + len(n)
        before = start > 0 and _WORD_CHAR_RE.match(h, start - 1) is not None
        after = end < len(h) and _WORD_CHAR_RE.match(h, end) is not None
        if not before and not after:
            return True
        start = h.find(n, start + 1)
    return False


# --- anchors ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    """A checkable fact in text.

    ``value`` is canonical per kind: amounts, percents and numbers are the decimal without
    trailing zeros ("1200", "3.5"); dates are ISO "2024-03-05" when the day and month are
    unambiguous, "05/03/2024" (as written, zero-padded) when a numeric date could be read
    either way, "m03-d05" for a month and day without a year and "y2024" for a bare year;
    times are 24-hour "15:30" (":ss" appended when given); ids are their digits.
    """

    kind: str
    text: str
    value: str


_NUMERIC_KINDS = frozenset({"amount", "percent", "number"})

# Western (1,200,000) and Indian (12,00,000) digit grouping, then an optional decimal part.
_NUM = (
    r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,2}(?:,[0-9]{2})+,[0-9]{3}|[0-9]+)"
    r"(?:\.[0-9]+)?(?![0-9])"
)
# A digit right after "3.5." is a version or list tail, not a new number; after a comma
# ("1,2,3") it is the next list item.
_NUM_START = rf"{_NOT_AFTER_WORD}(?<![0-9]\.)"
_CURRENCY_BEFORE = rf"(?:US\$|[AC]\$|[$₹€£¥]|{_NOT_AFTER_WORD}(?:Rs\.?|INR|USD|EUR|GBP|rupees?))"
_CURRENCY_AFTER = (
    rf"(?:(?:dollars?|bucks|usd|rupees?|rs|inr|euros?|eur|pounds?|gbp){_NOT_BEFORE_WORD}\.?|/-)"
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# Only an abbreviation takes a dot, so "on 3rd March." does not swallow the full stop.
_MONTH = (
    r"(?P<{g}>(?:january|february|march|april|may|june|july|august|september|october"
    r"|november|december)" + _NOT_BEFORE_WORD + r"|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov"
    r"|dec)" + _NOT_BEFORE_WORD + r"\.?)"
)
_DAY = r"(?P<{g}>[0-9]{{1,2}})(?:st|nd|rd|th)?(?![0-9])"
_YEAR_TAIL = r"(?:,?\s+(?P<{g}>(?:19|20)[0-9]{{2}})(?![0-9]))?"
_MERIDIEM = r"(?P<{g}>[ap]\.?m\b\.?)"

# Listed in priority order: when two candidates start at the same offset the earlier wins.
_ANCHOR_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("amount_before", rf"{_CURRENCY_BEFORE}\s?(?P<n>{_NUM})"),
        ("amount_after", rf"{_NUM_START}(?P<n>{_NUM})\s?{_CURRENCY_AFTER}"),
        (
            "percent",
            rf"{_NUM_START}(?P<n>{_NUM})\s?(?:%|(?:percent|per\s?cent){_NOT_BEFORE_WORD})",
        ),
        (
            "date_iso",
            rf"{_NUM_START}(?P<y>[0-9]{{4}})-(?P<m>[0-9]{{1,2}})-(?P<d>[0-9]{{1,2}})(?![0-9])",
        ),
        (
            "date_numeric",
            rf"{_NUM_START}(?P<a>[0-9]{{1,2}})(?P<sep>[/.-])(?P<b>[0-9]{{1,2}})(?P=sep)"
            r"(?P<y>[0-9]{4}|[0-9]{2})(?![0-9])",
        ),
        (
            "date_month_day",
            _MONTH.format(g="mon") + r"\s+" + _DAY.format(g="d") + _YEAR_TAIL.format(g="y"),
        ),
        (
            "date_day_month",
            rf"{_NUM_START}"
            + _DAY.format(g="d")
            + r"\s+(?:of\s+)?"
            + _MONTH.format(g="mon")
            + _YEAR_TAIL.format(g="y"),
        ),
        (
            "time_clock",
            rf"{_NUM_START}(?P<h>[01]?[0-9]|2[0-3]):(?P<mi>[0-5][0-9])(?::(?P<s>[0-5][0-9]))?"
            r"(?![0-9])(?:\s?" + _MERIDIEM.format(g="ap") + ")?",
        ),
        (
            "time_hour",
            rf"{_NUM_START}(?P<h>1[0-2]|0?[1-9])\s?" + _MERIDIEM.format(g="ap"),
        ),
        (
            "phone",
            r"(?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{3}\)\s?|"
            + _NUM_START
            + r"[0-9]{3}[ .-]?)[0-9]{3}[ .-]?[0-9]{4}(?![0-9])",
        ),
        (
            "phone_in",
            rf"(?:\+[0-9]{{1,3}}[ .-]?|{_NUM_START})[0-9]{{5}}[ .-]?[0-9]{{5}}(?![0-9])",
        ),
        ("id", rf"{_NUM_START}[0-9]{{7,}}(?![0-9]|[.,][0-9])"),
        ("year", rf"{_NUM_START}(?:19|20)[0-9]{{2}}(?![0-9]|[.,][0-9])"),
        ("number", rf"{_NUM_START}(?P<n>{_NUM})"),
    )
)
_PRIORITY = {name: rank for rank, (name, _) in enumerate(_ANCHOR_PATTERNS)}


def _decimal_value(number: str) -> str:
    value = Decimal(number.replace(",", "")).normalize()
    return format(value, "f")


def _month_number(name: str) -> int:
    return _MONTHS.index(name[:3].casefold()) + 1


def _valid_day(year: int | None, month: int, day: int) -> bool:
    try:
        # 2024 is a leap year, so a yearless 29 February stays valid.
        date(year if year is not None else 2024, month, day)
    except ValueError:
        return False
    return True


def _date_value(name: str, m: re.Match[str]) -> str | None:
    if name == "date_iso":
        year, month, day = int(m["y"]), int(m["m"]), int(m["d"])
        return f"{year:04d}-{month:02d}-{day:02d}" if _valid_day(year, month, day) else None
    if name == "date_numeric":
        first, second, year = int(m["a"]), int(m["b"]), int(m["y"])
        if len(m["y"]) == 2:
            year += 2000
        if first > 12 and _valid_day(year, second, first):
            return f"{year:04d}-{second:02d}-{first:02d}"
        if second > 12 and _valid_day(year, first, second):
            return f"{year:04d}-{first:02d}-{second:02d}"
        if first <= 12 and second <= 12 and first and second:
            return f"{first:02d}/{second:02d}/{year:04d}"
        return None
    month, day = _month_number(m["mon"]), int(m["d"])
    named_year = int(m["y"]) if m["y"] else None
    if not _valid_day(named_year, month, day):
        return None
    if named_year is None:
        return f"m{month:02d}-d{day:02d}"
    return f"{named_year:04d}-{month:02d}-{day:02d}"


def _time_value(m: re.Match[str]) -> str:
    hour = int(m["h"])
    minute = int(m.groupdict().get("mi") or 0)
    meridiem = (m["ap"] or "").casefold()
    if meridiem.startswith("p") and hour < 12:
        hour += 12
    elif meridiem.startswith("a") and hour == 12:
        hour = 0
    seconds = m.groupdict().get("s")
    return f"{hour:02d}:{minute:02d}" + (f":{int(seconds):02d}" if seconds else "")


def _anchor_from(name: str, m: re.Match[str], original: str) -> Anchor | None:
    text = original[m.start() : m.end()]
    if name in ("amount_before", "amount_after"):
        return Anchor("amount", text, _decimal_value(m["n"]))
    if name == "percent":
        return Anchor("percent", text, _decimal_value(m["n"]))
    if name == "number":
        return Anchor("number", text, _decimal_value(m["n"]))
    if name.startswith("date"):
        value = _date_value(name, m)
        return Anchor("date", text, value) if value is not None else None
    if name.startswith("time"):
        return Anchor("time", text, _time_value(m))
    if name == "year":
        return Anchor("date", text, f"y{m[0]}")
    return Anchor("id", text, re.sub(r"[^0-9]", "", m[0]))


def extract_anchors(text: str) -> list[Anchor]:
    """Checkable anchors in order of appearance; each span yields one anchor, repeats one.

    Candidates of all kinds are collected, then taken left to right without overlap, the
    more specific kind winning at equal offsets ("$49" is an amount, not also a number).
    Spelled-out numbers ("forty-nine") are not anchors.
    """
    ascii_text = text.translate(_ASCII_DIGITS)
    candidates: list[tuple[int, int, int, Anchor]] = []
    for name, pattern in _ANCHOR_PATTERNS:
        for m in pattern.finditer(ascii_text):
            anchor = _anchor_from(name, m, text)
            if anchor is not None:
                candidates.append((m.start(), _PRIORITY[name], m.end(), anchor))
    candidates.sort(key=lambda c: (c[0], c[1]))
    found: dict[Anchor, None] = {}
    end = 0
    for start, _, stop, anchor in candidates:
        if start >= end:
            end = stop
            found.setdefault(anchor)
    return list(found)


def _date_readings(value: str) -> set[str]:
    """The ISO or "mMM-dDD" values a canonical date may stand for."""
    if "/" in value:
        first, second, year = value.split("/")
        return {f"{year}-{first}-{second}", f"{year}-{second}-{first}"}
    return {value}


def _month_day(iso: str) -> str:
    _, month, day = iso.split("-")
    return f"m{month}-d{day}"


def _date_supported(value: str, context: Sequence[Anchor]) -> bool:
    dates = [c.value for c in context if c.kind == "date"]
    full = {r for d in dates if not d.startswith(("y", "m")) for r in _date_readings(d)}
    if value.startswith("y"):
        return (
            value in dates
            or any(f.startswith(value[1:]) for f in full)
            or any(c.kind in _NUMERIC_KINDS and c.value == value[1:] for c in context)
        )
    readings = _date_readings(value)
    yearless = {d for d in dates if d.startswith("m")}
    for reading in readings:
        if reading.startswith("m"):
            if reading in yearless or any(_month_day(f) == reading for f in full):
                return True
        elif reading in full or (
            # A full date is also backed by its day and month plus the year named apart.
            _month_day(reading) in yearless and f"y{reading[:4]}" in dates
        ):
            return True
    return False


def _has_meridiem(text: str) -> bool:
    return re.search(r"[ap]\.?m\b", text, re.IGNORECASE) is not None


def _time_supported(anchor: Anchor, context: Sequence[Anchor]) -> bool:
    for c in context:
        if c.kind != "time":
            continue
        if c.value == anchor.value:
            return True
        # "3:30" without am/pm may be either half of the day.
        hour_a, rest_a = anchor.value.split(":", 1)
        hour_c, rest_c = c.value.split(":", 1)
        if rest_a == rest_c and int(hour_a) % 12 == int(hour_c) % 12:
            bare_a = not _has_meridiem(anchor.text) and int(hour_a) <= 12
            bare_c = not _has_meridiem(c.text) and int(hour_c) <= 12
            if bare_a or bare_c:
                return True
    return False


def _ids_match(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    # A country code of up to three digits in front of the same national number.
    return len(short) >= 7 and len(long) - len(short) <= 3 and long.endswith(short)


def anchor_supported(anchor: Anchor, context: Sequence[Anchor]) -> bool:
    """Whether ``context`` states the same fact, whatever the format.

    Amounts, percents and numbers back each other by value; a bare year also counts as
    the number it is and the reverse. Ids match ids (allowing a country code prefix) and
    numbers with the same digits. A yearless date is backed by that day in any year.
    """
    kind, value = anchor.kind, anchor.value
    if kind in _NUMERIC_KINDS:
        return any(
            (c.kind in _NUMERIC_KINDS and c.value == value)
            or (c.kind == "date" and c.value == f"y{value}")
            or (c.kind == "id" and c.value == value)
            for c in context
        )
    if kind == "date":
        return _date_supported(value, context)
    if kind == "time":
        return _time_supported(anchor, context)
    if kind == "id":
        return any(
            (c.kind == "id" and _ids_match(value, c.value))
            or (c.kind == "number" and c.value == value)
            for c in context
        )
    return any(c.kind == kind and c.value == value for c in context)


def unsupported_anchors(text: str, *contexts: str) -> list[Anchor]:
    """Anchors of ``text`` that none of ``contexts`` supports."""
    context = [a for c in contexts for a in extract_anchors(c)]
    return [a for a in extract_anchors(text) if not anchor_supported(a, context)]


# --- quotes and timestamps -------------------------------------------------------------------

_QUOTE_RES: tuple[re.Pattern[str], ...] = (
    re.compile(r'"([^"\n]+)"'),
    re.compile("\u201c([^\u201d\n]+)\u201d"),
    re.compile("\u00ab([^\u00bb\n]+)\u00bb"),
)
# An opening quote follows no letter and a closing one precedes none, and an apostrophe
# followed by a letter is part of a word, which keeps "didn't" from opening or closing.
_SINGLE_QUOTE_RES: tuple[re.Pattern[str], ...] = (
    re.compile(rf"{_NOT_AFTER_WORD}'(?!\s)((?:[^'\n]|'(?=[^\W_]))+?)'{_NOT_BEFORE_WORD}"),
    re.compile(rf"\u2018((?:[^\u2019\n]|\u2019(?=[^\W_]))+?)\u2019{_NOT_BEFORE_WORD}"),
)


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
    """Quoted spans in order; single quotes count only around two or more words.

    A quotation nested inside another is part of the outer one and is not listed again.
    """
    spans: list[tuple[int, int, str]] = []
    for pattern in _QUOTE_RES:
        spans.extend((m.start(), m.end(), m[1]) for m in pattern.finditer(text))
    for pattern in _SINGLE_QUOTE_RES:
        spans.extend(
            (m.start(), m.end(), m[1]) for m in pattern.finditer(text) if len(m[1].split()) >= 2
        )
    spans.sort(key=lambda s: (s[0], -s[1]))
    quotes: list[str] = []
    outer_end = -1
    for _, end, body in spans:
        if end <= outer_end:
            continue
        outer_end = max(outer_end, end)
        stripped = _strip_span(body)
        if len(stripped) >= 2:
            quotes.append(stripped)
    return quotes


_TIMESTAMP_RE = re.compile(
    r"(?<![0-9:.])(?:(?P<h>[0-9]{1,2}):)?(?P<m>[0-9]{1,3}):(?P<s>[0-5][0-9])(?:\.(?P<f>[0-9]+))?"
    r"(?![0-9:])(?!\s?[ap]\.?m\b)",
    re.IGNORECASE,
)


def extract_timestamps(text: str) -> list[float]:
    """Call offsets such as "01:23", "[02:15]" or "1:02:03", in seconds.

    Clock times marked am/pm are not offsets; an unmarked "15:30" reads as 15 min 30 s.
    """
    found: list[float] = []
    for m in _TIMESTAMP_RE.finditer(text.translate(_ASCII_DIGITS)):
        seconds = int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + int(m["s"])
        found.append(seconds + (float(f"0.{m['f']}") if m["f"] else 0.0))
    return found


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
    n = normalize_loose(needle)
    if not n:
        return 0.0, -1
    best, where = 0.0, -1
    for index, haystack in enumerate(haystacks):
        h = haystack if normalized else normalize_loose(haystack)
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


def content_coverage(
    claim: str, *contexts: str, vocabulary: frozenset[str] | None = None
) -> float:
    """Share of the claim's distinct content tokens that the contexts contain.

    A token also counts when some context token is at least 85 % similar (refund /
    refunded), except tokens with digits: "1200" and "12000" are different facts.
    ``vocabulary`` (the contexts' tokens, precomputed) replaces ``contexts`` when given.
    """
    claim_tokens = list(dict.fromkeys(content_tokens(claim)))
    if not claim_tokens:
        return 1.0
    if vocabulary is None:
        vocabulary = frozenset(t for c in contexts for t in tokens(c))
    missing = [t for t in claim_tokens if t not in vocabulary]
    fuzzy_candidates = [t for t in missing if not any(ch.isdigit() for ch in t)]
    words = [t for t in vocabulary if not any(ch.isdigit() for ch in t)]
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

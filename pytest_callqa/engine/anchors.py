"""Anchors: the checkable facts of a text (amounts, percentages, dates, times, numbers and
identifiers), extracted with their normalised values and compared with what a context
supports — the offline judge's and the grounding family's notion of a fabricated fact."""

from __future__ import annotations

import operator
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from .core.memo import batch_memoised
from .lexicon import MONTH_NAMES, han_numbers, numbers_in_words
from .patterns import found_at, matches_at, prefix_tree
from .text import NOT_AFTER_SPACED_WORD, NOT_AFTER_WORD, NOT_BEFORE_WORD, ascii_digits, tokens


@dataclass(frozen=True)
class Anchor:
    """A checkable fact in text.

    ``value`` is canonical per kind: amounts, percents and numbers are the decimal without
    trailing zeros ("1200", "3.5"); dates are ISO "2024-03-05" when the day and month are
    unambiguous, "05/03/2024" (as written, zero-padded) when a numeric date could be read
    either way, "m03-d05" for a month and day without a year and "y2024" for a bare year;
    times are 24-hour "15:30" (":ss" appended when given); ids are their digits.
    ``other`` is a number's second reading when its writing has two: "1.540" is 1.54 in
    English and 1540 where a dot groups thousands (Spanish, German).
    """

    kind: str
    text: str
    value: str
    other: str = ""


NUMERIC_KINDS = frozenset({"amount", "percent", "number"})

# A decimal without its leading zero (".5%"), its dot after no word and no dot ("No.5",
# "3.5.2" and "..." are none): read from its digits, ".5%" was a 5% fee.
LEADING_DOT_DECIMAL = r"(?<![^\W_])(?<!\.)\.[0-9]+"
# Western (1,200,000) and Indian (12,00,000) digit grouping, then an optional decimal part;
# or a leading-dot decimal.
_NUM = (
    r"(?:(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,2}(?:,[0-9]{2})+,[0-9]{3}|[0-9]+)"
    rf"(?:\.[0-9]+)?|{LEADING_DOT_DECIMAL})(?![0-9])"
)
# Or as Spanish, French and German write them: a dot or a space grouping thousands where a
# comma marks the decimals (23.509,52; 1.540.000; 1 540,00 €), or a comma before the cents of
# an amount in a currency written so (49,99 €; R$ 49,99; 12,5 % with its French space) —
# tried only on a text that holds such a number (_EURO_HINT), as tried first on every number
# it cost the engine ~5 %. A dollar, a pound or a bare "%" is no sign of that notation: "$5,10
# and $15" is a list, "option 2 100%" two figures.
_EURO_MARK = rf"\s?(?:€|(?:eur|euros?|reais){NOT_BEFORE_WORD})| %"
_EURO_NUM = (rf"(?:[0-9]{{1,3}}(?:\.[0-9]{{3}})+,[0-9]+(?![0-9])"
             rf"|[0-9]{{1,3}}(?:\.[0-9]{{3}}){{2,}}(?![0-9])"
             rf"|[0-9]{{1,3}}(?: [0-9]{{3}})+(?:,[0-9]+)?(?![0-9])(?={_EURO_MARK})"
             rf"|(?<![0-9],)[0-9]+,[0-9]{{1,2}}(?![0-9,])(?={_EURO_MARK}|%)"
             rf"|(?:(?<=€)|(?<=€ )|(?<=R\$)|(?<=R\$ ))[0-9]+,[0-9]{{1,2}}(?![0-9,])"
             rf"|{_NUM})")
_EURO_HINT = re.compile(r"[0-9]\.[0-9]{3}[.,][0-9]|[0-9],[0-9]{1,2}(?![0-9,])"
                        r"|[0-9] [0-9]{3}(?![0-9])")
# One dot before three digits: a decimal in English, thousands in Spanish or German.
# ("0.125" groups nothing: a leading zero is a decimal's.)
_TWO_READINGS = re.compile(r"[1-9][0-9]{0,2}\.[0-9]{3}")
# A digit right after "3.5." is a version or list tail, not a new number; after a comma
# ("1,2,3") it is the next list item.
_NUM_START = rf"{NOT_AFTER_SPACED_WORD}(?<![0-9]\.)"
_CURRENCY_BEFORE = rf"(?:US\$|[AC]\$|[$₹€£¥]|{NOT_AFTER_WORD}(?:Rs\.?|INR|USD|EUR|GBP|rupees?))"
_CURRENCY_AFTER = (
    rf"(?:(?:dollars?|bucks|usd|rupees?|rs|inr|euros?|eur|pounds?|gbp){NOT_BEFORE_WORD}\.?|/-)"
)
# A scale word after a figure multiplies it ("$3 million", "40 billion", "5 lakh"); an
# abbreviation ("$2k", "$3M", "$1.5bn") only after a figure with its currency written before
# it, as after a bare number "5 m" is five metres and "5k" a run. Unread, "$3 million" was 3,
# backed by a context's "$3 billion" and not by its "$3,000,000".
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12,
          "lakh": 10**5, "crore": 10**7, "k": 10**3, "m": 10**6, "mn": 10**6, "b": 10**9,
          "bn": 10**9}
SCALE_WORDS = "thousand|million|billion|trillion|lakhs?|crores?"
_SCALE = rf"(?:\s?(?P<scale>{SCALE_WORDS}){NOT_BEFORE_WORD})?"
_SCALE_AFTER_CURRENCY = (rf"(?:(?:\s?(?P<scale>{SCALE_WORDS}|bn|mn)|(?P<abbr>[kmb]))"
                         rf"{NOT_BEFORE_WORD})?")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# The other languages' names are written in full (lexicon.MONTH_NAMES), longest first.
_ENGLISH_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
                   "september", "october", "november", "december")


def _alternation(names: Iterable[str]) -> str:
    """``names`` as a regular expression's alternatives, the longest first (so "mayo" is
    tried before "may")."""
    return "|".join(sorted(names, key=len, reverse=True))


# Other languages' month names that are English words or names too ("5 Mars bars", "2 Mayo
# Clinic bills", "Julio 15"): a month only after "de", German's dot or a French "le 5",
# "au 12", "1er", or before a year.
_WORDLIKE_MONTHS = ("mars", "mai", "mayo", "julio", "abril", "avril")
_WORDLIKE = _alternation(_WORDLIKE_MONTHS)
_PLAIN_MONTHS = _alternation(set(MONTH_NAMES) - set(_ENGLISH_MONTHS) - set(_WORDLIKE_MONTHS))
_YEAR_AHEAD = r",?\s+(?:del?\s+)?(?:19|20)[0-9]{{2}}"
_GUARDED_MONTHS = (
    r"(?:(?<=de )|(?<=\. )|(?<=1er )|(?<=le [0-9] )|(?<=le [0-9]{{2}} )|(?<=au [0-9] )"
    r"|(?<=au [0-9]{{2}} ))(?:" + _WORDLIKE + ")|(?:" + _WORDLIKE + ")(?=" + _YEAR_AHEAD + ")")
# Month first ("julio 15 de 2024") only with the day and a year after it.
_GUARDED_FIRST = "(?:" + _WORDLIKE + r")(?=\s+[0-9]{{1,2}}" + _YEAR_AHEAD + ")"
# German's "5. März" dot may come before any name German spells (April and August too), but
# not before an English-only word: "charged twice, 12. May I…" is no date.
_DOTTED_MONTHS = _alternation(MONTH_NAMES)
# Only an abbreviation takes a dot, so "on 3rd March." does not swallow the full stop.
_ABBREVIATED = (NOT_BEFORE_WORD + r"|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)"
                + NOT_BEFORE_WORD + r"\.?)")
# The month-first pattern asks for English names, and another pattern for the others
# ("enero 15 de 2024"), run only on a text that holds one (_OTHER_MONTH_RE): tried before
# every word of every text, 75 names tripled that pattern's time.
_MONTH_EN = r"(?P<{g}>(?:" + "|".join(_ENGLISH_MONTHS) + ")" + _ABBREVIATED
_MONTH_OTHER = (NOT_AFTER_WORD + r"(?P<{g}>(?:" + _PLAIN_MONTHS + "|" + _GUARDED_FIRST + ")"
                + NOT_BEFORE_WORD + ")")
_MONTH = (r"(?P<{g}>(?:" + "|".join(_ENGLISH_MONTHS) + "|" + _PLAIN_MONTHS + "|"
          + _GUARDED_MONTHS + ")" + _ABBREVIATED)
_DAY = r"(?P<{g}>[0-9]{{1,2}})(?:st|nd|rd|th|er|º|ª)?(?![0-9])"
# "5 de marzo de 2024", "5 de março de 2024", "5 de marzo del 2024".
_YEAR_TAIL = r"(?:,?\s+(?:del?\s+)?(?P<{g}>(?:19|20)[0-9]{{2}})(?![0-9]))?"
_MERIDIEM = r"(?P<{g}>[ap]\.?m\b\.?)"

def _patterns(num: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The anchor patterns with ``num`` for a number, in priority order: when two candidates
    start at the same offset the earlier wins."""
    return tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
        ("amount_before",
         rf"{_CURRENCY_BEFORE}\s?(?P<minus>-)?(?P<n>{num}){_SCALE_AFTER_CURRENCY}"),
        ("amount_after", rf"{_NUM_START}(?P<n>{num}){_SCALE}\s?{_CURRENCY_AFTER}"),
        ("percent",
         rf"{_NUM_START}(?P<n>{num})\s?(?:%|(?:percent|per\s?cent){NOT_BEFORE_WORD})"),
        (
            # Chinese and Japanese 2024年5月1日, Korean 2024년 5월 1일 (the year optional).
            "date_cjk",
            rf"{_NUM_START}(?:(?P<y>[0-9]{{4}})\s?[年년]\s?)?(?P<m>[0-9]{{1,2}})\s?[月월]\s?"
            r"(?P<d>[0-9]{1,2})\s?[日일]",
        ),
        ("date_iso",
         rf"{_NUM_START}(?P<y>[0-9]{{4}})-(?P<m>[0-9]{{1,2}})-(?P<d>[0-9]{{1,2}})(?![0-9])"),
        ("date_numeric",
         rf"{_NUM_START}(?P<a>[0-9]{{1,2}})(?P<sep>[/.-])(?P<b>[0-9]{{1,2}})(?P=sep)"
         r"(?P<y>[0-9]{4}|[0-9]{2})(?![0-9])"),
        ("date_month_day",
         _MONTH_EN.format(g="mon") + r"\s+" + _DAY.format(g="d") + _YEAR_TAIL.format(g="y")),
        (
            "date_month_day_other",
            _MONTH_OTHER.format(g="mon") + r"\s+" + _DAY.format(g="d")
            + _YEAR_TAIL.format(g="y"),
        ),
        (
            "date_day_month",
            rf"{_NUM_START}"
            + _DAY.format(g="d")
            # "5th of March", "5 de marzo", German "5. März" (the dot before another
            # language's name only: "charged twice, 12. May I…" is no date).
            + rf"(?:\.(?=\s+(?:{_DOTTED_MONTHS}){NOT_BEFORE_WORD}))?\s+(?:(?:of|de)\s+)?"
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
        ("number", rf"{_NUM_START}(?P<n>{num}){_SCALE}"),
    ))


_ANCHOR_PATTERNS = _patterns(_NUM)
_EURO_PATTERNS = _patterns(_EURO_NUM)
_PRIORITY = {name: rank for rank, (name, _) in enumerate(_ANCHOR_PATTERNS)}
_DIGIT = re.compile("[0-9]")
# Whether a text, casefolded, holds another language's month name: the patterns that read
# them run only then, in any text (a dash or a curly quote makes an English text non-ASCII).
# One search, not a substring test per name: 75 of them per text cost the engine ~3 %.
_OTHER_MONTH_RE = re.compile(prefix_tree(set(MONTH_NAMES) - set(_ENGLISH_MONTHS)))
_OTHER_MONTH_PATTERNS = frozenset({"date_month_day_other", "date_day_month"})
# Text, in lower case, of which every match of a pattern contains one. In an ASCII text,
# where IGNORECASE pairs a letter with its other case only, a pattern none of whose
# literals occurs cannot match, and is not run.
_LITERALS: dict[str, tuple[str, ...]] = {
    "amount_before": ("$", "rs", "inr", "usd", "eur", "gbp", "rupee"),
    "amount_after": ("dollar", "bucks", "usd", "rupee", "rs", "inr", "eur", "pound", "gbp",
                     "/-"),
    "percent": ("%", "per"),
    "date_cjk": ("月", "월"),
    "date_iso": ("-",),
    "date_numeric": ("/", ".", "-"),
    "date_month_day": _MONTHS,
    "date_day_month": _MONTHS,
    "time_clock": (":",),
    "time_hour": ("am", "pm", "a.m", "p.m"),
    "year": ("19", "20"),
}
_LITERAL_SETS = {name: frozenset(literals) for name, literals in _LITERALS.items()}
_ALL_LITERALS = tuple(sorted(frozenset().union(*_LITERAL_SETS.values())))
# Digits a match of a pattern has at least (in any text: digits have no case).
_DIGITS_NEEDED = {"phone": 10, "phone_in": 10, "id": 7}
# Where a match may start, for the patterns that open on a figure: the first digit of a run
# (_NUM_START follows no digit), a decimal's leading dot, or a phone number's "+" or "(".
# Trying a pattern there alone finds the same matches: most of a text is words. One class
# first: the search skips to it in C (an alternation was tried at every character: 2x slower).
_FIGURE_LEADS = re.compile(r"[0-9+(.](?:(?<=[0-9])[0-9]*|(?<=[+(])|(?<=\.)(?=[0-9]))")
_LED_BY_WORDS = frozenset({"amount_before", "date_month_day", "date_month_day_other"})


def _decimal_value(number: str, scale: int = 1) -> str:
    number = number.replace(" ", "")
    dot = number.find(".")
    if dot != -1 and (number.find(".", dot + 1) != -1 or number.rfind(",") > dot):
        # 23.509,52 or 1.540.000: the dots group thousands, a comma marks the decimals.
        number = number.replace(".", "").replace(",", ".")
    elif dot == -1 and number.count(",") == 1 and len(number) - number.index(",") <= 3:
        # 49,99: a comma before the cents (the patterns read it so only beside a currency).
        number = number.replace(",", ".")
    value = (Decimal(number.replace(",", "")) * scale).normalize()
    # "-0" is 0 (a minus sign before a zero is no other value).
    return format(value.copy_abs() if value.is_zero() else value, "f")


def _number(kind: str, text: str, m: re.Match[str], negative: bool) -> Anchor:
    number, named = m["n"], m.groupdict().get("scale") or m.groupdict().get("abbr")
    scale = SCALES[named.strip().lower().removesuffix("s")] if named else 1
    if negative:
        scale = -scale
    other = (_decimal_value(number.replace(".", ""), scale)
             if "." in number and _TWO_READINGS.fullmatch(number) else "")
    return Anchor(kind, text, _decimal_value(number, scale), other)


def _month_number(name: str) -> int:
    folded = name.casefold()
    return MONTH_NAMES.get(folded) or _MONTHS.index(folded[:3]) + 1


def _valid_day(year: int | None, month: int, day: int) -> bool:
    try:
        # 2024 is a leap year, so a yearless 29 February stays valid.
        date(year if year is not None else 2024, month, day)
    except ValueError:
        return False
    return True


def _date_value(name: str, m: re.Match[str]) -> str | None:
    if name == "date_cjk":
        year, month, day = (int(m["y"]) if m["y"] else None), int(m["m"]), int(m["d"])
        if not _valid_day(year, month, day):
            return None
        return f"m{month:02d}-d{day:02d}" if year is None else f"{year:04d}-{month:02d}-{day:02d}"
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


_FIGURE_KINDS = {"amount_before": "amount", "amount_after": "amount", "percent": "percent",
                 "number": "number"}


def _start(name: str, m: re.Match[str]) -> int:
    """Where the anchor of ``m`` starts: a figure's at a minus sign right before it ("-$500",
    "−5%"), but for one after a word or a figure, a hyphen ("5-10", "555-1234", "ID-12").
    Dropped, the sign let "-$500" pass for a balance of $500."""
    at, text = m.start(), m.string
    if name in _FIGURE_KINDS and text[at - 1 : at] == "-" and (
            at == 1 or text[at - 2].isspace() or text[at - 2] in "([{"):
        return at - 1
    return at


def _figure(name: str, m: re.Match[str], original: str, start: int) -> Anchor:
    negative = start < m.start() or m.groupdict().get("minus") is not None
    return _number(_FIGURE_KINDS[name], original[start : m.end()], m, negative)


def _anchor_from(name: str, m: re.Match[str], original: str, start: int) -> Anchor | None:
    if name in _FIGURE_KINDS:
        return _figure(name, m, original, start)
    text = original[start : m.end()]
    if name.startswith("date"):
        value = _date_value(name, m)
        return Anchor("date", text, value) if value is not None else None
    if name.startswith("time"):
        return Anchor("time", text, _time_value(m))
    if name == "year":
        return Anchor("date", text, f"y{m[0]}")
    return Anchor("id", text, re.sub(r"[^0-9]", "", m[0]))


# Each pattern with its literals, digits needed, priority and figure kind, looked up once.
_SPECS, _EURO_SPECS = (
    tuple((name, pattern, _LITERAL_SETS.get(name), _DIGITS_NEEDED.get(name, 1), _PRIORITY[name],
           name in _FIGURE_KINDS) for name, pattern in table)
    for table in (_ANCHOR_PATTERNS, _EURO_PATTERNS))
# Candidates in order of start, then priority (no two share both); in C, not a lambda.
_BY_SPAN = operator.itemgetter(0, 1)


def extract_anchors(text: str) -> list[Anchor]:
    """Checkable anchors in order of appearance; each span yields one anchor, repeats one.

    Candidates of all kinds are collected, then taken left to right without overlap, the
    more specific kind winning at equal offsets ("$49" is an amount, not also a number).
    Spelled-out numbers ("forty-nine") are not anchors.
    """
    return list(_anchors(text))


# Full-width and Arabic separators ("１，２００", "١٬٥٤٠٫٥"), a no-break space between digit
# groups ("1 540") and the minus sign ("−500"), one character each as ASCII's: offsets hold.
_SEPARATORS = str.maketrans({"\uff0c": ",", "\uff0e": ".", "\u066c": ",", "\u066b": ".",
                             "\u00a0": " ", "\u202f": " ", "\u2212": "-"})


@batch_memoised
def _anchors(text: str) -> tuple[Anchor, ...]:
    return tuple(dict.fromkeys(anchor for anchor, _ in anchor_ends(text)))


@batch_memoised
def anchor_ends(text: str) -> tuple[tuple[Anchor, int], ...]:
    """Each anchor of ``text`` where it ends, as often as it occurs (one value's unit may
    differ between places: "up to 5 lb; this one weighs 5 kg"), once per text in a batch."""
    ascii_text = ascii_digits(text)
    if not ascii_text.isascii():
        ascii_text = ascii_text.translate(_SEPARATORS)
    if _DIGIT.search(ascii_text) is None:
        # Every pattern needs a digit; most statements have none, and scanning them with
        # all the patterns is the bulk of the work.
        return ()
    lowered = ascii_text.lower() if ascii_text.isascii() else None
    # The patterns' literals in the text, in one pass (a third of the work, tested per pattern).
    held = {lit for lit in _ALL_LITERALS if lit in lowered} if lowered is not None else set()
    # Found once a pattern asks; the leads always ("number" runs on a text with a digit).
    other_month: bool | None = None
    leads, digits = _leads(ascii_text)
    # (start, priority, end, pattern name, match, anchor): a figure's anchor is made only
    # once it wins its span (below), as most "number" matches lie inside an amount or a
    # percentage, and reading their decimals for nothing cost the family ~2 %.
    candidates: list[tuple[int, int, int, str, re.Match[str], Anchor | None]] = []
    specs = _EURO_SPECS if _EURO_HINT.search(ascii_text) else _SPECS
    for name, pattern, literals, needed, rank, figure in specs:
        if name == "date_month_day_other" or (
                lowered is not None and literals and held.isdisjoint(literals)):
            # Another language's month name runs its patterns (an English one is a literal).
            if name not in _OTHER_MONTH_PATTERNS:
                continue
            if other_month is None:
                other_month = bool(_OTHER_MONTH_RE.search(lowered or ascii_text.casefold()))
            if not other_month:
                continue
        if digits < needed:
            continue
        if name not in _LED_BY_WORDS:
            matches: Iterable[re.Match[str]] = matches_at(pattern, ascii_text, leads)
        elif name == "date_month_day" and lowered is not None:
            # An English month name opens every match, in lower case in an ASCII text.
            matches = matches_at(pattern, ascii_text, found_at(lowered, _MONTHS))
        elif name == "amount_before" and lowered is not None:
            # A currency opens every match, at its sign or first letter ("US$" two before
            # its "$", "A$" one).
            matches = matches_at(pattern, ascii_text, sorted({*found_at(lowered, _LITERALS[name]),
                *(at - back for at in found_at(lowered, ("$",)) for back in (1, 2) if at >= back)}))
        else:
            matches = pattern.finditer(ascii_text)
        for m in matches:
            start = _start(name, m)
            # A figure always reads as one; another kind may not (a 31 February is none),
            # and then takes no span.
            anchor = None if figure else _anchor_from(name, m, text, start)
            if figure or anchor is not None:
                candidates.append((start, rank, m.end(), name, m, anchor))
    candidates.sort(key=_BY_SPAN)
    found: list[tuple[Anchor, int]] = []
    end = 0
    for start, _, stop, name, m, anchor in candidates:
        if start >= end:
            end = stop
            found.append((anchor if anchor is not None else _figure(name, m, text, start), stop))
    return tuple(found)


def _leads(text: str) -> tuple[list[int], int]:
    """Where figures may start in ``text`` (:data:`_FIGURE_LEADS`), and its digits (runs)."""
    leads: list[int] = []
    digits = 0
    for m in _FIGURE_LEADS.finditer(text):
        start, end = m.span()
        leads.append(start)
        if text[start] not in "+(.":
            digits += end - start
    return leads, digits


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
            or any(c.kind in NUMERIC_KINDS and c.value == value[1:] for c in context)
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


def has_meridiem(text: str) -> bool:
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
            bare_a = not has_meridiem(anchor.text) and int(hour_a) <= 12
            bare_c = not has_meridiem(c.text) and int(hour_c) <= 12
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
    the number it is and the reverse. A negative figure needs a negative one ("-$500" is no
    balance of $500), while a positive one is backed by the negative of its value too:
    ledgers write credits, refunds and balances due as negatives ("You owe $45.20" of a
    balance of "-$45.20"); :func:`~pytest_callqa.engine.anchor_units.fact_held` leaves
    that one undecided. Ids match ids (allowing a country code prefix) and numbers with the
    same digits. A yearless date is backed by that day in any year.
    """
    kind, value = anchor.kind, anchor.value
    if kind in NUMERIC_KINDS:
        # A loop, not any() over a generator: it runs for every figure against every one
        # a text was told.
        other = anchor.other or None  # "" is no reading
        negated = None if value[0] == "-" else "-" + value
        negated_other = "-" + other if other and negated else None
        for c in context:
            if c.kind in NUMERIC_KINDS:
                if c.value == value or c.value == other or (
                        c.other and (c.other == value or c.other == other)):
                    return True
                if c.value[0] == "-" and negated and (
                        c.value == negated or c.value == negated_other or (
                            c.other and (c.other == negated or c.other == negated_other))):
                    return True
            elif c.value == value if c.kind == "id" else (
                    c.kind == "date" and c.value == f"y{value}"):
                return True
        return False
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


def said_in_words(anchors: Sequence[Anchor], said: Collection[str]) -> bool:
    """Whether every one of ``anchors`` may be a number among ``said`` (what a text says in
    words: :func:`numbers_said`; :func:`may_be_said`) — a figure the text lacks in digits,
    which it may still hold ("tres días" says 3; "forty-nine" 49)."""
    return bool(anchors) and all(may_be_said(a, said) for a in anchors)


def may_be_said(anchor: Anchor, said: Collection[str]) -> bool:
    """Whether a figure may be one of the numbers a text says in words (``said``, of
    :func:`numbers_said`): one of them, or made of them where those are read in pieces —
    "one hundred and thirty five" is read 100 and 35 (the words for one are not read), so a
    whole number from 100 up may be said when a hundred or a thousand is and its last two
    digits are (or are zeros); "forty-nine ninety-nine" is 49 and 99, so a decimal may be
    said when its whole part and its decimals are ("forty-nine fifty" for 49.50, whose value
    is 49.5). Even a number said whole is no proof ("forty-nine" is said in "two hundred
    forty-nine"): the figure is only undecided."""
    if anchor.kind not in NUMERIC_KINDS:
        return False
    for value in filter(None, (anchor.value, anchor.other)):
        whole, _, decimals = value.partition(".")
        if decimals and str(int(decimals.ljust(2, "0"))) not in said:
            continue
        number = int(whole)
        if whole in said:
            return True
        if number < 100 or {"100", "1000"}.isdisjoint(said):
            continue
        # The hundreds (or thousands) said too: one, whose words are not read, or a number
        # said ("mille" is no 4900, "one hundred" no 300).
        lead = number // 1000 if number >= 1000 and "1000" in said else number // 100
        if (lead == 1 or str(lead) in said) and (
                number % 100 == 0 or str(number % 100) in said):
            return True
    return False


def numbers_said(texts: Iterable[str]) -> frozenset[str]:
    """The whole numbers ``texts`` say in words, as anchor values."""
    return frozenset().union(*map(_numbers_said, texts))


@batch_memoised
def _numbers_said(text: str) -> frozenset[str]:
    # A customer's turns are read again for every reply after them.
    return frozenset(map(str, numbers_in_words(tokens(text)) | han_numbers(text)))

"""What a figure counts: the currency an amount names and the unit a number is followed by,
for checks that must tell "49 USD" from "49 EUR" or "5 kg" from "5 lb", which
:func:`~pytest_callqa.engine.anchors.anchor_supported` backs by value alone; and whether two
anchors state one value read strictly (:func:`anchors_equal`), as a tool argument needs."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from decimal import Decimal

from .anchors import (
    LEADING_DOT_DECIMAL,
    NUMERIC_KINDS,
    SCALE_WORDS,
    Anchor,
    anchor_ends,
    anchor_supported,
    extract_anchors,
    has_meridiem,
)
from .core.memo import batch_memoised
from .lexicon import STOPWORDS
from .text import UNSEGMENTED_LETTER, tokens

# The currency a text names, by sign, code or word; a bare "$" or "dollars" is any dollar.
# The words after the codes are Spanish, Portuguese, Italian, German, Hindi, Chinese and
# Japanese ones: a translation names the currency in its own language ("49 dólares",
# "49美元"), written inside the word that follows in the unspaced scripts.
_CURRENCY = re.compile(
    r"(?P<USD>US\$|\busd\b|美元|米ドル)|(?P<AUD>A\$|\baud\b)|(?P<CAD>C\$|\bcad\b)"
    r"|(?P<dollar>\$|\b(?:dollars?|bucks|d[oó]lar(?:es)?|dollari|dollaro)\b|ドル|डॉलर)"
    r"|(?P<EUR>€|\beur\b|\beuros?\b|欧元|歐元|ユーロ|यूरो)"
    r"|(?P<GBP>£|\bgbp\b|\bpounds?\b|英镑|英鎊)"
    r"|(?P<INR>₹|\brs\b\.?|\binr\b|\brupees?\b|\brupias?\b|रुपये|रुपए|रुपया|卢比|ルピー)"
    r"|(?P<JPY>¥|\bjpy\b|\byen\b|日元|円)", re.IGNORECASE)
_DOLLARS = frozenset({"USD", "AUD", "CAD", "dollar"})
# "pounds" is money or weight ("weighs 5 pounds"): a unit of neither for certain.
_POUND_WORD = re.compile(r"\bpounds?\b", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def currency_of(text: str) -> str | None:
    """The currency ``text`` names ("USD", "EUR", …; "dollar" for a bare dollar), if any."""
    found = _CURRENCY.search(text)
    return found.lastgroup if found is not None else None


def same_currency(a: str | None, b: str | None) -> bool:
    """Whether two values may name one currency: either names none, both the same, or one a
    bare dollar and the other a dollar of some country."""
    return a is None or b is None or a == b or ("dollar" in (a, b) and {a, b} <= _DOLLARS)


# Units a number may be followed by, in the languages the lexicon reads and in Chinese and
# Japanese; a word that is also another unit or a currency ("libras", "Pfund", "mille" —
# a thousand in French) is left out, so it is no unit for certain.
_UNITS = {
    "kg": "kg kgs kilo kilos kilogram kilograms kilogramme kilogrammes kilogramo kilogramos "
          "kilogramm quilo quilos quilograma quilogramas chilo chili chilogrammi "
          "chilogrammo किलो किलोग्राम 公斤 千克 キロ",
    "g": "g gram grams gramme grammes gramo gramos gramm grama gramas grammo grammi ग्राम "
         "克 グラム",
    "lb": "lb lbs 磅",
    "km": "km kms kilometre kilometres kilometer kilometers kilómetro kilómetros kilomètre "
          "kilomètres kilometro kilometri quilômetro quilômetros quilómetro quilómetros "
          "किलोमीटर 公里 千米 キロメートル",
    "m": "m metre metres meter meters metro metros mètre mètres metri मीटर 米 メートル",
    "mile": "mile miles milla millas milha milhas miglio miglia meile meilen मील 英里 マイル",
    "percent": "percent prozent procent porcentaje percento प्रतिशत パーセント",
}
_UNIT_OF = {word: unit for unit, words in _UNITS.items() for word in words.split()}
# The longest unit written inside a Chinese or Japanese word ("5公斤的包裹").
_LONGEST_UNSPACED = max(len(w) for w in _UNIT_OF if not w.isascii())
# How far after a figure its unit word is looked for: room for the longest unit word.
_WORD_SPAN = 24
# What ends a line (str.splitlines' breaks): no unit word of a figure is on the next line.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")

# A figure's unit: ("currency", code or None for an unnamed one), ("unit", name),
# ("word", a word no table maps), or None when no word follows it.
Unit = tuple[str, str | None] | None


# An anchor with the unit read where it stands in its text.
Figure = tuple[Anchor, Unit]


@batch_memoised
def figures_of(text: str) -> tuple[Figure, ...]:
    """The anchors of ``text`` (:func:`~pytest_callqa.engine.anchors.extract_anchors`), each
    with the unit read where it stands, once per distinct unit: the same value may count
    different things in one text ("up to 5 lb; this one weighs 5 kg")."""
    return tuple(dict.fromkeys((anchor, _unit(anchor, text, end))
                               for anchor, end in anchor_ends(text)))


def fact_held(figure: Figure, others: Sequence[Figure]) -> bool | None:
    """Whether ``others`` (the figures of another text) state ``figure`` as
    :func:`anchor_supported` does, but of its kind, currency and unit too: an amount is no
    percentage, "49 USD" no "49 EUR", "5 kg" no "5 lb". None when only a word no table maps
    may tell them apart ("5 kg" beside "5 Pfund"), or only the sign: a positive figure
    beside the negative of its value ("You owe $45.20" beside a balance of "-$45.20") may
    be a ledger's credit, refund or balance due said in words, or a sign misread."""
    anchor, unit = figure
    if anchor.kind not in NUMERIC_KINDS:
        return anchor_supported(anchor, [other for other, _ in others])
    unsure = False
    for other, other_unit in others:
        if not anchor_supported(anchor, (other,)):
            continue
        if other.kind not in NUMERIC_KINDS:
            # A year or an id with the figure's digits: no unit to compare.
            return True
        agree = _units_agree(anchor, unit, other, other_unit)
        if agree and other.value[0] == "-" and anchor.value[0] != "-":
            agree = None
        if agree:
            return True
        unsure = unsure or agree is None
    return None if unsure else False


def figure_held(figure: Figure, told: Sequence[Sequence[Figure]]) -> bool | None:
    """Whether a text of ``told`` (each as its figures) states ``figure`` by
    :func:`fact_held`: by value, and by kind, currency and unit where both name one. By value
    alone, "25%" and "25 euros" were backed by a "$25" fee; "25 dollars" and a bare "25"
    still are. None when none states it for certain and one may: only a word no table maps,
    or the sign, tells them apart ("$5" beside "5 days")."""
    undecided = False
    for others in told:
        held = fact_held(figure, others)
        if held:
            return True
        undecided = undecided or held is None
    return None if undecided else False


def held_per_anchor(answers: Iterable[tuple[Anchor, bool | None]]) -> dict[Anchor, bool | None]:
    """Each anchor once, in order, with what its figures' answers make of it: held when
    every place it is written is, not held when one is not (a "5" written "5 kg" and "5 lb"
    beside a call's "5 kg" alone), undecided otherwise. A value written twice is one fact,
    as :func:`~pytest_callqa.engine.anchors.extract_anchors` lists it."""
    held: dict[Anchor, bool | None] = {}
    for anchor, answer in answers:
        before = held.get(anchor, True)
        if before is False or answer is False:
            held[anchor] = False
        else:
            held[anchor] = None if before is None or answer is None else True
    return held


# A word token that writes a figure with thousands grouped by commas (Western "1,540,000" or
# Indian "12,00,000") or with decimals ("25.00"), as the anchors read one.
_WRITTEN_FIGURE = re.compile(
    r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{1,2}(?:,[0-9]{2})+,[0-9]{3}|[0-9]+)(?:\.[0-9]+)?")


def figure_word(word: str) -> str:
    """``word`` (a token) as the amount it writes when it groups thousands or has decimals,
    so that "1,540" and "1540", or "25.00" and "25", are one word; any other word as it is.
    A bare run of digits keeps its leading zeros: "0042" may be an id, no 42. The figure's
    kind, currency and unit are no part of a word ("$25" and "25%" are both "25"): a check
    by words leaves them to :func:`fact_held`."""
    if ("," in word or "." in word) and _WRITTEN_FIGURE.fullmatch(word):
        return format(Decimal(word.replace(",", "")).normalize(), "f")
    return word


# The figure and scale of a scaled anchor's text ("3 million" of "$3 million dollars").
_SCALED_PART = re.compile(rf"[0-9][0-9.,]*\s?(?:{SCALE_WORDS}|bn|mn|[kmb])(?![^\W_])",
                          re.IGNORECASE)


# A decimal the anchors read without its leading zero (".5%", "$.99").
_LEADING_DOT = re.compile(LEADING_DOT_DECIMAL)


def figures_written_out(text: str) -> str:
    """``text`` with each figure a scale multiplies, as the anchors read one ("$3 million",
    "$2k", "5 lakh"), written as the amount it is ("$3000000"), so that a check by words
    reads "$3 million" as "$3,000,000" and not as the "$3 billion" whose words it shares;
    and each decimal without its leading zero given one (".5%" is "0.5%"), as its word was
    its digits ("5"), no passage's "0.5"."""
    if "." in text:
        # Before the scales: "$.5 million" is "$0.5 million", then "$500000".
        text = _LEADING_DOT.sub(_zero_led, text)
    if _SCALED_PART.search(text) is None:
        # No anchor's text can hold a scaled figure then (a figure's anchor that ends on a
        # scale is followed by no letter or digit, as the pattern asks): reading every
        # clause's anchors for nothing was over half a grounding batch's anchor reads.
        return text
    for anchor in extract_anchors(text):
        part = _SCALED_PART.search(anchor.text) if anchor.kind in NUMERIC_KINDS else None
        if part is not None:
            text = text.replace(anchor.text, anchor.text[:part.start()]
                                + anchor.value.lstrip("-") + anchor.text[part.end():])
    return text


def _zero_led(decimal: re.Match[str]) -> str:
    return "0" + decimal[0]


def _units_agree(a: Anchor, unit_a: Unit, b: Anchor, unit_b: Unit) -> bool | None:
    if {a.kind, b.kind} == {"amount", "percent"}:
        return False
    if unit_a is None or unit_b is None:
        # One side names no unit: what it counts is the sentence's, as before.
        return True
    (sort_a, name_a), (sort_b, name_b) = unit_a, unit_b
    if sort_a == "word" or sort_b == "word":
        # Two words no table maps are compared by no one; one beside a known unit may be
        # that unit in other words, or another.
        return True if sort_a == sort_b else None
    if sort_a == sort_b == "currency":
        return same_currency(name_a, name_b)
    return unit_a == unit_b


def _unit(anchor: Anchor, text: str, end: int) -> Unit:
    """The unit of ``anchor``, an occurrence of which ends at ``end`` of ``text``."""
    if anchor.kind == "percent":
        return ("unit", "percent")
    if anchor.kind == "amount":
        if _POUND_WORD.search(anchor.text) is not None:
            return ("word", "pound")
        return ("currency", currency_of(anchor.text))
    # The word right after it ("5 kg", "5kg", "49 dólares", "5公斤"), not one after a comma,
    # nor the first word of the next line: a turn that ends on its figure ("your total is
    # 25") says no unit, whatever the next turn begins with.
    follows = text[end : end + 1]
    if follows in _LINE_BREAKS:
        return None
    after = text[end + 1 : end + _WORD_SPAN] if follows.isspace() else (
        text[end : end + _WORD_SPAN])
    return _unit_word(tokens(after)[0]) if after[:1].isalpha() else None


@functools.lru_cache(maxsize=4096)
def _unit_word(word: str) -> Unit:
    """The unit a word (a token: lower case) names."""
    currency = _CURRENCY.match(word)
    if currency is not None:
        if _POUND_WORD.match(word):
            return ("word", "pound")
        return ("currency", currency.lastgroup)
    if word in _UNIT_OF:
        return ("unit", _UNIT_OF[word])
    # In a script written without spaces, the unit begins the run of letters after a figure.
    if UNSEGMENTED_LETTER.match(word):
        for size in range(min(len(word), _LONGEST_UNSPACED), 0, -1):
            if word[:size] in _UNIT_OF:
                return ("unit", _UNIT_OF[word[:size]])
    return None if word in STOPWORDS else ("word", word)


def anchors_equal(a: Anchor, b: Anchor) -> bool:
    """Whether two anchors state one value, read strictly and symmetrically: what a tool
    argument needs, where :func:`anchor_supported` asks only whether a context could back a
    fact. A bare number stands for an amount or a percent of its value (the parameter names
    the unit) but an amount is no percent; a number written with two readings ("1.540")
    equals only one with the same two; a date with two readings ("03/05/2024") only the
    same date as written, a year or a yearless day only the same; a bare clock time of
    hour 1 to 12 ("10:30") only the same bare time, as it may be either half of the day;
    ids by their digits, leading zeros included, a "+" country code aside. A figure's sign
    is left to the caller, which reads an accountant's brackets too ("(USD 20)" is -20).
    """
    a, b = _as_number(a, b), _as_number(b, a)
    if a.kind in NUMERIC_KINDS and b.kind in NUMERIC_KINDS:
        return ((a.kind == b.kind or "number" in (a.kind, b.kind))
                and _magnitudes(a) == _magnitudes(b)
                and _leading_zeros(a.text) == _leading_zeros(b.text))
    if a.kind != b.kind:
        return False
    if a.kind == "time":
        return (_seconds_dropped(a.value) == _seconds_dropped(b.value)
                and _bare_clock(a) == _bare_clock(b))
    if a.kind == "id" and a.value != b.value:
        return _country_code_aside(a, b) or _country_code_aside(b, a)
    return a.value == b.value


def _magnitudes(anchor: Anchor) -> set[str]:
    return {anchor.value.lstrip("-"), anchor.other.lstrip("-")}


def _as_number(anchor: Anchor, against: Anchor) -> Anchor:
    """A bare year, or a bare run of digits long enough to be read as an id ("2500000"),
    read as the number it is when compared with a figure ("$2,024", "2,500,000.0")."""
    if against.kind not in NUMERIC_KINDS:
        return anchor
    if anchor.kind == "date" and anchor.value.startswith("y"):
        return Anchor("number", anchor.text, anchor.value[1:])
    if anchor.kind == "id" and anchor.text.strip().isdigit():
        return Anchor("number", anchor.text, anchor.value)
    return anchor


_LEADING_ZEROS = re.compile(r"[^0-9]*?(0+)(?=[0-9])")


def _leading_zeros(text: str) -> str:
    """The zeros padding a number ("0012" is an id's 0012, not 12); "0.5" has none."""
    found = _LEADING_ZEROS.match(text)
    return found[1] if found is not None else ""


def _seconds_dropped(value: str) -> str:
    return value.removesuffix(":00") if value.count(":") == 2 else value


def _bare_clock(anchor: Anchor) -> bool:
    return not has_meridiem(anchor.text) and 1 <= int(anchor.value.split(":")[0]) <= 12


def _country_code_aside(longer: Anchor, shorter: Anchor) -> bool:
    """Whether ``longer`` is ``shorter`` with a written country code ("+1 977 625 2661")."""
    prefix = len(longer.value) - len(shorter.value)
    return (longer.text.lstrip().startswith("+") and 1 <= prefix <= 3
            and len(shorter.value) >= 7 and longer.value.endswith(shorter.value))

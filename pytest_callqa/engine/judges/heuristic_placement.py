"""Whether a text statement's figures are given for the item it names: the offline judge's
check, for the text family's highlight correctness and fabrication-free rate, that a figure
found somewhere in the call or the truth is the one they give for that item — three rates
rotated among the highlights were each somewhere in the call, and all passed. The order of
figures of one kind, which this and the translation check read, is here too, and the check
of a text fact that is an extracted value by its value."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..anchors import NUMERIC_KINDS, Anchor, anchor_supported, extract_anchors
from ..core.cases import GoldenCase
from ..core.memo import ByIdentity, batch_memoised
from ..core.numbers import finite_number
from ..text import content_tokens, normalize, set_jaccard

# A statement of the truth's summary states the same item as a model's when their words,
# less figures, are this alike (token Jaccard): "Overnight shipping costs 69.99 for items 5
# lbs or less" and the truth's "… costs 39.99 for items 5 lbs or less". An extracted value
# states the item of its key.
SAME_ITEM = 0.8
# A like item, as alike as the text family's highlight match asks: the figures the truth
# gives for one may be the ones a statement rightly gives, worded as the other item.
LIKE_ITEM = 0.4

_HAS_DIGIT = re.compile(r"\d").search


@dataclass(frozen=True)
class _Item:
    """A statement of the truth's summary: the key of an extracted value ("" for the
    purpose and the highlights), its text, its words less figures and its figures."""

    key: str
    text: str
    words: frozenset[str]
    figures: Sequence[Anchor]


@batch_memoised
def _truth_items(case: ByIdentity[GoldenCase]) -> tuple[_Item, ...]:
    """The statements of a case's truth: every statement of every output of the case is
    placed against the same ones."""
    # Loaded by the family that asked, as the judge loads its other text helpers.
    from ..tasks.text_analysis import expected_statements

    # A statement without a figure places none: neither as the same item, a like one nor
    # one that holds a figure.
    return tuple(_Item(normalize(key), text, _item_words(text), extract_anchors(text))
                 for key, text in expected_statements(case.value) if _HAS_DIGIT(text))


@batch_memoised
def _numbered_turns(case: ByIdentity[GoldenCase]) -> tuple[tuple[frozenset[str],
                                                                  Sequence[Anchor]], ...]:
    """The words and figures of each turn that may hold a figure; most hold none."""
    return tuple((_item_words(t.text), extract_anchors(t.text))
                 for t in case.value.transcript if _HAS_DIGIT(t.text))


def _word_order(text: str) -> tuple[str, ...]:
    """The words of a statement, less its figures, in order."""
    return tuple(w for w in content_tokens(text) if not _HAS_DIGIT(w))


def _item_words(text: str) -> frozenset[str]:
    return frozenset(_word_order(text))


def placement(case: GoldenCase, claim: str, key: str = "",
              words_of: str = "") -> tuple[bool | None, str]:
    """:func:`_placement`, once per batch: a highlight is placed for highlight correctness
    and again as a fact of the fabrication-free rate."""
    return _placement(ByIdentity(case), claim, key, words_of)


@batch_memoised
def _placement(case_key: ByIdentity[GoldenCase], claim: str, key: str,
               words_of: str) -> tuple[bool | None, str]:
    """Whether the figures of a text statement that the call or the truth holds are given
    for its item: "Overnight shipping costs 69.99 for items 5 lbs or less" passed because
    the call quotes 69.99, for heavier items. ``claim`` is what it claims (an extracted
    value's value, of ``key``; without the call offsets it cites), ``words_of`` the text
    whose words say its item (the claim).

    A statement of the truth's summary of the same item (:data:`SAME_ITEM`, or the same
    key) that gives all its figures supports it, in another order leaves it undecided; one
    that gives a figure of a kind it changes contradicts it: unsupported, or undecided when
    the truth gives its figures for a like item (:data:`LIKE_ITEM`) too. A figure the truth
    gives for no such item is undecided when every turn and truth statement that holds it
    shares none of its words."""
    if not _HAS_DIGIT(claim):
        return True, "supported"
    figures = extract_anchors(claim)
    if not figures:
        return True, "supported"
    items = _truth_items(case_key)
    words = _item_words(words_of or claim)
    own_key = normalize(key) if key else ""
    same = [i for i in items if i.figures
            and (i.key == own_key if key else set_jaccard(words, i.words) >= SAME_ITEM)]
    for item in same:
        if all(anchor_supported(a, item.figures) for a in figures):
            # Worded alike, figures in another order were swapped among its items; reworded
            # ("For items 5 lbs or less, shipping costs 39.99"), they moved with their words.
            if reordered(item.figures, figures) and _word_order(words_of or claim) == \
                    _word_order(item.text):
                return None, f"the figures of the truth's {item.text!r} in another order"
            return True, "supported"
    for item in same:
        changed = [a for a in figures if not anchor_supported(a, item.figures)]
        given = [a for a in item.figures if not anchor_supported(a, figures)
                 and any(figure_kind(a) == figure_kind(c) for c in changed)]
        if not given:
            continue
        truth = ", ".join(repr(a.text) for a in given)
        like = next((i for i in items if i is not item and set_jaccard(words, i.words) >= LIKE_ITEM
                     and all(anchor_supported(a, i.figures) for a in figures)), None)
        if like is not None:
            return None, (f"the truth gives {truth} for the same item ({item.text!r}), and its "
                          f"figures for a like one ({like.text!r})")
        return False, f"the truth gives {truth} for the same item: {item.text!r}"
    if not words:
        return True, "supported"
    texts = [*_numbered_turns(case_key), *((i.words, i.figures) for i in items)]
    apart = []
    for anchor in figures:
        holding = [text_words for text_words, text_figures in texts
                   if anchor_supported(anchor, text_figures)]
        if holding and all(words.isdisjoint(text_words) for text_words in holding):
            apart.append(anchor)
    if apart:
        return None, (", ".join(f"{a.kind} {a.text!r}" for a in apart) + " found only in turns "
                      "and truth statements that share none of its words")
    return True, "supported"


def reordered(expected: Sequence[Anchor], model: Sequence[Anchor]) -> bool:
    """Whether two of the model's figures of one kind, each found among the expected ones,
    come in another order: "49 now and 99 next month" turned into "99 now and 49 next
    month". A date moved before an amount is a translation's word order, not a swap."""
    if len(model) < 2:
        return False
    return any(_out_of_order([a for a in expected if figure_kind(a) == kind],
                             [a for a in model if figure_kind(a) == kind])
               for kind in {figure_kind(a) for a in model})


def figure_kind(anchor: Anchor) -> str:
    """An anchor's kind, amounts, percentages and numbers being one: figures."""
    return "number" if anchor.kind in NUMERIC_KINDS else anchor.kind


def _out_of_order(expected: Sequence[Anchor], model: Sequence[Anchor]) -> bool:
    # A figure backed by one of another kind (a year by the number 2024) says nothing of
    # the order and is passed over.
    at = 0
    for anchor in model:
        places = [i for i, e in enumerate(expected) if anchor_supported(anchor, [e])]
        if places and places[-1] < at:
            return True
        at = next((i for i in places if i >= at), at)
    return False


def value_support(key: str, value: Any, known: bool,
                  truth: Any) -> tuple[bool | None, str] | None:
    """A verdict on an extracted value by its value, or None to check it by its words. It
    is supported when it equals the truth's value for its key (``known``: the truth has
    one, ``truth``): booleans as booleans, numbers by value, text as written. A yes or
    no is no word of the call ("False" was a fabrication by its words, even when the truth
    said so): unsupported when the truth's is the other, else undecided."""
    if known and _same_value(value, truth):
        return True, f"equals the truth's {key}"
    if not isinstance(value, bool):
        return None
    if known and isinstance(truth, bool):
        return False, f"the truth's {key} is {truth}"
    return None, f"a yes or no, which words cannot check, and the truth has none for {key}"


def _same_value(value: Any, truth: Any) -> bool:
    if isinstance(value, bool) or isinstance(truth, bool):
        return isinstance(value, bool) and isinstance(truth, bool) and value == truth
    if finite_number(value) and finite_number(truth):
        return bool(value == truth)
    return isinstance(value, str) and value == truth


def value_text(value: Any, fact: str) -> str:
    """What an extracted value claims in words: a number as digits without a float's
    trailing ".0" (the call says 49, not 49.0), else the fact less its key."""
    if finite_number(value) and float(value).is_integer():
        return str(int(value))
    return fact.partition(": ")[2]

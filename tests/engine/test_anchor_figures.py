"""How the anchors read a figure's scale word, sign and leading-dot decimals."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.anchor_units import fact_held, figures_of, figures_written_out
from pytest_callqa.engine.anchors import extract_anchors
from tests.engine.helpers import unsupported_anchors


def _values(text: str) -> list[tuple[str, str]]:
    return [(a.kind, a.value) for a in extract_anchors(text)]


@pytest.mark.parametrize(("text", "found"), [
    ("$3 million", [("amount", "3000000")]),
    ("$3 billion", [("amount", "3000000000")]),
    ("$2k", [("amount", "2000")]),
    ("$3.5M", [("amount", "3500000")]),
    ("$1.5bn", [("amount", "1500000000")]),
    ("USD 3 bn", [("amount", "3000000000")]),
    ("2 thousand dollars", [("amount", "2000")]),
    ("Rs 5 lakh", [("amount", "500000")]),
    ("2 crores rupees", [("amount", "20000000")]),
    ("40 million customers", [("number", "40000000")]),
])
def test_a_scale_word_multiplies_its_figure(text: str, found: list[tuple[str, str]]) -> None:
    # Read without its scale, "$3 million" was 3: backed by "$3 billion", not "$3,000,000".
    assert _values(text) == found


@pytest.mark.parametrize(("text", "found"), [
    ("a 5 m walk", [("number", "5")]),
    ("a 5k run", [("number", "5")]),
    ("3 millionaires", [("number", "3")]),
    ("$5 min", [("amount", "5")]),
])
def test_an_abbreviation_is_a_scale_only_after_a_currency(
        text: str, found: list[tuple[str, str]]) -> None:
    # "5 m" may be five metres, "5k" a run: only "$5m" is five million.
    assert _values(text) == found


@pytest.mark.parametrize(("claim", "context", "unsupported"), [
    ("The loan is $3 million.", "The loan is $3,000,000.", 0),
    ("The loan is $3,000,000.", "The loan is $3 million.", 0),
    ("The loan is $3 billion.", "The loan is $3 million.", 1),
    ("The limit is $2k.", "The limit is $2,000.", 0),
    ("The limit is $2.", "The limit is $2k.", 1),
    ("It has 40 billion customers.", "It has 40 million customers.", 1),
])
def test_a_scaled_figure_is_backed_by_its_amount(claim: str, context: str,
                                                 unsupported: int) -> None:
    assert len(unsupported_anchors(claim, context)) == unsupported


def test_a_scaled_figure_is_written_out_for_a_check_by_words() -> None:
    assert figures_written_out("The loan is $3 million, or 2 lakh rupees.") == (
        "The loan is $3000000, or 200000 rupees.")
    assert figures_written_out("A 5 m walk costs $5.") == "A 5 m walk costs $5."


@pytest.mark.parametrize(("text", "found"), [
    ("Your balance is -$500.", [("amount", "-$500", "-500")]),
    ("Your balance is $-500.", [("amount", "$-500", "-500")]),
    ("Your balance is \u2212500 dollars.", [("amount", "\u2212500 dollars.", "-500")]),
    ("The rate moved (-0.5%).", [("percent", "-0.5%", "-0.5")]),
    ("It takes 5-10 days.", [("number", "5", "5"), ("number", "10", "10")]),
    ("Call 555-1234 or ID-12.", [("number", "555", "555"), ("number", "1234", "1234"),
                                 ("number", "12", "12")]),
    ("The change is -0.", [("number", "-0", "0")]),
])
def test_a_minus_sign_is_part_of_the_figure(text: str, found: list[tuple[str, str, str]]) -> None:
    # Dropped, the sign let "-$500" pass for a balance of $500; a hyphen after a word or a
    # figure is a range's or an id's, no sign.
    assert [(a.kind, a.text, a.value) for a in extract_anchors(text)] == found


def test_a_negative_figure_is_not_backed_by_the_positive_one() -> None:
    assert len(unsupported_anchors("Your balance is -$500.", "Your balance is $500.")) == 1
    assert unsupported_anchors("Your balance is -$500.", "Your balance is \u2212500 dollars.") == []


def test_a_positive_figure_is_backed_by_a_negative_one_by_value_but_not_as_a_fact() -> None:
    # Ledgers write credits, refunds and balances due as negatives: "You owe $45.20" of a
    # balance of "-$45.20" may be right, so its value is backed; whether the sign is the
    # answer's fact no reading can tell, and fact_held leaves it undecided (it said False,
    # and the grounding family failed the answer).
    answer, ledger = "You owe $45.20.", "Account balance: -$45.20 (amount due)"
    (owed,) = figures_of(answer)
    assert unsupported_anchors(answer, ledger) == []
    assert fact_held(owed, figures_of(ledger)) is None
    assert fact_held(owed, figures_of(ledger + " Due: $45.20")) is True
    # An amount is still no percentage, whatever the sign.
    (off,) = figures_of("You got 10% off.")
    assert fact_held(off, figures_of("Credit -$10")) is False


def test_each_figure_takes_the_unit_written_after_it_where_it_stands() -> None:
    # A unit was read after a figure's first occurrence in its text: every "5" of "up to
    # 5 lb; this parcel weighs 5 kg" counted pounds, a bare "5" after "$5" read the amount's
    # next word, and a figure ending a turn took the next turn's first word.
    call = figures_of("Parcels ship up to 5 lb; this parcel weighs 5 kg.")
    assert [unit for _, unit in call] == [("unit", "lb"), ("unit", "kg")]
    assert fact_held(figures_of("It weighs 5 kg.")[0], call) is True
    assert fact_held(figures_of("It weighs 5 lb.")[0], call) is True
    assert fact_held(figures_of("It weighs 5 km.")[0], call) is False
    fee = figures_of("A $5 fee covers parcels up to 5 kg.")
    assert [unit for _, unit in fee] == [("currency", "dollar"), ("unit", "kg")]
    turns = figures_of("agent: your total today is 25\ncustomer: okay thanks")
    assert [unit for _, unit in turns] == [None]
    # One value with one unit (here none) is one figure, as the anchors give it once.
    assert figures_of("49\nrefund_amount 49") == figures_of("49")


@pytest.mark.parametrize(("text", "found"), [
    ("The fee is .5%.", [("percent", "0.5")]),
    ("Take $.50 off.", [("amount", "0.5")]),
    ("A ratio of (.25).", [("number", "0.25")]),
    # A dot after a word or a dot leads no decimal.
    ("Item No.5 and wait...7 more.", [("number", "5"), ("number", "7")]),
    ("Pay Rs.50 now.", [("amount", "50")]),
])
def test_a_decimal_without_its_leading_zero_is_read_whole(
        text: str, found: list[tuple[str, str]]) -> None:
    # Read from its digits, ".5%" was 5%: a context's 5% fee backed it.
    assert _values(text) == found


def test_a_leading_dot_decimal_is_not_backed_by_its_digits_alone() -> None:
    assert len(unsupported_anchors("The fee is .5%.", "The fee is 5%.")) == 1
    assert unsupported_anchors("The fee is .5%.", "The fee is 0.5%.") == []


@pytest.mark.parametrize(("text", "written"), [
    ("The rate is .5% per month.", "The rate is 0.5% per month."),
    ("A fee of $.99 applies, or -.25 in (.75).", "A fee of $0.99 applies, or -0.25 in (0.75)."),
    ("A $.5 million loan.", "A $500000 loan."),
    # A dot after a word, a figure or a dot leads no decimal, as the anchors read it.
    ("Item No.5, version 3.5.2, wait...7 more.", "Item No.5, version 3.5.2, wait...7 more."),
])
def test_a_leading_dot_decimal_is_written_out_for_a_check_by_words(
        text: str, written: str) -> None:
    # Its claim word was its digits ("5"), so a claim of ".5%" was not backed by a
    # passage's "0.5%", while its figure was.
    assert figures_written_out(text) == written

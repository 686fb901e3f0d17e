"""The speaker a QA reason gives a quote to: an ASCII sentence is searched for the speakers'
names alone, which must find what looking up every word finds."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.judges import heuristic_evidence as evidence

REASONS = [
    ('Agent opened with "Hi!" and "How can I help you?" before the customer stated it.',
     ("Hi", "How can I help you")),
    ('The CUSTOMER said "my bill is wrong"; then the Rep replied "let me check".',
     ("my bill is wrong", "let me check")),
    ('Customers said "no" but xcustomer said "yes", customer_2 said "maybe".',
     ("no", "yes", "maybe")),
    ('Customer2 asked "why", the representative told the customer: "because".',
     ("why", "because")),
    ('Dana: "hello there" and Agent 7 said "hi".', ("hello there", "hi")),
    ('the client was asked "anything else", Représentant said "non".', ("anything else", "non")),
]
SPEAKERS = [frozenset({"customer", "agent"}), frozenset({"Caller", "Rep"}),
            frozenset({"Dana", "Agent 7"}), frozenset({"customer", "client", "bot"}),
            frozenset({"Kate", "k"}), frozenset()]


@pytest.mark.parametrize("speakers", SPEAKERS)
def test_named_words_found_alike_in_ascii_and_word_by_word(
        speakers: frozenset[str], monkeypatch: pytest.MonkeyPatch) -> None:
    found = [evidence.quote_speakers(reason, quotes, speakers) for reason, quotes in REASONS]
    monkeypatch.setattr(evidence, "_named_in_ascii", lambda _: None)
    assert found == [evidence.quote_speakers(reason, quotes, speakers)
                     for reason, quotes in REASONS]


def test_ascii_search_attributes_by_name() -> None:
    reason, quotes = REASONS[1]
    assert evidence.quote_speakers(reason, quotes, frozenset({"Caller", "Rep"})) == [
        "Caller", "Rep"]

"""The speaker a QA reason gives a quote to: an ASCII sentence is searched for the speakers'
names alone, which must find what looking up every word finds."""

from __future__ import annotations

import os
import subprocess
import sys

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


def test_speakers_differing_only_in_case_are_told_apart_alike_in_every_process() -> None:
    """'ANN: "hi"' with speakers Ann and ANN gave the quote to ANN in some processes and to
    Ann in others (the hash seed ordered the speakers): xdist workers and reruns differed."""
    script = ("from pytest_callqa.engine.judges.heuristic_evidence import quote_speakers; "
              "print(quote_speakers('ANN: \"hi\"', ['hi'], frozenset({'Ann', 'ANN'})), "
              "quote_speakers('The agent said \"ok\"', ['ok'], "
              "frozenset({'Agent', 'agent', 'Customer'})))")
    given = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True, timeout=60,
                            env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
             for seed in range(1, 7)}
    assert given == {"['ANN'] ['Agent']\n"}

"""Whether a statement is supported by the call and the truth: its figures by value and by
kind, currency and unit, its content words by share. The offline judge checks a text's
facts, highlights and claims with it, and a QA reason's figures against the same anchors.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ..anchor_units import Figure, figure_held, figures_of, held_per_anchor
from ..anchors import Anchor, anchor_supported, extract_anchors, may_be_said, numbers_said
from ..core.memo import batch_memoised
from ..text import content_coverage, tokens, without_timestamps

# A cited timestamp may be off by a few seconds from the start of the turn it points at.
TIMESTAMP_TOLERANCE_S = 5.0
# Share of a statement's content words that must occur in the transcript or the truth
# for the statement to count as supported.
SUPPORT_COVERAGE = 0.5


@functools.lru_cache(maxsize=512)
def _profile(context: str) -> tuple[tuple[Anchor, ...], frozenset[str], tuple[Figure, ...]]:
    """Anchors, tokens and figures of a context; one transcript is checked against many
    statements, in every batch that scores its case."""
    return tuple(extract_anchors(context)), frozenset(tokens(context)), figures_of(context)


@batch_memoised
def told_texts(contexts: tuple[str, ...]) -> tuple[tuple[Figure, ...], ...]:
    """Each context's figures, as :func:`figure_held` reads what a statement is told."""
    return tuple(_profile(c)[2] for c in contexts)


@batch_memoised
def _support_context(contexts: tuple[str, ...]) -> tuple[tuple[Anchor, ...], frozenset[str]]:
    """The anchors and the tokens of ``contexts`` together: every statement of every output
    of a case is checked against the same ones."""
    profiles = [_profile(c) for c in contexts]
    known = tuple(a for anchors, _, _ in profiles for a in anchors)
    return known, frozenset().union(*(words for _, words, _ in profiles))


def statement_support(statement: str, contexts: Sequence[str],
                      starts: Sequence[float] = ()) -> tuple[bool | None, str]:
    """Whether a statement is supported by ``contexts`` and, if not, why not. A call offset
    it cites with a leading zero ("at 00:20") within :data:`TIMESTAMP_TOLERANCE_S` of a
    turn's start (of ``starts``) is supported by the call's timing. A figure ``contexts``
    have by value must be there of its kind, currency and unit too
    (:func:`~pytest_callqa.engine.anchor_units.figure_held`). None (undecided) when its
    words are there and every figure in doubt is one ``contexts`` may say in words
    (:func:`~pytest_callqa.engine.anchors.may_be_said`), or give only with another sign or
    beside a word that may or may not be its unit."""
    contexts = tuple(contexts)
    known, vocabulary = _support_context(contexts)
    checked = without_timestamps(statement, starts, TIMESTAMP_TOLERANCE_S, zero_led=True)
    figures = extract_anchors(checked)
    missing = [a for a in figures if not anchor_supported(a, known)]
    said = numbers_said(contexts) if missing else frozenset()
    unsaid = [a for a in missing if not may_be_said(a, said)]
    if unsaid:
        return False, "unsupported " + ", ".join(f"{a.kind} {a.text!r}" for a in unsaid)
    # Backed by value, a figure must also be of the kind, currency and unit the call or the
    # truth gives it: "25%" or "€25" is not stated by a "$25" fee.
    told = told_texts(contexts)
    held = held_per_anchor((f[0], figure_held(f, told)) for f in figures_of(checked)
                           if f[0] not in missing).items()
    if other := [a for a, h in held if h is False]:
        return False, ("stated as another kind, currency or unit than the call or the truth "
                       "gives it: " + ", ".join(f"{a.kind} {a.text!r}" for a in other))
    for anchor in missing:
        # Its digits are no word of the call: its words alone are weighed.
        checked = checked.replace(anchor.text, " ")
    coverage = content_coverage(checked, vocabulary=vocabulary)
    if coverage < SUPPORT_COVERAGE:
        return False, f"only {coverage:.0%} of its content words occur in the call or the truth"
    unsure = [a for a, h in held if h is None]
    if not (missing or unsure):
        return True, "supported"
    why = []
    if missing:
        why.append(", ".join(f"{a.kind} {a.text!r}" for a in missing) + " not in the digits "
                   "of the call or the truth, which say numbers in words that may be it")
    if unsure:
        why.append(", ".join(f"{a.kind} {a.text!r}" for a in unsure) + " in the call or the "
                   "truth only with another sign or beside a word that may or may not be its "
                   "unit")
    return None, "; ".join(why)


@batch_memoised
def text_support(statement: str, contexts: tuple[str, ...],
                 starts: tuple[float, ...]) -> tuple[bool | None, str]:
    """:func:`statement_support`, once per batch: a text highlight is checked for highlight
    correctness and again as a fact, and a fact that several outputs of a case state alike
    is checked once (in the recorded QA and translation batches, half the checks repeat
    one)."""
    return statement_support(statement, contexts, starts)

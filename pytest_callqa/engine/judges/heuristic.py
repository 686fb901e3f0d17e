"""The offline judge: deterministic checks against the transcript and expected_outcome.

It answers only where a programmatic technique gives an honest estimate — quotes and
timestamps located in the transcript, numeric/date/amount anchors, content-word support —
and returns *not scored* (``score=None``) otherwise, e.g. for fluency or the soundness of an
argument. Every verdict says what was checked, so a proxy never passes for a judgement.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..anchor_units import fact_held, figure_held, figures_of, held_per_anchor
from ..anchors import (
    anchor_supported,
    extract_anchors,
    numbers_said,
    said_in_words,
)
from ..core.cases import GoldenCase
from ..core.judging import NO_FACT, NO_HIGHLIGHT, JudgeRequest, JudgeVerdict
from ..core.memo import ByIdentity, batch_memoised
from ..lexicon import CALLER_WORDS, UNSPACED_CALLER_WORDS, number_words_unread
from ..text import (
    best_fuzzy_match,
    content_coverage,
    content_tokens,
    extract_quotes,
    extract_timestamps,
    fuzzy_support,
    normalize,
    normalize_loose,
    tokens,
    without_timestamps,
)
from .heuristic_evidence import cited_turns, quote_speakers, without_turn_citations
from .heuristic_families import family_handlers
from .heuristic_placement import placement, reordered, value_support, value_text
from .heuristic_support import (
    TIMESTAMP_TOLERANCE_S,
    text_support,
    told_texts,
)
from .heuristic_truth import truth_text

if TYPE_CHECKING:
    from ..embeddings import Embedder

# A quote counts as found when it fuzzily matches part of one turn at this level; ASR
# transcripts differ from a model's quote in punctuation and casing, rarely in words.
QUOTE_MATCH = 0.90
INTENT_FULL_COVERAGE = 0.8
# Words by which a call purpose turns the intent it names around ("not requesting a refund",
# "disputes the refund"): it holds every key word of that intent, and was rated a full
# match. English, and the plain negations of the other languages the lexicon reads; the
# forms of one verb on a line are one word ("cancels" says what "cancel" does).
_REVERSAL_FORMS = """
    not cannot
    no none
    never
    nor neither
    without
    dispute disputes disputed disputing
    decline declines declined declining
    refuse refuses refused refusing
    reject rejects rejected rejecting
    cancel cancels cancelled canceled cancelling canceling
    withdraw withdraws withdrew withdrawn withdrawing
    nunca
    nicht
    kein keine
    nie
    não
    pas
    jamais
    non
    नहीं
"""
INTENT_REVERSALS: dict[str, str] = {
    form: line.split()[0] for line in _REVERSAL_FORMS.strip().splitlines()
    for form in line.split()}
# "isn't", "doesn't": tokens cut them into "isn" and "t".
_CONTRACTED_NOT = re.compile(r"n['’]t(?![^\W\d_])", re.IGNORECASE)
# A reversal turns around what its own clause says: "refund requested; no order placed"
# keeps its intent. Only a semicolon or a full stop ends one: "does not, in fact, want a
# refund" and "Refund: not wanted" keep their negation beside the intent.
_CLAUSES = re.compile(r";|\.(?!\d)")
# "order no. 4521": a number, not a negation ("no 30-day extension" is one).
_NUMBER_NO = re.compile(r"\bno\.\s*(?=\d)", re.IGNORECASE)


@batch_memoised
def _transcript_plain(case: ByIdentity[GoldenCase]) -> str:
    # The same for every statement of every output of a case.
    return case.value.transcript_plain


@functools.lru_cache(maxsize=128)
def _normalized_turns(turns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(normalize_loose(t) for t in turns)


def _reversals(purpose: str, about: frozenset[str] | None = None) -> set[str]:
    """The reversals (:data:`INTENT_REVERSALS`) a call purpose says ("n't" says "not"), with
    ``about`` only those in a clause that holds one of those words."""
    found: set[str] = set()
    for clause in _CLAUSES.split(_NUMBER_NO.sub(" ", purpose)):
        words = tokens(clause)
        if about is not None and about.isdisjoint(words):
            continue
        found.update(INTENT_REVERSALS[w] for w in words if w in INTENT_REVERSALS)
        if _CONTRACTED_NOT.search(clause):
            found.add("not")
    return found


@batch_memoised
def _turn_view(case: ByIdentity[GoldenCase]) -> tuple[tuple[str, ...],
                                                      tuple[float | None, ...],
                                                      tuple[float, ...]]:
    """A case's turns normalised (``normalize_loose``), each turn's start, and the starts
    known: every request about an output reads them, and every output of the case."""
    turns = case.value.transcript
    starts = tuple(t.start for t in turns)
    return (_normalized_turns(tuple(t.text for t in turns)), starts,
            tuple(start for start in starts if start is not None))


@batch_memoised
def _reason_check(case: ByIdentity[GoldenCase], reason: str,
                  expected_reason: str) -> tuple[bool, tuple[str, ...], bool]:
    """Whether a QA reason cites evidence, the problems of what it cites, and whether it
    cites only a timestamp of a call without timings (not scored). Once per batch: models
    that answer alike give a case the same reasons (half of a QA batch's repeat one)."""
    texts, _, starts = _turn_view(case)
    quotes = extract_quotes(reason)
    stamps = extract_timestamps(reason)
    cited = cited_turns(reason)
    if stamps and not starts and not quotes and not cited:
        return True, (), True
    problems = []
    speakers = [turn.speaker for turn in case.value.transcript] if quotes else []
    # Every reason's quotes are given to one of the same speakers.
    for quote, named in zip(quotes, quote_speakers(reason, quotes, frozenset(speakers)),
                            strict=True):
        match, at = best_fuzzy_match(quote, texts, normalized=True)
        if match < QUOTE_MATCH:
            problems.append(f"quote {quote!r} not found in the transcript")
        elif named is not None and speakers[at] != named and best_fuzzy_match(
                quote, [t for t, who in zip(texts, speakers, strict=True)
                        if who == named], normalized=True)[0] < QUOTE_MATCH:
            # The reason gives the words to a speaker who never said them.
            said_by = speakers[at] or "another speaker"
            problems.append(f"quote {quote!r} is said by {said_by}, not {named}")
    # Turns are numbered from 1, as the prompts show them to the model and the judge.
    problems += [f"turn {n} is not in the transcript ({len(texts)} turns)"
                 for n in cited if not 1 <= n <= len(texts)]
    for stamp in stamps if starts else []:
        if min(abs(stamp - s) for s in starts) > TIMESTAMP_TOLERANCE_S:
            problems.append(f"no turn starts near {stamp:g}s")
    # The offsets it cites were checked against the turns' starts just above.
    checked = without_timestamps(without_turn_citations(reason), starts, math.inf)
    if anchors := extract_anchors(checked):
        told = told_texts((_transcript_plain(case), expected_reason))
        known = [a for told_figures in told for a, _ in told_figures]
        problems += [f"{anchor.kind} {anchor.text!r} is not in the call" for anchor in anchors
                     if not anchor_supported(anchor, known)]
        # A figure the call may state with another sign or unit word is not shown wrong: a
        # problem is what the reason gets wrong for certain.
        held = held_per_anchor((f[0], figure_held(f, told)) for f in figures_of(checked)
                               if anchor_supported(f[0], known))
        problems += [f"{anchor.kind} {anchor.text!r} is in the call as another kind, currency "
                     "or unit" for anchor, h in held.items() if h is False]
    return bool(quotes or stamps or cited), tuple(problems), False


class HeuristicJudge:
    """Deterministic, offline judge; see the module docstring for what it can estimate."""

    name = "heuristic"
    model = None

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder
        self._handlers: dict[str, Callable[[JudgeRequest], JudgeVerdict]] = {
            "evidence_backed_reasoning": self._evidence,
            "call_intent_match": self._intent,
            "highlight_correctness": self._highlights,
            "fabrication_free_rate": self._facts,
            "faithfulness": self._facts,
            "critical_fact_preservation": self._critical_facts,
            "contextual_precision": self._contextual,
            "contextual_recall": self._contextual,
        }
        self._handlers.update(family_handlers())

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict]:
        return [self.judge_one(r) for r in requests]

    def judge_one(self, request: JudgeRequest) -> JudgeVerdict:
        handler = self._handlers.get(request.metric)
        if handler is None:
            return JudgeVerdict(
                metric=request.metric, score=None,
                reason=f"not scored: the heuristic judge cannot estimate {request.metric} "
                       "honestly; use an LLM judge (--callqa-judge openai)",
            )
        return handler(request)

    # --- QA -------------------------------------------------------------------------------

    def _evidence(self, request: JudgeRequest) -> JudgeVerdict:
        reasons = list(request.focus.get("reasons", []))
        if not reasons:
            return JudgeVerdict(request.metric, None, "not scored: the output gives no reason")
        case = ByIdentity(request.case)
        with_evidence = factual = 0
        checks = []
        for item in reasons:
            evidence, problems, untimed = _reason_check(
                case, str(item.get("reason", "")), str(item.get("expected_reason", "")))
            if untimed:
                return JudgeVerdict(
                    request.metric, None,
                    f"not scored: reason for {item.get('question_id')} cites only a timestamp "
                    "and the transcript has no timings to check it against",
                )
            is_factual = evidence and not problems
            with_evidence += evidence
            factual += is_factual
            checks.append({
                "question_id": item.get("question_id"), "has_evidence": evidence,
                "factual": is_factual,
                "problems": list(problems) if evidence else ["cites no quote, timestamp or turn"],
            })
        score = (with_evidence + factual) / (2 * len(reasons))
        weak = [c["question_id"] for c in checks if not c["factual"]]
        return JudgeVerdict(
            request.metric, score,
            f"{with_evidence} of {len(reasons)} reasons cite evidence, {factual} verified in the "
            "transcript" + (f"; not verified: {', '.join(map(str, weak))}" if weak else ""),
            expected_outcome_reference="expected reasons",
            model_output_observed=f"{len(reasons)} reasons",
            details={"reasons": checks},
        )

    # --- Text -----------------------------------------------------------------------------

    def _intent(self, request: JudgeRequest) -> JudgeVerdict:
        model = str(request.focus.get("model", ""))
        expected = str(request.focus.get("expected", ""))

        def verdict(score: float | None, reason: str) -> JudgeVerdict:
            return JudgeVerdict(request.metric, score, reason,
                                expected_outcome_reference=expected, model_output_observed=model)

        if not model.strip():
            return verdict(0.0, "the output states no call purpose")
        purpose = expected
        for caller in UNSPACED_CALLER_WORDS:
            purpose = purpose.replace(caller, " ")
        key_words = [w for w in content_tokens(purpose) if w not in CALLER_WORDS]
        if normalize(model) == normalize(expected):
            return verdict(1.0, "same call purpose")
        if not key_words:
            return verdict(None, "not scored: the expected purpose has no specific words to "
                                 "compare")
        coverage = content_coverage(" ".join(key_words), model)
        reversals = _reversals(model, frozenset(key_words)) - _reversals(expected)
        if coverage > 0 and reversals:
            words = ", ".join(repr(w) for w in sorted(reversals))
            return verdict(None, f"not scored: {coverage:.0%} of the expected intent's key "
                                 f"words present, but the output's purpose says {words} and "
                                 "the expected one does not: whether it states that intent "
                                 "or its opposite needs an LLM judge")
        if coverage >= INTENT_FULL_COVERAGE:
            return verdict(1.0, f"{coverage:.0%} of the expected intent's key words present")
        if coverage > 0:
            return verdict(0.5, f"partial: {coverage:.0%} of the expected intent's key words "
                                "present")
        return verdict(None, "not scored: no key word of the expected intent appears; whether "
                             "the purposes differ or are paraphrased needs an LLM judge")

    def _highlights(self, request: JudgeRequest) -> JudgeVerdict:
        highlights = [str(h) for h in request.focus.get("highlights", [])]
        if not highlights:
            return JudgeVerdict(request.metric, None, NO_HIGHLIGHT)
        case = ByIdentity(request.case)
        contexts = (_transcript_plain(case), truth_text(request))
        starts = _turn_view(case)[2]
        verdicts = [(h, *_placed(request.case, h, text_support(h, contexts, starts),
                                 starts)) for h in highlights]
        wrong = [f"{h!r} ({why})" for h, ok, why in verdicts if ok is False]
        undecided = [f"{h!r} ({why})" for h, ok, why in verdicts if ok is None]
        decided = len(highlights) - len(undecided)
        unsure = _undecided_note(undecided)
        if not decided:
            return JudgeVerdict(request.metric, None,
                                "not scored: no highlight could be checked offline" + unsure,
                                model_output_observed="; ".join(highlights),
                                details={"unsupported": 0, "undecided": len(undecided)})
        accurate = decided - len(wrong)
        return JudgeVerdict(
            request.metric, accurate / decided,
            f"{accurate} of {decided} highlights supported by the call or the truth"
            + (f"; unsupported: {'; '.join(wrong)}" if wrong else "") + unsure,
            model_output_observed="; ".join(highlights),
            details={"unsupported": len(wrong), "undecided": len(undecided)},
        )

    def _facts(self, request: JudgeRequest) -> JudgeVerdict:
        facts = [str(f) for f in request.focus.get("facts", []) if str(f).strip()]
        if not facts:
            # Nothing to have fabricated: the rate does not apply (its blocker cannot fire).
            return JudgeVerdict(request.metric, None, NO_FACT)
        case = ByIdentity(request.case)
        contexts = (_transcript_plain(case), truth_text(request))
        fabricated = []
        undecided = []
        starts = _turn_view(case)[2]
        support = self._fact_support(request)
        for fact in facts:
            ok, why = support(fact, contexts, starts)
            if ok is None:
                undecided.append(f"{fact!r} ({why})")
            elif not ok:
                fabricated.append(f"{fact!r} ({why})")
        decided = len(facts) - len(undecided)
        unsure = _undecided_note(undecided)
        if not decided:
            return JudgeVerdict(request.metric, None,
                                "not scored: no fact could be checked offline" + unsure,
                                details={"unsupported": 0, "facts": 0,
                                         "undecided": len(undecided)})
        return JudgeVerdict(
            request.metric, 1 - len(fabricated) / decided,
            f"{decided - len(fabricated)} of {decided} facts found in the call or the "
            "truth" + (f"; fabricated: {'; '.join(fabricated)}" if fabricated else "")
            + unsure,
            details={"unsupported": len(fabricated), "facts": decided,
                     "undecided": len(undecided)},
        )

    @staticmethod
    def _fact_support(request: JudgeRequest) -> Callable[
            [str, tuple[str, ...], tuple[float, ...]], tuple[bool | None, str]]:
        """How a fact of ``request`` is checked: :func:`statement_support`, once per batch
        (:func:`text_support`); a text fact that is an extracted value by its value
        (:func:`value_support`), or, checked by words, the value alone."""
        if request.task != "text":
            return text_support
        # Loaded by the family that asked, once for all the facts of its request.
        from ..tasks.text_analysis import expected_value, extracted_value

        def text_fact_support(fact: str, contexts: tuple[str, ...],
                              starts: tuple[float, ...]) -> tuple[bool | None, str]:
            extracted = extracted_value(fact, request.model_output)
            if extracted is None:
                return _placed(request.case, fact, text_support(fact, contexts, starts),
                               starts)
            key, value = extracted
            by_value = value_support(key, value, *expected_value(request.case, key))
            if by_value is not None:
                return by_value
            claim = value_text(value, fact)
            return _placed(request.case, claim, text_support(claim, contexts, starts),
                           starts, key=key, words_of=fact)

        return text_fact_support

    # --- Translation ----------------------------------------------------------------------

    def _critical_facts(self, request: JudgeRequest) -> JudgeVerdict:
        """Each expected sentence carrying numbers, dates or amounts is one critical fact; it
        drifts when the model's sentence omits, changes or adds such an anchor, or changes
        its kind, currency or unit (:func:`fact_held`). A model
        sentence that adds anchors to an expected sentence without any is an added fact.
        Each ``config.critical_facts`` entry is one more fact, found by fuzzy search. A
        sentence whose difference a number said in words may explain (or, in a script whose
        number words are not read, may say), whose figures are all there in another order, or
        whose figure is followed by a unit word no table maps, is undecided: left out of the
        rate, and named."""
        pairs = list(request.focus.get("pairs", []))
        configured = [str(f) for f in request.focus.get("critical_facts", [])]
        total = drifted = 0
        problems = []
        undecided = []
        for pair in pairs:
            sid = pair.get("source_id")
            expected_text, model_text = str(pair.get("expected", "")), str(pair.get("model", ""))
            expected_figures, model_figures = figures_of(expected_text), figures_of(model_text)
            # Each side's anchors once, in order (as extract_anchors lists them), with what
            # the other side makes of them.
            kept_of = held_per_anchor((f[0], fact_held(f, model_figures))
                                      for f in expected_figures)
            made_of = held_per_anchor((f[0], fact_held(f, expected_figures))
                                      for f in model_figures)
            expected, model = list(kept_of), list(made_of)
            omitted = [a for a, kept in kept_of.items() if kept is False]
            added = [a for a, kept in made_of.items() if kept is False]
            # A side that only lacks figures, in a script whose number words are not read
            # ("ثلاثة" for "3"), may say them in words; one that writes others in their
            # place changed them.
            unread = (not added and number_words_unread(model_text)) if omitted else (
                bool(added) and number_words_unread(expected_text))
            said = unread or (
                (not omitted or said_in_words(omitted, numbers_said([model_text])))
                and (not added or said_in_words(added, numbers_said([expected_text]))))
            if (omitted or added) and said:
                figures = ", ".join(repr(a.text) for a in omitted + added)
                undecided.append(f"sentence {sid}: {figures} " + (
                    "may be said in words of a script the offline check does not read"
                    if unread else "said in words on the other side"))
                continue
            if not (omitted or added) and None in kept_of.values():
                figures = ", ".join(repr(a.text) for a, kept in kept_of.items() if kept is None)
                undecided.append(f"sentence {sid}: {figures} beside a unit or currency word "
                                 "the offline check cannot compare")
                continue
            if not (omitted or added) and reordered(expected, model):
                undecided.append(f"sentence {sid}: the same figures in another order")
                continue
            if expected:
                total += 1
            if omitted or added:
                drifted += 1
                problems.append(
                    f"sentence {sid}: "
                    + "; ".join([*(f"{a.text!r} omitted or changed" for a in omitted),
                                 *(f"{a.text!r} added" for a in added)]))
        translation = "\n".join(str(p.get("model", "")) for p in pairs)
        for fact in configured:
            total += 1
            if fuzzy_support(fact, [translation]) < QUOTE_MATCH:
                drifted += 1
                problems.append(f"critical fact {fact!r} not found")
        unsure = (f"; undecided, left out (whether they drifted needs an LLM judge): "
                  f"{'; '.join(undecided)}" if undecided else "")
        if total == 0 and not drifted:
            return JudgeVerdict(request.metric, None, "not scored: " + (
                "no sentence's numbers, dates or amounts could be compared" if undecided else
                "no number, date or amount in the expected translation and no "
                "config.critical_facts; outcome facts need an LLM judge") + unsure)
        # A fact added where the expected translation has none is the seed's drift over no
        # facts: 1 - drifted / total, clipped at 0, in the limit (it went unscored, so an
        # invented amount voided the score only beside some unrelated fact).
        score = max(0.0, 1 - drifted / total) if total else 0.0
        counted = (f"{drifted} of {total} critical facts drifted" if total else
                   f"{drifted} sentence(s) add a critical fact where the expected translation "
                   "has none")
        return JudgeVerdict(
            request.metric, score,
            f"{counted} (facts with numbers, dates or amounts, and config.critical_facts; "
            "other outcomes are not checked offline)"
            + (f": {'; '.join(problems)}" if problems else "") + unsure,
            details={"facts": total, "drifted": drifted, "undecided": len(undecided)},
        )

    # --- Layer 2 --------------------------------------------------------------------------

    def _contextual(self, request: JudgeRequest) -> JudgeVerdict:
        turns, starts, _ = _turn_view(ByIdentity(request.case))
        used = self._cited_turns(request.focus.get("claims", []), turns, starts)
        needed = self._cited_turns(request.focus.get("expected_claims", []), turns, starts)
        # Offline, a turn is known used or needed only when it is cited: a side that cites
        # none may still rest on turns, so a share of it is unknown, not 0 (nor 1).
        if not used or not needed:
            side = ("the output and the truth cite" if not used and not needed
                    else "the output cites" if not used else "the truth cites")
            return JudgeVerdict(request.metric, None,
                                f"not scored: {side} no turn of the call (by quote or "
                                "timestamp), so which turns are used and needed cannot be "
                                "told offline")
        both = used & needed
        if request.metric == "contextual_precision":
            score = len(both) / len(used)
            what = f"{len(both)} of {len(used)} turns the output cites are needed"
        else:
            score = len(both) / len(needed)
            what = f"{len(both)} of {len(needed)} needed turns are cited by the output"
        return JudgeVerdict(request.metric, score, what,
                            details={"used": sorted(used), "needed": sorted(needed)})

    @staticmethod
    def _cited_turns(statements: Sequence[Any], turns: tuple[str, ...],
                     starts: tuple[float | None, ...]) -> frozenset[int]:
        """Indices of the (normalised) turns that the statements quote, or point at by a
        timestamp near the turn's start (as the evidence check accepts one)."""
        return _cited(tuple(map(str, statements)), turns, starts)


@batch_memoised
def _cited(statements: tuple[str, ...], turns: tuple[str, ...],
           starts: tuple[float | None, ...]) -> frozenset[int]:
    # Contextual precision and recall each ask of an output's claims, and of its truth's
    # as every model's output does.
    return _quoted_turns(statements, turns) | _stamped_turns(statements, starts)


def _placed(case: GoldenCase, claim: str, support: tuple[bool | None, str],
            starts: Sequence[float], key: str = "",
            words_of: str = "") -> tuple[bool | None, str]:
    """``support`` (of :func:`statement_support`) or, for a supported statement, its
    :func:`placement`: only a statement with figures found is placed."""
    if support[0] is not True:
        return support
    return placement(case, without_timestamps(claim, starts, TIMESTAMP_TOLERANCE_S,
                                              zero_led=True), key, words_of or claim)


def _undecided_note(undecided: Sequence[str]) -> str:
    """The reason's note on the statements left out of a rate, if any."""
    return (f"; undecided, left out (whether they hold needs an LLM judge): "
            f"{'; '.join(undecided)}" if undecided else "")


def _stamped_turns(statements: tuple[str, ...], starts: tuple[float | None, ...]) -> set[int]:
    """Indices of the turns whose start is the nearest to a timestamp ``statements`` cite,
    within :data:`TIMESTAMP_TOLERANCE_S`."""
    timed = [(start, i) for i, start in enumerate(starts) if start is not None]
    cited: set[int] = set()
    if not timed:
        return cited
    for stamp in (s for statement in statements for s in extract_timestamps(statement)):
        start, index = min(timed, key=lambda pair: abs(pair[0] - stamp))
        if abs(start - stamp) <= TIMESTAMP_TOLERANCE_S:
            cited.add(index)
    return cited


def _quoted_turns(statements: tuple[str, ...], turns: tuple[str, ...]) -> frozenset[int]:
    """Indices of the (normalised) turns that ``statements`` quote."""
    cited: set[int] = set()
    for statement in statements:
        for quote in extract_quotes(statement):
            score, index = best_fuzzy_match(quote, turns, normalized=True)
            if score >= QUOTE_MATCH:
                cited.add(index)
    return frozenset(cited)

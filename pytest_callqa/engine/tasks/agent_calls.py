"""The agent's conversation rebuilt and its tool calls checked without a judge: the scenario
replayed with the agent's own turns and calls, argument values compared and traced to what
was said, calls aligned with the reference, and the two programmatic rubrics (tool routing,
parameter extraction)."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..anchor_units import anchors_equal, currency_of, same_currency
from ..anchors import anchor_supported, extract_anchors
from ..core.cases import GoldenCase
from ..core.memo import ByIdentity, batch_memoised
from ..core.unicode_text import has_words
from ..text import contains_phrase, normalize, normalize_loose
from .agent_metrics import argument_tally, rubric_from_count
from .agent_schemas import (
    AGENT_SPEAKERS,
    CUSTOMER_SPEAKERS,
    TOOL_CALL,
    TOOL_RESULT,
    AgentConfig,
    AgentOutput,
    AgentToolCall,
    Called,
    ToolCall,
    parse_tool_call_text,
)
from .family_base import RUBRIC_GOOD

# --- the scenario and its replay -----------------------------------------------------------


# A suite has a handful of speaker labels, and every turn of every replay asks about one.
@functools.lru_cache(maxsize=256)
def speaker_kind(speaker: str) -> str:
    """``customer``, ``agent``, ``tool_call``, ``tool_result`` or ``other``."""
    who = normalize(speaker).replace(" ", "_")
    if who in CUSTOMER_SPEAKERS:
        return "customer"
    if who in AGENT_SPEAKERS:
        return "agent"
    if who in (TOOL_CALL, TOOL_RESULT):
        return who
    if who == "tool":
        return TOOL_RESULT
    return "other"


@dataclass(frozen=True)
class ReferenceCall:
    call: ToolCall
    result: str


def scenario_problems(case: GoldenCase) -> list[str]:
    """Tool turns that cannot be replayed: unparsable calls, calls without a result."""
    problems = []
    turns = case.transcript
    for i, turn in enumerate(turns):
        kind = speaker_kind(turn.speaker)
        if kind == TOOL_CALL:
            _, why = parse_tool_call_text(turn.text)
            if why:
                problems.append(f"transcript[{i}].text: {why}")
            if i + 1 >= len(turns) or speaker_kind(turns[i + 1].speaker) != TOOL_RESULT:
                problems.append(
                    f"transcript[{i}]: tool call has no tool_result turn right after it (the "
                    "scenario must say what the tool returned)")
        elif kind == TOOL_RESULT and (i == 0 or speaker_kind(turns[i - 1].speaker) != TOOL_CALL):
            problems.append(f"transcript[{i}]: tool_result without a tool_call turn before it")
    if not any(speaker_kind(t.speaker) == "agent" for t in turns):
        problems.append("transcript: no agent turn (speaker 'agent'): there is nothing for "
                        "the agent under test to answer at")
    return problems


def reference_calls(case: GoldenCase) -> tuple[ReferenceCall, ...]:
    """The scenario's recorded calls with their results, read once per case in a batch
    rather than again for every output replayed against it."""
    return _reference_calls(ByIdentity(case))


@batch_memoised
def _reference_calls(case_key: ByIdentity[GoldenCase]) -> tuple[ReferenceCall, ...]:
    calls = []
    turns = case_key.value.transcript
    for i, turn in enumerate(turns[:-1]):
        if speaker_kind(turn.speaker) == TOOL_CALL:
            call, _ = parse_tool_call_text(turn.text)
            if call is not None:
                calls.append(ReferenceCall(call, turns[i + 1].text))
    return tuple(calls)


def _same_args(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    # A loop, not sum() over a generator: it runs for every pair of calls of one tool, when
    # replaying an output and again when aligning its calls.
    same = 0
    for key, value in a.items():
        if key in b and values_equal(value, b[key]):
            same += 1
    return same


def call_order(output: AgentOutput) -> list[int]:
    """The indices in ``output.tool_calls`` of the model's calls in the order they happened
    (by turn, then as listed)."""
    return sorted(range(len(output.tool_calls)), key=lambda i: (output.tool_calls[i].turn, i))


def mock_results(case: GoldenCase, calls: Sequence[AgentToolCall]) -> list[str | None]:
    """The recorded result each call receives: the unused reference call of the same tool
    agreeing on the most arguments (the earliest on a tie); None when the scenario has none."""
    refs = reference_calls(case)
    used: set[int] = set()
    results: list[str | None] = []
    for call in calls:
        best: tuple[int, int] | None = None
        for k, ref in enumerate(refs):
            if k in used or ref.call.name != call.name:
                continue
            agree = _same_args(ref.call.arguments, call.arguments)
            if best is None or agree > best[0]:
                best = (agree, k)
        if best is None:
            results.append(None)
        else:
            used.add(best[1])
            results.append(refs[best[1]].result)
    return results


NO_RESULT = "(no recorded result: the scenario does not cover this call)"


def replay_calls(case: GoldenCase, output: AgentOutput, calls: Sequence[AgentToolCall],
                 results: Sequence[str | None]) -> list[dict[str, Any]]:
    """The conversation the agent under test lived: scripted customer turns, its own replies
    at the agent turns, its ``calls`` (in the order they happened) with the ``results`` the
    scenario gives them."""
    responses = {r.turn: r.text for r in output.responses}
    at_turn: dict[int, list[tuple[AgentToolCall, str | None]]] = {}
    for call, result in zip(calls, results, strict=True):
        at_turn.setdefault(call.turn, []).append((call, result))
    view: list[dict[str, Any]] = []
    n = len(case.transcript)
    for position in range(n + 1):
        for call, result in at_turn.get(position, ()):
            view.append({"turn": position, "speaker": TOOL_CALL, "name": call.name,
                         "arguments": dict(call.arguments),
                         "text": f"{call.name}({_render_args(call.arguments)})"})
            view.append({"turn": position, "speaker": TOOL_RESULT, "name": call.name,
                         "text": result if result is not None else NO_RESULT,
                         "recorded": result is not None})
        if position == n:
            break
        turn = case.transcript[position]
        kind = speaker_kind(turn.speaker)
        if kind == "agent":
            text = responses.get(position, "")
            view.append({"turn": position, "speaker": "agent", "text": text,
                         "missing": not has_words(text)})
        elif kind in ("customer", "other"):
            view.append({"turn": position, "speaker": kind, "text": turn.text})
    return view


def _render_args(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())


# --- argument values ------------------------------------------------------------------------


def _compact(value: str) -> str:
    return normalize_loose(value).replace(" ", "")


def values_equal(expected: Any, got: Any) -> bool:
    """Whether an argument value matches the expected one after normalisation.

    Strings compare case-, punctuation- and spacing-insensitively ("(977) 625-2661" equals
    "9776252661"); numbers, amounts, dates and times compare by value whatever their format
    ("$1,540" equals 1540, "11 am" equals "11:00 AM", "10:30 pm" equals "22:30"), but only
    where the value is unambiguous (:func:`anchors_equal`): "03/05/2024" is not "05/03/2024",
    "10:30" not "22:30", "1.540" not 1540, "ACC-0012" not "ACC-12"; lists compare as
    multisets.
    """
    if type(expected) is str and type(got) is str:
        # Nearly every argument: the checks below would only come to the same comparison.
        return expected == got or _strings_equal(expected, got)
    if isinstance(expected, bool) or isinstance(got, bool):
        return str(expected).casefold() == str(got).casefold()
    if isinstance(expected, Mapping) and isinstance(got, Mapping):
        return set(expected) == set(got) and all(values_equal(expected[k], got[k])
                                                 for k in expected)
    if isinstance(expected, list) and isinstance(got, list):
        remaining = list(got)
        for item in expected:
            hit = next((i for i, g in enumerate(remaining) if values_equal(item, g)), None)
            if hit is None:
                return False
            remaining.pop(hit)
        return not remaining
    if isinstance(expected, (Mapping, list)) or isinstance(got, (Mapping, list)):
        return False
    a, b = str(expected), str(got)
    return a == b or _strings_equal(a, b)


# Aligning an output's calls compares every expected argument with every made one of the
# same tool, several times per output and again for each output of the case: a few dozen
# distinct pairs of strings per batch, asked hundreds of times.
@batch_memoised
def _strings_equal(a: str, b: str) -> bool:
    """:func:`values_equal` of two different strings."""
    if _compact(a) != _compact(b):
        anchors_a, anchors_b = extract_anchors(a), extract_anchors(b)
        if not (len(anchors_a) == 1 and len(anchors_b) == 1
                and anchors_equal(anchors_a[0], anchors_b[0])
                and _residue(a, anchors_a[0].text) == _residue(b, anchors_b[0].text)):
            return False
    # Loosely equal; but a credit of -20 made a charge of 20, or $50 made €50, is not.
    return _negative(a) == _negative(b) and same_currency(currency_of(a), currency_of(b))


# A value that is one signed number or amount ("-20", "$-20", "-$20 USD"); a minus elsewhere
# is a hyphen (a phone number, a range, a date, an id: "625-2661", "10 - 20").
# A currency's sign, or its code: one the matching knows in any case, or any three capitals
# before a space ("CHF -20"; "ORD-98765" is an id).
_CODES = "usd|eur|gbp|inr|jpy|aud|cad"
_MONEY = rf"(?:US\$|[AC]\$|R\$|[$₹€£¥]|(?i:{_CODES}|rs)\.?|[A-Z]{{3}}(?=\s))"
_SIGNED = re.compile(rf"\s*(?:{_MONEY}\s*)?[-\u2212]\s*(?:{_MONEY}\s*)?"
                     r"(?P<digits>[0-9][0-9,.]*)\s*(?:[%$₹€£¥]|[^\W\d_]+\.?)?\s*")
# An accountant's negative: an amount in brackets ("($20)", "(-$20)", "(USD 20)"); a bare
# number in brackets is not one ("(2024)", "(20 min)").
_BRACKETED = re.compile(rf"\s*\(\s*[-\u2212]?\s*{_MONEY}\s*[-\u2212]?\s*"
                        r"(?P<digits>[0-9][0-9,.]*)\s*\)\s*"
                        rf"|\s*\(\s*[-\u2212]?\s*(?P<suffixed>[0-9][0-9,.]*)\s*"
                        rf"(?:[$₹€£¥]|(?i:{_CODES}|dollars?|euros?))\s*\)\s*")


@functools.lru_cache(maxsize=4096)
def _negative(text: str) -> bool:
    signed = _SIGNED.fullmatch(text) or _BRACKETED.fullmatch(text)
    # -0 is 0.
    if signed is None:
        return False
    groups = signed.groupdict()
    return (groups.get("digits") or groups.get("suffixed") or "").strip("0,.") != ""


_UNIT_WORDS = frozenset({"usd", "dollar", "dollars", "bucks", "rs", "inr", "rupee", "rupees",
                         "eur", "euro", "euros", "gbp", "pound", "pounds", "jpy", "yen"})


def _residue(text: str, anchor_text: str) -> str:
    """What a value says besides its one anchor, currency words aside."""
    rest = normalize_loose(text.replace(anchor_text, " "))
    return " ".join(w for w in rest.split() if w not in _UNIT_WORDS)


def value_grounded(value: Any, contexts: Sequence[str]) -> bool:
    """Whether a value was said somewhere in ``contexts`` (format-aware for numbers)."""
    if isinstance(value, Mapping):
        return all(value_grounded(v, contexts) for v in value.values())
    if isinstance(value, list):
        return all(value_grounded(v, contexts) for v in value)
    if isinstance(value, bool) or value is None:
        return True
    text = str(value)
    if not text.strip():
        return False
    if any(contains_phrase(c, text) for c in contexts):
        return True
    anchors = extract_anchors(text)
    if anchors:
        # A number is said when its value is, whatever the format ("1,540" for 1540); a
        # substring test would let "154" pass inside "1540".
        context_anchors = [a for c in contexts for a in extract_anchors(c)]
        return all(anchor_supported(a, context_anchors) for a in anchors)
    compact = _compact(text)
    return len(compact) >= 4 and any(compact in _compact(c) for c in contexts)


def contexts_before(view: Sequence[Mapping[str, Any]], position: int,
                    config: AgentConfig | None = None, *, reply: bool = False,
                    calls_before: int = 0) -> list[str]:
    """What the agent had been told before ``position``: customer turns, recorded tool
    results and its instructions. Its own earlier replies are not evidence: an invented
    value does not become grounded by saying it twice.

    A ``reply`` at agent turn ``position`` has also seen the results of calls made at that
    position (they come right before it); a call made there has seen those of the
    ``calls_before`` calls made there ahead of it (a look-up whose result the next call
    uses), not its own or later ones.
    """
    texts = []
    here = 0
    for entry in view:
        if entry["speaker"] in ("customer", "other"):
            if entry["turn"] < position:
                texts.append(str(entry["text"]))
        elif entry["speaker"] == TOOL_RESULT:
            same = entry["turn"] == position
            earlier = same and here < calls_before
            here += same
            if entry.get("recorded") and (entry["turn"] < position or (reply and same)
                                          or earlier):
                texts.append(str(entry["text"]))
    if config is not None:
        texts.extend([config.system_prompt, *config.business_rules])
    return [t for t in texts if t.strip()]


def calls_ahead(calls: Sequence[Any], index: int, turn: int) -> int:
    """How many of ``calls`` (in the order the agent made them) before ``index`` were made at
    ``turn``: whose results the call at ``index`` had seen."""
    return sum(1 for call in calls[:index]
               if (call["turn"] if isinstance(call, Mapping) else call.turn) == turn)


# --- programmatic tool routing and parameter extraction ------------------------------------


@dataclass
class Alignment:
    """Expected calls paired with model calls: ``pairs`` are (expected, model, in_order)."""

    pairs: list[tuple[int, int, bool]] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    extra: list[int] = field(default_factory=list)


def align_calls(expected: Sequence[Called], made: Sequence[Called]) -> Alignment:
    """Pair expected calls with the model's calls of the same tool, then judge their order.

    Within a tool, pairs agreeing on more arguments are taken first (then the closest in
    sequence), so two swapped look-ups read as an order deviation rather than as two calls
    with wrong arguments. A pair is in order when it belongs to the longest run of pairs
    whose model positions increase with the expected ones; what is left unpaired is missing
    (expected) or extra (made).
    """
    candidates = sorted(
        ((-_same_args(e.arguments, m.arguments), abs(i - j), i, j)
         for i, e in enumerate(expected) for j, m in enumerate(made) if e.name == m.name),
    )
    used_e: set[int] = set()
    used_m: set[int] = set()
    paired: list[tuple[int, int]] = []
    for _, _, i, j in candidates:
        if i not in used_e and j not in used_m:
            used_e.add(i)
            used_m.add(j)
            paired.append((i, j))
    paired.sort()
    in_order = _increasing_run([j for _, j in paired])
    return Alignment(
        pairs=[(i, j, k in in_order) for k, (i, j) in enumerate(paired)],
        missing=[i for i in range(len(expected)) if i not in used_e],
        extra=[j for j in range(len(made)) if j not in used_m],
    )


def _increasing_run(values: Sequence[int]) -> set[int]:
    """Positions of one longest strictly increasing subsequence of ``values``."""
    best: list[int] = [1] * len(values)
    previous: list[int] = [-1] * len(values)
    for k in range(len(values)):
        for p in range(k):
            if values[p] < values[k] and best[p] + 1 > best[k]:
                best[k], previous[k] = best[p] + 1, p
    if not values:
        return set()
    k = max(range(len(values)), key=lambda x: (best[x], -x))
    run = set()
    while k != -1:
        run.add(k)
        k = previous[k]
    return run


@dataclass
class RubricScore:
    """A programmatic score on a 0–5 rubric with its diagnostics."""

    score: float
    reason: str
    failure_code: str | None
    turns: list[int]
    details: dict[str, Any]


def score_tool_routing(expected: Sequence[ToolCall], made: Sequence[AgentToolCall],
                       declared: Collection[str] = (),
                       listed_at: Sequence[int] | None = None, *,
                       alignment: Alignment | None = None) -> RubricScore:
    """Tool routing on the seed's 0–5 rubric from an alignment of the calls.

    With ``declared`` tools (config.tools), a call to any other tool is a wrong tool, never a
    redundant call: the agent invented an action (3 for one, 2 for more, 1 when they are
    most of its calls). ``listed_at`` gives each made call's index in the output's
    ``tool_calls`` (its position in ``made`` when None), to name it. ``alignment`` is
    ``align_calls(expected, made)`` when the caller has it already.
    """
    al = align_calls(expected, made) if alignment is None else alignment
    n, k = len(expected), len(al.pairs)
    missing, extra = len(al.missing), len(al.extra)
    out_of_order = [p for p in al.pairs if not p[2]]
    # A wrong tool is an extra call standing where an expected one is missing.
    wrong = min(missing, extra)
    redundant = extra - wrong
    undeclared = [j for j in al.extra if declared and made[j].name not in declared]
    # What the rubric's 4 forgives: a redundant call of a tool the agent has.
    spare = extra - len(undeclared)
    details: dict[str, Any] = {
        "expected": [c.name for c in expected], "called": [c.name for c in made],
        "matched": k, "missing": [expected[i].name for i in al.missing],
        "extra": [made[j].name for j in al.extra],
        "out_of_order": [made[p[1]].name for p in out_of_order],
    }
    bad_turns = sorted({made[j].turn for j in al.extra}
                       | {made[p[1]].turn for p in out_of_order}
                       | {t for i in al.missing if (t := expected[i].turn) is not None})
    if n == 0:
        score = float(max(2, 5 - extra))
        reason = ("no tool call expected and none made" if not extra
                  else "no tool call expected"
                  + (f"; {spare} unnecessary call(s)" if spare else ""))
    elif not made:
        score, reason = 0.0, f"no tool called; {n} expected"
    elif k == 0:
        score, reason = 0.0, "none of the expected tools was called (entirely wrong tool set)"
    elif missing == 0:
        deviations = extra + len(out_of_order)
        score = {0: 5.0, 1: 4.0, 2: 3.0}.get(deviations, 2.0)
        reason = (f"all {n} expected tools called"
                  + (f"; {len(out_of_order)} out of order" if out_of_order else "")
                  + (f"; {spare} redundant call(s)" if spare else ""))
    elif missing == 1 and redundant == 0 and not out_of_order:
        score = 3.0
        reason = (f"one expected tool ({details['missing'][0]}) "
                  + (f"replaced by a wrong one ({details['extra'][0]})" if wrong else "missed"))
    elif 2 * k >= n:
        score = 2.0
        reason = f"{k} of {n} expected tools called; {missing} missing, {extra} wrong or extra"
    else:
        score = 1.0
        reason = f"only {k} of {n} expected tools called"
    code = None
    if score < RUBRIC_GOOD:
        if not made and n:
            code = "no_tool_called"
        elif k == 0 and n:
            code = "wrong_tool_set"
        elif wrong:
            code = "wrong_tool_selected"
        elif missing:
            code = "missing_tool_call"
        elif out_of_order:
            code = "wrong_call_sequence"
        else:
            code = "redundant_tool_call"
    if undeclared:
        score = min(score, rubric_from_count(len(undeclared), len(made)))
        reason += "".join(f"; tool_calls[{j if listed_at is None else listed_at[j]}]: "
                          f"{made[j].name!r} is not one of config.tools" for j in undeclared)
        details["undeclared"] = [made[j].name for j in undeclared]
        if code != "wrong_tool_set":
            code = "wrong_tool_selected"
    return RubricScore(score, reason, code, bad_turns if score < 5 else [], details)


def score_parameters(
    expected: Sequence[ToolCall], made: Sequence[AgentToolCall], config: AgentConfig,
    view: Sequence[Mapping[str, Any]], *, alignment: Alignment | None = None,
) -> RubricScore | None:
    """Parameter extraction on the seed's 0–5 rubric, over the aligned calls.

    Each expected argument of a call made is correct, wrong or missing; a model argument the
    expected call does not have counts as fabricated when its value was never said before
    the call. An error on a parameter declared ``required: false`` is minor. None when no
    call was expected and none was made (nothing to assess). An expected call never made is
    tool routing's ("only 1 of N expected tools called"): the seed measures here the values
    taken from the conversation for the calls made, so the reason names the calls never
    made and their arguments are not counted again. ``alignment`` is
    ``align_calls(expected, made)`` when the caller has it already.
    """
    al = align_calls(expected, made) if alignment is None else alignment
    if not expected and not made:
        return None
    correct = 0
    errors: list[dict[str, Any]] = []
    total = 0

    @functools.cache
    def told(mj: int) -> list[str]:
        """What the agent had been told before its call ``made[mj]``. Read through the whole
        conversation, so only for a value that is not the expected one: most calls have every
        argument right and never need it."""
        turn = made[mj].turn
        return contexts_before(view, turn, config, calls_before=calls_ahead(made, mj, turn))

    for ei, mj, _ in al.pairs:
        exp, got = expected[ei], made[mj]
        tool = config.tool(exp.name)
        for key, value in exp.arguments.items():
            total += 1
            required = True
            if tool is not None and key in tool.parameters:
                required = tool.parameters[key].required
            if key not in got.arguments:
                errors.append({"call": exp.name, "parameter": key, "kind": "missing",
                               "critical": required, "turn": got.turn, "expected": value})
            elif values_equal(value, got.arguments[key]):
                correct += 1
            else:
                param = tool.parameters.get(key) if tool else None
                # Picking the wrong value of a fixed list is a wrong value, not an invention.
                listed = bool(param and param.enum and any(
                    values_equal(e, got.arguments[key]) for e in param.enum))
                invented = not listed and not value_grounded(got.arguments[key], told(mj))
                errors.append({"call": exp.name, "parameter": key,
                               "kind": "fabricated" if invented else "wrong",
                               "critical": required, "turn": got.turn, "expected": value,
                               "got": got.arguments[key]})
        for key, value in got.arguments.items():
            if key in exp.arguments:
                continue
            enum = tool.parameters[key].enum if tool and key in tool.parameters else None
            if enum and any(values_equal(e, value) for e in enum):
                continue
            if not value_grounded(value, told(mj)):
                errors.append({"call": exp.name, "parameter": key, "kind": "fabricated",
                               "critical": True, "turn": got.turn, "got": value})
    for mj in al.extra:
        got = made[mj]
        for key, value in got.arguments.items():
            if not value_grounded(value, told(mj)):
                errors.append({"call": got.name, "parameter": key, "kind": "fabricated",
                               "critical": True, "turn": got.turn, "got": value})
    fabricated = sum(1 for e in errors if e["kind"] == "fabricated")
    missing = sum(1 for e in errors if e["kind"] == "missing")
    n_critical = sum(1 for e in errors if e["critical"])
    details: dict[str, Any] = {"arguments_checked": total, "correct": correct,
                               "errors": errors}
    # Calls were expected and none was made: nothing was extracted, even for a call that
    # takes no argument — an empty list of errors would otherwise read as 5.
    if expected and not al.pairs:
        score, reason = 0.0, "no expected tool was called, so no argument was extracted"
    elif not errors:
        score = 5.0
        reason = (f"all {total} arguments correct" if total
                  else "no argument expected and none invented")
    elif len(errors) == 1 and not n_critical:
        e = errors[0]
        score, reason = 4.0, f"one minor argument error: {e['call']}.{e['parameter']} {e['kind']}"
    elif total and correct == 0 and all(e["kind"] in ("fabricated", "missing") for e in errors):
        # Before "one critical error": a call whose only argument is invented took nothing
        # from the conversation (the seed's 0), not one argument wrong of several (its 3).
        score, reason = 0.0, "no argument taken from the conversation: all invented or empty"
    elif len(errors) == 1:
        e = errors[0]
        score, reason = 3.0, (f"one critical argument error: {e['call']}.{e['parameter']} "
                              f"{e['kind']}")
    elif 2 * (fabricated + missing) > max(total + sum("expected" not in e for e in errors), 1):
        # "Most parameters" of those the call holds or should: the expected ones and the
        # extras it invented (counted among the fabricated, they are counted here too, or
        # five right of six with four extras invented read as "most invented or missing").
        score = 1.0
        reason = f"most arguments invented or missing ({argument_tally(correct, total, errors)})"
    else:
        score = 2.0
        reason = f"{len(errors)} argument errors ({argument_tally(correct, total, errors)})"
    if al.missing and al.pairs:
        # "All 1 arguments correct" read as if every expected call had been made.
        reason += (" in the calls made; never called (see tool routing): "
                   + ", ".join(dict.fromkeys(expected[i].name for i in al.missing)))
    code = None
    if score < RUBRIC_GOOD:
        kinds = {e["kind"] for e in errors}
        code = ("fabricated_parameter" if "fabricated" in kinds
                else "wrong_parameter_value" if "wrong" in kinds
                else "missing_parameter" if "missing" in kinds
                else "no_tool_called")
    turns = sorted({int(e["turn"]) for e in errors})
    return RubricScore(score, reason, code, turns, details)

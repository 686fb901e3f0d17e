"""Offline judgements for the agent, conversation and extraction families.

Like the rest of the heuristic judge these answer only what a deterministic check measures
and say what they checked; anything that needs reading comprehension is *not scored*:

- agent: ``response_delivery`` (TTS-hostile formatting, questions per turn, length,
  repetition), ``grounding_fidelity`` (numbers, dates, amounts and ids of the replies against
  what the agent was told), ``result_interpretation`` (numbers of tool results relayed or
  contradicted), ``information_gathering`` (each tool argument said before the call) and
  ``task_completion`` (expected calls made with the expected arguments and the outcome's
  figures told; not scored when the outcome has none) are proxies on the seed's scale. A
  figure a customer may have said in words, or a date worked out from "tomorrow", is
  undecided (:mod:`.heuristic_undecided`), never counted against the agent. What is
  measured rather than read is scored even at the bottom of the scale: an agent that said
  nothing at its turns gets 0 for delivery, and 0 for result interpretation and task
  completion when it was silent after its tool results and calls (silence makes no claim, so
  ``grounding_fidelity`` stays not scored). ``instruction_compliance`` and
  ``conversation_management`` are not scored, nor are ``tool_routing`` /
  ``parameter_extraction`` when the case gives no expected calls (with expected calls the
  task computes them itself and asks no judge).
- conversation: ``segmentation`` from punctuation and sentence lengths (not scored for a turn
  in a script without spaces between words); ``intelligibility`` and ``context`` are not
  scored.
- extraction: the 1–5 quality rubrics are not scored.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..anchors import Anchor, anchor_supported, extract_anchors, numbers_said, said_in_words
from ..core.judging import JudgeRequest, JudgeVerdict
from ..core.unicode_text import has_words
from ..tasks.agent_calls import (
    Alignment,
    align_calls,
    calls_ahead,
    contexts_before,
    value_grounded,
    values_equal,
)
from ..tasks.agent_schemas import TOOL_RESULT
from ..tasks.conversation_segmentation import segmentation_proxy
from ..text import normalize
from .heuristic_undecided import SaidBefore, rubric_undecided

Handler = Callable[[JudgeRequest], JudgeVerdict]

_LLM_HINT = "use an LLM judge (--callqa-judge openai)"


def _not_scored(why: str) -> Handler:
    def handler(request: JudgeRequest) -> JudgeVerdict:
        return JudgeVerdict(request.metric, None, f"not scored: {why}; {_LLM_HINT}")
    return handler


def _for_task(by_task: Mapping[str, Handler]) -> Handler:
    """Dispatch on the requesting task, so a metric id can mean different things per task."""
    def handler(request: JudgeRequest) -> JudgeVerdict:
        chosen = by_task.get(request.task)
        if chosen is None:
            return JudgeVerdict(request.metric, None,
                                f"not scored: the heuristic judge cannot estimate "
                                f"{request.metric} for task {request.task}; {_LLM_HINT}")
        return chosen(request)
    return handler


def _verdict(request: JudgeRequest, score: float, reason: str, code: str | None,
             turns: Sequence[int], **details: Any) -> JudgeVerdict:
    return JudgeVerdict(request.metric, score, reason,
                        details={"failure_code": code if score < 4 else None,
                                 "turns": sorted(set(turns)), **details})


# --- agent ---------------------------------------------------------------------------------

_USER_FACING = frozenset({"amount", "percent", "date", "time", "number"})
# A result's amount is often a bare number ({"balance": 23509.52}): the two are one kind of
# figure when a reply is checked against the results.
_KIND_GROUP = {"amount": "number"}


def _agent_parts(request: JudgeRequest) -> tuple[list[Mapping[str, Any]], list[str]]:
    # Read, never changed: the handlers share the entries rather than copy them.
    view: list[Mapping[str, Any]] = list(request.focus.get("conversation", []))
    config = [str(request.focus.get("system_prompt") or ""),
              *map(str, request.focus.get("business_rules") or [])]
    return view, [c for c in config if c.strip()]


def _told_before(view: Sequence[Mapping[str, Any]], position: int,
                 config: Sequence[str], *, reply: bool = False,
                 calls_before: int = 0) -> list[str]:
    return contexts_before(view, position, reply=reply, calls_before=calls_before) + list(config)


def _replies(view: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    # The replay marks an agent turn ``missing`` when its text has no word (has_words): read
    # that rather than every reply's characters again, for every metric of the output.
    return [e for e in view if e["speaker"] == "agent" and (
        not e["missing"] if "missing" in e else has_words(str(e.get("text", ""))))]


def told_anchors_by_reply(view: Sequence[Mapping[str, Any]],
                          config: Sequence[str]) -> dict[int, list[Anchor]]:
    """For each turn the agent replied at, the anchors of what it had been told by then:
    the texts ``_told_before(view, turn, config, reply=True)`` lists, read once through the
    conversation instead of again for every reply."""
    # A customer (or other) turn is heard by the replies after it; a recorded tool result
    # already by the reply at its own turn, which comes right after the call.
    heard = sorted(
        (int(e["turn"]) + (e["speaker"] != TOOL_RESULT), str(e["text"])) for e in view
        if e["speaker"] in ("customer", "other")
        or (e["speaker"] == TOOL_RESULT and e.get("recorded")))
    told = [a for c in config for a in extract_anchors(c)]
    by_turn: dict[int, list[Anchor]] = {}
    taken = 0
    for turn in sorted({int(r["turn"]) for r in _replies(view)}):
        while taken < len(heard) and heard[taken][0] <= turn:
            told.extend(extract_anchors(heard[taken][1]))
            taken += 1
        by_turn[turn] = list(told)
    return by_turn


def _grounding(request: JudgeRequest) -> JudgeVerdict:
    view, config = _agent_parts(request)
    said_before = SaidBefore(view)
    checked = unsupported = 0
    problems: list[str] = []
    turns: list[int] = []
    told_by_reply = told_anchors_by_reply(view, config)
    words: list[str] = []
    whys: set[str] = set()
    for reply in _replies(view):
        told = told_by_reply[int(reply["turn"])]
        for anchor in extract_anchors(str(reply["text"])):
            checked += 1
            if anchor_supported(anchor, told):
                continue
            problem = f"turn {reply['turn']}: {anchor.kind} {anchor.text!r}"
            why = said_before.why_undecided([anchor], int(reply["turn"]))
            if why:
                words.append(problem)
                whys.add(why)
                continue
            unsupported += 1
            turns.append(int(reply["turn"]))
            problems.append(problem)
    if not checked:
        # Silence is neither grounded (5 would reward it) nor fabricated (0 says every reply
        # is invented): there is no claim to rate. Delivery and result interpretation score it.
        said = ("the agent said nothing, so there is no claim to trace" if not _replies(view)
                else "the replies state no number, date, amount or id to trace; other "
                "claims need reading")
        return JudgeVerdict(request.metric, None, f"not scored: {said}; {_LLM_HINT}")
    score = rubric_undecided(unsupported, len(words), checked)
    if score is None:
        return JudgeVerdict(request.metric, None, f"not scored: not traced in digits: "
                            f"{'; '.join(words)} — {' and '.join(sorted(whys))}; {_LLM_HINT}")
    return _verdict(
        request, score,
        f"{checked - unsupported} of {checked} numbers, dates, amounts and ids in the replies "
        "were said by the customer, a tool result or the instructions before the reply"
        + (f"; untraceable: {'; '.join(problems)}" if problems else "")
        + " (proxy: only these anchors are checked offline)",
        "fabricated_facts" if unsupported > 1 else "ungrounded_claim", turns,
        checked=checked, unsupported=unsupported)


def _silent_turns(view: Sequence[Mapping[str, Any]], since: int = 0) -> list[int]:
    """The agent turns from ``since`` on where the script waits for a reply and got none."""
    return [int(e["turn"]) for e in view
            if e["speaker"] == "agent" and e.get("missing") and int(e["turn"]) >= since]


def _result_interpretation(request: JudgeRequest) -> JudgeVerdict:
    view, config = _agent_parts(request)
    said_before = SaidBefore(view)
    calls = [c for c in request.focus.get("tool_calls", []) if c.get("result")]
    if calls:
        # Checked before whether a result carries a number: silence at every turn after the
        # results is the seed's 0 ("tool output completely ignored") whatever they held.
        received = min(int(c["turn"]) for c in calls)
        silent = _silent_turns(view, received)
        if silent and not any(r["turn"] >= received for r in _replies(view)):
            return _verdict(request, 0.0, "no reply after the tool results although the "
                            f"agent had {len(silent)} turn(s) to speak at: their output never "
                            "reached the user", "ignored_tool_result", silent)
    followed: list[tuple[int, Any]] = []
    for call in calls:
        for anchor in extract_anchors(str(call["result"])):
            if anchor.kind in _USER_FACING:
                followed.append((int(call["turn"]), anchor))
    if not followed:
        return JudgeVerdict(request.metric, None,
                            "not scored: no tool result the agent received carries a number, "
                            f"date or amount to follow; {_LLM_HINT}")
    first = min(turn for turn, _ in followed)
    replies = [r for r in _replies(view) if r["turn"] >= first]
    if not replies:
        return _verdict(request, 0.0, "no reply after the tool results: their output never "
                        "reached the user", "ignored_tool_result", [first])
    # Each reply's figures are looked up once, not again for every figure of the results.
    figures_of = [(r["turn"], extract_anchors(str(r["text"]))) for r in replies]
    omitted = [a.text for turn, a in followed
               if not any(anchor_supported(a, figures)
                          for at, figures in figures_of if at >= turn)]
    misreported: list[str] = []
    turns: list[int] = []
    told_by_reply = told_anchors_by_reply(view, config)
    words: list[str] = []
    whys: set[str] = set()
    for reply, (_, figures) in zip(replies, figures_of, strict=True):
        told = told_by_reply[int(reply["turn"])]
        # A figure no result of its kind could have given ("March 6" when the results hold
        # no date) contradicts none: whether it is grounded is grounding_fidelity's question.
        kinds = {_KIND_GROUP.get(a.kind, a.kind) for turn, a in followed
                 if turn <= reply["turn"]}
        for anchor in figures:
            if (anchor.kind in _USER_FACING and _KIND_GROUP.get(anchor.kind, anchor.kind) in kinds
                    and not anchor_supported(anchor, told)):
                stated = f"turn {reply['turn']}: {anchor.text!r}"
                why = said_before.why_undecided([anchor], int(reply["turn"]))
                if why:
                    words.append(stated)
                    whys.add(why)
                    continue
                misreported.append(stated)
                turns.append(int(reply["turn"]))
    total = len(followed)
    if words:
        return JudgeVerdict(request.metric, None, f"not scored: stated but not among the "
                            f"digits of any result or the conversation: {'; '.join(words)} — "
                            f"{' and '.join(sorted(whys))}; {_LLM_HINT}")
    if misreported and len(omitted) == total:
        score, code = 1.0, "contradicted_tool_result"
    elif len(misreported) >= 2:
        score, code = 2.0, "misreported_tool_result"
    elif misreported:
        score, code = 3.0, "misreported_tool_result"
    elif len(omitted) == total:
        # None of them said as a number, none contradicted: said in words ("three days"),
        # or not the user's to hear (a ticket id, a timestamp) — or ignored. Offline, which
        # is unknown.
        return JudgeVerdict(request.metric, None,
                            f"not scored: the agent replied after its tool results but "
                            f"repeated none of their {total} number(s), date(s) or "
                            "amount(s) and contradicted none; whether it relayed them in "
                            f"words, or they were not for the user, needs reading; {_LLM_HINT}")
    elif omitted:
        score, code = 4.0, None
    else:
        score, code = 5.0, None
    return _verdict(
        request, score,
        f"{total - len(omitted)} of {total} numbers, dates and amounts of the tool results "
        "were relayed"
        + (f"; never relayed: {', '.join(omitted)}" if omitted else "")
        + (f"; stated but not in any result or the conversation: {'; '.join(misreported)}"
           if misreported else "")
        + " (proxy: only these anchors are compared offline)",
        code, turns, relayed=total - len(omitted), omitted=omitted, misreported=misreported)


def _information_gathering(request: JudgeRequest) -> JudgeVerdict:
    view, config = _agent_parts(request)
    said_before = SaidBefore(view)
    # Normalised once per parameter, not again for every argument checked.
    enums: dict[tuple[str, str], set[str]] = {}
    for tool in request.focus.get("tools", []):
        for name, param in (tool.get("parameters") or {}).items():
            if param.get("enum"):
                enums[(tool["name"], name)] = {normalize(str(e)) for e in param["enum"]}
    everything = _told_before(view, max((int(e["turn"]) for e in view), default=0) + 1,
                              config)
    checked = implied = 0
    problems: list[str] = []
    words: list[str] = []
    whys: set[str] = set()
    turns: list[int] = []
    calls = request.focus.get("tool_calls", [])
    aligned = _aligned_calls(request)
    expected_for = {} if aligned is None else {
        mj: aligned[0][ei].arguments for ei, mj, _ in aligned[2].pairs}
    for index, call in enumerate(calls):
        told = _told_before(view, int(call["turn"]), config,
                            calls_before=calls_ahead(calls, index, call["turn"]))
        for key, value in (call.get("arguments") or {}).items():
            if isinstance(value, bool) or value is None or value == "":
                continue
            listed = enums.get((call["name"], key))
            if listed and normalize(str(value)) in listed:
                continue
            checked += 1
            if value_grounded(value, told):
                continue
            why = said_before.why_undecided(extract_anchors(str(value)), int(call["turn"]))
            if why:
                words.append(f"{call['name']}.{key}={value!r}")
                whys.add(why)
                continue
            later = value_grounded(value, everything)
            expected = expected_for.get(index, {})
            if not later and key in expected and values_equal(expected[key], value):
                # The value the case expects is implied by the conversation, in words the
                # offline check does not read ("the 6th", "my usual table"): never unasked.
                implied += 1
                continue
            problems.append(f"{call['name']}.{key}={value!r} "
                            + ("asked for only after the call" if later
                               else "never given in the conversation"))
            turns.append(int(call["turn"]))
    if not checked:
        return JudgeVerdict(request.metric, None,
                            "not scored: no tool argument to check against the conversation; "
                            f"whether the agent asked the right questions needs reading; "
                            f"{_LLM_HINT}")
    missing = len(problems)
    score = rubric_undecided(missing, len(words), checked)
    if score is None:
        return JudgeVerdict(request.metric, None, f"not scored: not among the digits said "
                            f"before the call: {'; '.join(words)} — "
                            f"{' and '.join(sorted(whys))}; {_LLM_HINT}")
    return _verdict(
        request, score,
        f"{checked - missing - len(words)} of {checked} tool arguments were given before the "
        "call" + (f" ({len(words)} perhaps in words)" if words else "")
        + (f" ({implied} as the case expects, not in the conversation's digits)"
           if implied else "")
        + (f"; {'; '.join(problems)}" if problems else "")
        + " (proxy: redundant questions and forgotten details are not checked offline)",
        "acted_before_collecting_info", turns, checked=checked, problems=problems)


# Markdown a voice would read out: marks anywhere in a reply, and marks that open a line.
# Two patterns, not one alternation with ``^`` under MULTILINE: that one tried every
# alternative at every character of every reply, the line ones where no line starts.
_MARKDOWN_INLINE = re.compile(r"\*\*|__|`|\|.*\|")
_MARKDOWN_LINE = re.compile(r"\s{0,3}#{1,6}\s|\s*[-*•]\s|\s*\d+[.)]\s")
_URL = re.compile(r"https?://|www\.", re.IGNORECASE)


def _has_markdown(text: str) -> bool:
    if _MARKDOWN_INLINE.search(text):
        return True
    start = 0
    while True:
        if _MARKDOWN_LINE.match(text, start):
            return True
        start = text.find("\n", start) + 1
        if not start:
            return False


def _has_url(text: str) -> bool:
    # Only W folds to w: a reply with neither "://" nor "www." in any case has no URL, and
    # the case-blind pattern is slow to find that out.
    return ("://" in text or "www." in text.lower()) and _URL.search(text) is not None


# Words past which a spoken reply is verbose (a major issue) or long (a minor one).
VERBOSE_WORDS = 60
LONG_WORDS = 35


def _has_emoji(text: str) -> bool:
    if text.isascii():
        # Most replies; every symbol looked for is far outside ASCII.
        return False
    return any(unicodedata.category(ch) == "So" and ord(ch) >= 0x2190 for ch in text)


def delivery_issues(texts: Sequence[str]) -> list[dict[str, Any]]:
    """Measurable delivery problems per reply: ``meaningful`` ones (two or more questions,
    TTS-hostile formatting — Markdown, URLs, emoji —, over 60 words) and ``minor`` ones (over
    35 words, a reply repeated word for word)."""
    issues = []
    seen: set[str] = set()
    for i, text in enumerate(texts):
        meaningful: list[str] = []
        minor: list[str] = []
        questions = text.count("?")
        if questions >= 2:
            meaningful.append(f"{questions} questions in one turn")
        if _has_markdown(text) or _has_url(text) or _has_emoji(text):
            meaningful.append("formatting a voice would read out (Markdown, URL or emoji)")
        words = len(text.split())
        if words > VERBOSE_WORDS:
            meaningful.append(f"{words} words")
        elif words > LONG_WORDS:
            minor.append(f"{words} words")
        key = normalize(text)
        if key in seen and words >= 3:
            minor.append("repeats an earlier reply")
        seen.add(key)
        issues.append({"index": i, "meaningful": meaningful, "minor": minor})
    return issues


def _delivery(request: JudgeRequest) -> JudgeVerdict:
    view, _ = _agent_parts(request)
    replies = _replies(view)
    silent = _silent_turns(view)
    if not replies:
        if not silent:
            return JudgeVerdict(request.metric, None,
                                "not scored: the conversation has no agent turn to reply at")
        # The seed's 0 ("entirely unsuitable for voice delivery"): the caller heard nothing
        # at any turn the script waits for the agent. Measured, not guessed, so it is scored.
        return _verdict(request, 0.0, f"the agent said nothing at any of its {len(silent)} "
                        "turn(s): nothing reached the caller", "no_response", silent)
    issues = delivery_issues([str(r["text"]) for r in replies])
    # A turn left silent is dead air on a call: a meaningful issue of that turn.
    meaningful = sum(len(i["meaningful"]) for i in issues) + len(silent)
    minor = sum(len(i["minor"]) for i in issues)
    affected = [replies[i["index"]]["turn"] for i in issues if i["meaningful"]] + silent
    turns = len(replies) + len(silent)
    hostile = sum(1 for i in issues if any("formatting" in m for m in i["meaningful"]))
    if meaningful == 0:
        score = {0: 5.0, 1: 4.0}.get(minor, 3.0)
    elif meaningful == 1:
        score = 3.0
    elif hostile == len(replies) and len(replies) >= 2:
        score = 0.0
    elif 2 * len(affected) > turns:
        score = 1.0
    else:
        score = 2.0
    listed = [f"turn {replies[i['index']]['turn']}: {', '.join(i['meaningful'] + i['minor'])}"
              for i in issues if i["meaningful"] or i["minor"]]
    listed += [f"turn {t}: no reply" for t in silent]
    return _verdict(
        request, score,
        f"{meaningful} meaningful and {minor} minor delivery issue(s) in {len(replies)} "
        "replies" + (f" and {len(silent)} silent turn(s)" if silent else "")
        + (f": {'; '.join(listed)}" if listed else "")
        + " (proxy: formatting, questions per turn, length and repetition; naturalness of "
        "phrasing is not judged offline)",
        "tts_hostile_formatting" if hostile else "no_response" if silent else "delivery_issue",
        [replies[i["index"]]["turn"] for i in issues if i["meaningful"] or i["minor"]] + silent,
        issues=listed)


# The calls as the focus gives them, JSON dumps of a validated ToolCall or AgentToolCall:
# read as they are, a pydantic validation per call per metric cost more than the rest of
# the alignment.
class _Expected(NamedTuple):
    name: str
    arguments: Mapping[str, Any]


class _Made(NamedTuple):
    name: str
    arguments: Mapping[str, Any]
    turn: int


def _aligned_calls(
        request: JudgeRequest) -> tuple[list[_Expected], list[_Made], Alignment] | None:
    """The case's expected calls, the agent's and their pairing; None when none is expected."""
    expected_raw = request.focus.get("expected_tool_calls")
    if not expected_raw:
        return None
    expected = [_Expected(c["name"], c.get("arguments") or {}) for c in expected_raw]
    made = [_Made(c["name"], c["arguments"], c["turn"])
            for c in request.focus.get("tool_calls", [])]
    return expected, made, align_calls(expected, made)


def _task_completion(request: JudgeRequest) -> JudgeVerdict:
    aligned = _aligned_calls(request)
    if aligned is None:
        return JudgeVerdict(request.metric, None,
                            "not scored: the case gives no expected tool call, so completion "
                            f"can only be judged by reading the conversation; {_LLM_HINT}")
    expected, made, alignment = aligned
    problems = [f"{expected[i].name} not called" for i in alignment.missing]
    for ei, mj, _ in alignment.pairs:
        wrong = [k for k, v in expected[ei].arguments.items()
                 if not values_equal(v, made[mj].arguments.get(k))]
        if wrong:
            problems.append(f"{expected[ei].name} called with wrong {', '.join(wrong)}")
    calls_right = not problems
    view, _ = _agent_parts(request)
    replies = _replies(view)
    outcome = str(request.focus.get("task_outcome", ""))
    outcome_figures = extract_anchors(outcome)
    after_calls = min((c.turn for c in made), default=0)
    silent = _silent_turns(view, after_calls)
    speechless = bool(silent) and not any(int(r["turn"]) >= after_calls for r in replies)
    if speechless:
        # Measured, not read: whatever the calls did, the outcome never reached the user.
        problems.append(f"the agent said nothing at any of its {len(silent)} turn(s) after "
                        "its calls: the outcome never reached the user")
    else:
        said = [a for r in replies for a in extract_anchors(str(r["text"]))]
        unsaid = [a for a in outcome_figures if not anchor_supported(a, said)]
        figures = ", ".join(a.text for a in unsaid)
        if unsaid and calls_right and said_in_words(
                unsaid, numbers_said(str(r["text"]) for r in replies)):
            return JudgeVerdict(request.metric, None, f"not scored: every expected tool call "
                                f"made with the expected arguments, and the outcome's "
                                f"{figures} is not among the digits of the replies, which say "
                                f"it in words: whether they told it needs reading; {_LLM_HINT}")
        if unsaid:
            problems.append(f"outcome detail(s) never told to the user: {figures}")
    if problems:
        code = "no_response" if calls_right and speechless else "task_not_completed"
        return JudgeVerdict(
            request.metric, 0.0, "the task was not completed: " + "; ".join(problems),
            details={"failure_code": code, "turns": silent if code == "no_response" else [],
                     "problems": problems})
    if not outcome_figures:
        # Right calls are half the task; the other half, telling the outcome, has no figure
        # to look for here, and a refusal or an off-topic reply would pass as well as the
        # right answer.
        return JudgeVerdict(request.metric, None, "not scored: every expected tool call made "
                            "with the expected arguments, but the task outcome has no number, "
                            "date, amount or id to look for in the replies: whether it was "
                            f"told needs reading; {_LLM_HINT}")
    return JudgeVerdict(
        request.metric, 1.0, "every expected tool call made with the expected arguments and "
        "the outcome's figures told to the user (proxy: completion judged from the actions "
        "taken and the outcome's figures)",
        details={"failure_code": None, "turns": [], "problems": []})


# --- conversation --------------------------------------------------------------------------


def _segmentation(request: JudgeRequest) -> JudgeVerdict:
    check = segmentation_proxy(str(request.focus.get("text", "")))
    if check.score is None:
        return JudgeVerdict(request.metric, None, f"not scored: {check.why_not}; {_LLM_HINT}")
    return JudgeVerdict(
        request.metric, float(check.score),
        f"{check.sentences} sentence(s), longest {check.longest} words"
        + (f"; {', '.join(check.issues)}" if check.issues else "; no issue found")
        + " (proxy: punctuation and sentence lengths)",
        details={"issues": check.issues})


_CONVERSATION_NOT_SCORED = {
    "intelligibility": "clarity and readability need a language judge",
    "context": "whether a turn fits the conversation needs reading it",
}


def _turn_quality(request: JudgeRequest) -> JudgeVerdict:
    seg = _segmentation(request)
    not_scored = sorted(_CONVERSATION_NOT_SCORED)
    if seg.score is None:
        not_scored = sorted([*not_scored, "segmentation"])
    return JudgeVerdict(
        request.metric, seg.score,
        f"segmentation: {seg.reason}; intelligibility and context not scored offline",
        details={"segmentation": seg.score, "segmentation_reason": seg.reason,
                 "not_scored": not_scored,
                 **{f"{m}_reason": f"not scored: {why}; {_LLM_HINT}"
                    for m, why in _CONVERSATION_NOT_SCORED.items()}})


HANDLERS: dict[str, Handler] = {
    "tool_routing": _for_task({"agent": _not_scored(
        "without expected_outcome.tool_calls the right tools are unknown offline")}),
    "parameter_extraction": _for_task({"agent": _not_scored(
        "without expected_outcome.tool_calls the right arguments are unknown offline")}),
    "result_interpretation": _for_task({"agent": _result_interpretation}),
    "grounding_fidelity": _for_task({"agent": _grounding}),
    "instruction_compliance": _for_task({"agent": _not_scored(
        "following natural-language rules needs reading them")}),
    "information_gathering": _for_task({"agent": _information_gathering}),
    "conversation_management": _for_task({"agent": _not_scored(
        "ambiguity handling, recovery and closure need reading the conversation")}),
    "response_delivery": _for_task({"agent": _delivery}),
    "task_completion": _for_task({"agent": _task_completion}),
    "intelligibility": _for_task({"conversation": _not_scored(
        _CONVERSATION_NOT_SCORED["intelligibility"])}),
    "segmentation": _for_task({"conversation": _segmentation}),
    "context": _for_task({"conversation": _not_scored(_CONVERSATION_NOT_SCORED["context"])}),
    "turn_quality": _for_task({"conversation": _turn_quality}),
    "aspect_granularity": _for_task({"extraction": _not_scored(
        "whether an aspect is named at the right level is a judgement")}),
    "objection_completeness": _for_task({"extraction": _not_scored(
        "whether an objection triple is complete and accurate is a judgement")}),
    "competitor_context": _for_task({"extraction": _not_scored(
        "the nuance of a competitor mention is a judgement")}),
}


def family_handlers() -> dict[str, Handler]:
    """The handlers above, for ``HeuristicJudge`` to merge into its own."""
    return dict(HANDLERS)

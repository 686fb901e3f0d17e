"""What the LLM judge is told: one system prompt per family, naming that family's sources of
truth, and the user message of a call, built under the family's context policy
(:class:`~pytest_callqa.engine.core.judging.JudgeView`) — the one place that decides what a
call shows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core.cases import GoldenCase, format_timestamp
from ..core.judging import FULL_VIEW
from ..registry import default_registry
from .replies import SCORE_FORMATS, Item

_SCORING = """\
How to score:
- Judge each metric on its own dimension only, from what its inputs show.
- Give scores exactly on each metric's stated scale; it always wins. A standard benchmark \
criterion asked on the binary scale is 1 when it is met at or above its threshold and 0 \
when it is not.
- Be strict: when the evidence is mixed or incomplete, give the lower score.
- Transcript lines and turns are numbered ("turn N"); whenever you cite turns, use those \
numbers."""

_REPLY = """\
Answer with one JSON object only, nothing before or after it, with one key per metric \
asked for — the metric's id — whose value is that metric's verdict: its "score", its \
"reason" (one or two sentences), what you read in the output ("model_output_observed"), \
what you relied on in the reference when one is given ("expected_outcome_reference"), and \
every field the metric lists under "reply_fields"."""

CALL_PROMPT = f"""\
You review the output of AI systems that process customer calls (QA scorecards, keyword \
and topic detection, sentiment and summaries, translation). You are strict, precise and \
consistent.

The user message is one JSON object with these inputs:
- transcript: the call as it was spoken, one numbered line per turn.
- model_output: what the AI system under review produced for this call.
- expected_outcome: the human-verified answer for this call. It is your main reference for \
what a correct output looks like.
- config: the task configuration the system was given.
- metric: what to score, with "scale" and "score_format" (the only scores you may give), \
"instructions" (what the score measures) and "focus" (the part of the output to examine). \
When the input has "metrics" (a list) instead, score every one of them.
- case_specific_emphasis (optional): extra guidance for this case; apply it.

{_SCORING}
- Compare model_output with expected_outcome and check it against the transcript.
- A name, number, date, amount, event or promise found neither in the transcript nor in \
expected_outcome is fabricated. Never give a passing score to an output that states a \
fabricated fact.
- Scorecard questions of type PASS_FAIL: when expected_outcome scores a question 0 and \
model_output gives it the full max_score, the output passed a check the call failed. That \
is a false positive and a serious error.
- Ground every score: name the expected_outcome value and the model_output value it rests \
on.

{_REPLY}
"""

AGENT_PROMPT = f"""\
You evaluate a tool-using voice agent replayed through a scripted scenario. You are strict, \
precise and consistent.

The user message is one JSON object. "focus" holds everything you judge from: the agent's \
system prompt and business rules, the tools it may call, the conversation it lived \
("conversation": numbered turns — the customer's scripted words, the agent's own replies, \
its tool calls and the results the tools returned), its tool calls with their results, and \
the reference: the expected tool calls and the task outcome. "metric" (or "metrics") says \
what to score; case_specific_emphasis (optional) is extra guidance for this case.

{_SCORING}
- The sources of truth are the system prompt, the business rules, the tool results and what \
the customer said. A claim of the agent found in none of them is ungrounded; never give a \
passing score to a reply that states one.
- When a score is below 4 on a 0–5 rubric, or 0 on a pass/fail metric (task completion), \
name the failure: "failure_code" (a short snake_case label, e.g. wrong_tool_selected, \
hallucinated_result, missing_confirmation) and "turns" (the numbers of the turns where you \
saw it); otherwise failure_code is null.

{_REPLY}
"""

CONVERSATION_PROMPT = f"""\
You rate the turns of a conversational bot (an interpreter or an assistant) one at a time. \
You are strict, precise and consistent.

The user message is one JSON object. "focus" holds the bot turn to rate ("turn", "speaker", \
"text") and, where the metric needs it, "history": the numbered turns before it (the bot's \
own turns in its own words). You see no reference wording and nothing said after the turn: \
judge the turn's text as it stands and, for context, against its history only. "metric" (or \
"metrics") says what to score.

{_SCORING}

{_REPLY}
"""

EXTRACTION_PROMPT = f"""\
You judge one signal that a system extracted from a customer call (an aspect, an \
objection, a competitor mention...). You are strict, precise and consistent.

The user message is one JSON object. "focus" holds the signal ("signal_type", "signal"), \
"excerpt" — the numbered utterances of the call it was extracted from — and \
"ground_truth": the human-annotated signals of that type for this call. "metric" (or \
"metrics") says what to score, on a 1–5 rubric.

{_SCORING}
- Judge the signal against the excerpt and the ground truth only; what the excerpt does not \
say, the signal must not claim.

{_REPLY}
"""

_FAMILY_PROMPTS = {"agent": AGENT_PROMPT, "conversation": CONVERSATION_PROMPT,
                   "extraction": EXTRACTION_PROMPT}


def system_prompt(task: str) -> str:
    """The family's system prompt; the call-intelligence tasks share seed 000's."""
    return _FAMILY_PROMPTS.get(task, CALL_PROMPT)


def numbered_transcript(case: GoldenCase) -> str:
    """The transcript as ``turn N: [mm:ss] speaker: text`` lines, N counted from 1: the
    numbers the generation prompt gives the model under test (its ``n``), so a reason that
    cites "turn 3" is checked against the turn the model meant."""
    lines = []
    for number, turn in enumerate(case.transcript, start=1):
        stamp = f"[{format_timestamp(turn.start)}] " if turn.start is not None else ""
        who = f"{turn.speaker}: " if turn.speaker else ""
        text = " ".join(turn.text.split())
        lines.append(f"turn {number}: {stamp}{who}{text}")
    return "\n".join(lines)


def first_turn_number(task: str) -> int:
    """The number a report gives ``task``'s first turn: 1 where its judge is shown the
    transcript (:func:`numbered_transcript`, the numbers the model under test is told), 0
    for a family whose judge sees only each metric's focus and whose cases and details
    index turns from 0 (an agent's ``responses[].turn``, a conversation's ``turn_3``)."""
    spec = default_registry().tasks.get(task)
    # A task of a project's own with no view of its own is shown the whole transcript.
    return 1 if getattr(spec, "judge_view", FULL_VIEW).transcript else 0


def _metric_block(item: Item, *, with_focus: bool) -> dict[str, Any]:
    request = item.request
    block: dict[str, Any] = {
        "metric": item.ident,
        "scale": request.scale,
        "score_format": SCORE_FORMATS[request.scale],
        "instructions": request.instructions,
    }
    if request.reply_fields:
        block["reply_fields"] = {name: meaning for name, _kind, meaning in request.reply_fields}
    if with_focus:
        block["focus"] = dict(request.focus)
    return block


def build_messages(items: Sequence[Item]) -> list[dict[str, str]]:
    """The chat messages of one judge call over ``items`` (all of one task output): what the
    family's view allows, each metric's block, and a focus the metrics share sent once."""
    first = items[0].request
    case, view = first.case, first.view
    inputs: dict[str, Any] = {"task": first.task}
    if view.transcript:
        inputs["transcript"] = numbered_transcript(case)
    if view.model_output:
        inputs["model_output"] = first.model_output
    if view.expected_outcome:
        inputs["expected_outcome"] = case.expected_outcome
    if view.config:
        inputs["config"] = case.config
    emphasis = case.config.get("evaluation_criteria_override")
    if isinstance(emphasis, str) and emphasis.strip():
        inputs["case_specific_emphasis"] = emphasis.strip()
    shared = len(items) > 1 and all(item.request.focus == first.focus for item in items)
    if shared:
        inputs["focus"] = dict(first.focus)
    blocks = [_metric_block(item, with_focus=not shared) for item in items]
    if len(blocks) == 1:
        inputs["metric"] = blocks[0]
    else:
        inputs["metrics"] = blocks
    # No indent: an indented dump goes through the pure-Python encoder, ~20x slower, and a
    # batch builds thousands of prompts on the event loop before its first request leaves.
    text = json.dumps(inputs, ensure_ascii=False, default=str)
    return [{"role": "system", "content": system_prompt(first.task)},
            {"role": "user", "content": text}]


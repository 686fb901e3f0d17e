"""Agent judge: tool-using conversational agents scored on nine rubric metrics (seed 001).

**Golden case.** ``transcript`` is a scripted scenario in order: ``customer`` turns (the
user's script), ``agent`` turns (the reference agent, shown to the judge as a reference),
and ``tool_call`` turns — JSON ``{"name", "arguments"}`` — each immediately followed by a
``tool_result`` turn holding what the tool returned. ``config`` carries ``system_prompt``,
``business_rules``, ``tools`` (name, description, parameters with ``required`` and
``enum``), the metric selection ``metrics`` (``[{metric, weight?}]``), ``pass_threshold``
(0–100, default 75) and ``evaluation_criteria_override`` (free text added to every judge
prompt). ``expected_outcome`` is ``{"tool_calls": [{"name", "arguments", "turn"?}] | null,
"task_outcome": "..."}``.

**Model output** — what the agent under test did when replayed through the scenario:
``{"tool_calls": [{"turn", "name", "arguments"}], "responses": [{"turn", "text"}]}``. A
response's ``turn`` is the index of the agent turn of the transcript it stands for; a call's
``turn`` is the transcript position it was made before. The customer turns are scripted and
each call receives the recorded result of the same tool (the closest match on arguments),
so the conversation the agent lived can be rebuilt (:func:`replay`) and judged.

**Scores.** Each metric is 0–5 (``task_completion`` 0/1), normalised to 0–1, weighted by
the selection's weights renormalised to 1 (and again over the metrics actually scored);
``overall_score`` is that weighted sum × 100 and ``passed`` compares it with
``pass_threshold``. The task score is ``overall_score / 100``. With ``expected_outcome.
tool_calls`` given, ``tool_routing`` and ``parameter_extraction`` are computed here, from an
order-aware alignment of the calls and normalised argument comparison, instead of asking the
judge; without them the judge scores those two as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cases import GoldenCase
from ..judges.base import JudgeRequest, JudgeVerdict, Scale
from ..registry import Bands, MetricSpec
from ..results import MetricResult
from ..text import (
    anchor_supported,
    contains_phrase,
    extract_anchors,
    normalize,
    normalize_loose,
)
from .agent_schemas import (
    AGENT_SPEAKERS,
    CUSTOMER_SPEAKERS,
    TASK_COMPLETION,
    TOOL_CALL,
    TOOL_RESULT,
    AgentConfig,
    AgentExpected,
    AgentOutput,
    AgentToolCall,
    MetricSelection,
    ToolCall,
    parse_tool_call_text,
)
from .base import structure_spec
from .family_base import RUBRIC_BANDS, RUBRIC_GOOD, FamilyTask, checked_score

if TYPE_CHECKING:
    from ..evaluate import EvalContext

TASK = "agent"
PROGRAMMATIC = ("tool_routing", "parameter_extraction")

_DIAGNOSTICS = (
    "\n\nAlso return, in details: failure_code — a short snake_case label of the failure "
    "mode (e.g. wrong_tool_selected, hallucinated_result, missing_confirmation), null when "
    "the score is 4 or more; turns — the transcript turn indices where you saw the issue "
    "(empty when none)."
)

TOOL_ROUTING_RUBRIC = (
    "Did the agent call the right tools, in the right order, and nothing else?\n"
    "5 = every expected tool called, in order, no superfluous call. "
    "4 = every critical tool called; the order deviates slightly or one call is redundant. "
    "3 = one expected tool missing or one wrong tool called; the flow mostly holds. "
    "2 = several tool errors; the flow is badly hurt but partly works. "
    "1 = most calls wrong or missing (e.g. one of N expected tools called). "
    "0 = no tool called although one was needed, or an entirely wrong set of tools."
)
PARAMETER_RUBRIC = (
    "Are the arguments of the agent's tool calls the values the conversation gave?\n"
    "5 = every argument correct and taken from what the user said. "
    "4 = critical arguments correct; one minor argument slightly off. "
    "3 = one critical argument wrong or missing, changing what the tool does. "
    "2 = several argument errors; the tool likely failed or answered wrongly. "
    "1 = most arguments invented or missing, not grounded in the conversation. "
    "0 = nothing taken from the conversation; every value invented or empty."
)
RESULT_RUBRIC = (
    "Does what the agent tells the user match what its tools returned?\n"
    "5 = tool output conveyed accurately and completely; tool errors handled well. "
    "4 = mostly accurate; a minor omission that does not mislead. "
    "3 = one meaningful inaccuracy in relaying a result. "
    "2 = a result significantly misrepresented. "
    "1 = tool output largely ignored or contradicted. "
    "0 = tool output entirely ignored; the reply has no link to what the tool returned."
)
GROUNDING_RUBRIC = (
    "Can every specific claim of the agent be traced to the conversation, a tool result, "
    "the system prompt or the business rules?\n"
    "5 = every specific claim grounded; uncertain information hedged. "
    "4 = critical claims grounded; one minor unverifiable statement. "
    "3 = one meaningful ungrounded claim that could mislead the user. "
    "2 = several ungrounded claims — invented facts or policies. "
    "1 = most claims ungrounded; the agent is confabulating. "
    "0 = the replies are fabricated, unconnected to any provided context."
)
INSTRUCTION_RUBRIC = (
    "Does the agent follow the explicit rules of its system prompt and business rules?\n"
    "5 = every instruction followed; stays in role and scope. "
    "4 = critical instructions followed; one minor deviation. "
    "3 = one meaningful instruction broken; core function intact. "
    "2 = several instructions broken; partly outside its boundaries. "
    "1 = most instructions ignored. "
    "0 = system prompt and business rules disregarded entirely."
)
GATHERING_RUBRIC = (
    "Did the agent collect what it needed before acting, and reuse what it was told?\n"
    "5 = all required information collected before acting; no redundant question. "
    "4 = critical information collected; one redundant question or a minor missed detail. "
    "3 = one required field missing before acting, or one earlier detail forgotten. "
    "2 = several gaps; the agent acted on incomplete data. "
    "1 = most required information never collected. "
    "0 = no attempt to gather information."
)
MANAGEMENT_RUBRIC = (
    "Does the agent handle ambiguity, recover from errors and close the conversation?\n"
    "5 = ambiguity clarified, errors acknowledged and fixed, a proper goodbye. "
    "4 = well managed; one minor missed opportunity. "
    "3 = one meaningful management failure. "
    "2 = several failures; the conversation feels disjointed. "
    "1 = poorly managed throughout. "
    "0 = no management: the agent froze or produced an incoherent sequence."
)
DELIVERY_RUBRIC = (
    "Are the replies fit to be spoken: concise, natural, not repetitive, free of formatting "
    "a text-to-speech voice would read out?\n"
    "5 = every reply concise and natural; nothing TTS-hostile. "
    "4 = mostly natural and concise; one minor issue. "
    "3 = one meaningful delivery issue (e.g. two or more questions in one turn). "
    "2 = several delivery issues; robotic or verbose. "
    "1 = delivery problems throughout. "
    "0 = replies entirely unsuitable for voice."
)
COMPLETION_RUBRIC = (
    "Did the agent complete the primary task stated in expected_outcome.task_outcome? "
    "1 = completed, 0 = not completed."
)


def _metric(metric_id: str, name: str, description: str, tier: str, weight: float,
            rubric: str, *, binary: bool = False, in_defaults: bool = True) -> MetricSpec:
    programmatic = metric_id in PROGRAMMATIC
    return MetricSpec(
        id=metric_id, task=TASK, name=name, description=description,
        scale="0/1" if binary else "0-5",
        threshold="= 1" if binary else ">= 4 (0–5 rubric)",
        bands=Bands(good=1.0) if binary else RUBRIC_BANDS,
        weight=weight, source="judge+programmatic" if programmatic else "judge",
        tier=tier, rubric=rubric, in_defaults=in_defaults,
    )


AGENT_METRICS: tuple[MetricSpec, ...] = (
    _metric("tool_routing", "Tool Routing", "Correct tool names and call sequence.",
            "execution", 0.15, TOOL_ROUTING_RUBRIC),
    _metric("parameter_extraction", "Parameter Extraction",
            "Argument values correctly extracted from the conversation for the tools.",
            "execution", 0.15, PARAMETER_RUBRIC),
    _metric("result_interpretation", "Result Interpretation",
            "Tool output accurately reflected in the agent's replies.", "execution", 0.15,
            RESULT_RUBRIC),
    _metric("grounding_fidelity", "Grounding Fidelity",
            "Every agent claim traceable to the conversation, tools or business rules.",
            "knowledge", 0.125, GROUNDING_RUBRIC),
    _metric("instruction_compliance", "Instruction Compliance",
            "Explicit rules of the system prompt and business rules followed.", "knowledge",
            0.125, INSTRUCTION_RUBRIC),
    _metric("information_gathering", "Information Gathering",
            "Required information collected before acting; stated information reused.",
            "process", 0.10, GATHERING_RUBRIC),
    _metric("conversation_management", "Conversation Management",
            "Ambiguity handling, error recovery and closure.", "process", 0.10,
            MANAGEMENT_RUBRIC),
    _metric("response_delivery", "Response Delivery",
            "Concise, natural, TTS-friendly, non-repetitive replies.", "delivery", 0.10,
            DELIVERY_RUBRIC),
    _metric(TASK_COMPLETION, "Task Completion",
            "Whether the agent completed the primary task of expected_outcome (opt-in: "
            "select it with an explicit weight).", "execution", 0.0, COMPLETION_RUBRIC,
            binary=True, in_defaults=False),
)
AGENT_METRIC_IDS: tuple[str, ...] = tuple(spec.id for spec in AGENT_METRICS)
DEFAULT_WEIGHTS: dict[str, float] = {
    spec.id: float(spec.weight or 0.0) for spec in AGENT_METRICS if spec.in_defaults
}

METRICS: tuple[MetricSpec, ...] = (
    *AGENT_METRICS,
    MetricSpec(
        id="overall_score", task=TASK, name="Overall Score",
        description="Weighted sum of the normalised metric scores × 100 (weights "
                    "renormalised over the selected and scored metrics).",
        scale="0-100", threshold=">= pass_threshold (default 75)", bands=Bands(good=75.0),
    ),
    MetricSpec(
        id="passed", task=TASK, name="Passed",
        description="1 when overall_score >= the case's pass_threshold.",
        scale="0/1", threshold="= 1", bands=Bands(good=1.0),
    ),
    structure_spec(TASK),
)


# --- weights ------------------------------------------------------------------------------


def resolve_weights(selection: Sequence[MetricSelection] | None) -> dict[str, float]:
    """The seed's weight resolution: defaults when nothing is selected, otherwise the
    selected metrics with their override (or default) weight; renormalised to sum to 1.

    ``task_completion`` has no default weight, so selecting it without one is an error
    (``MetricSelection`` already refuses it when a case is loaded).
    """
    if not selection:
        raw = dict(DEFAULT_WEIGHTS)
    else:
        raw = {}
        for item in selection:
            if item.weight is None and item.metric == TASK_COMPLETION:
                raise ValueError("task_completion requires an explicit weight")
            spec_weight = next(s.weight for s in AGENT_METRICS if s.id == item.metric)
            raw[item.metric] = float(item.weight if item.weight is not None
                                     else spec_weight or 0.0)
    total = sum(raw.values())
    if total <= 0:
        raise ValueError("the selected metric weights add up to 0")
    return {metric_id: weight / total for metric_id, weight in raw.items()}


# --- the scenario and its replay -----------------------------------------------------------


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


def reference_calls(case: GoldenCase) -> list[ReferenceCall]:
    calls = []
    turns = case.transcript
    for i, turn in enumerate(turns[:-1]):
        if speaker_kind(turn.speaker) == TOOL_CALL:
            call, _ = parse_tool_call_text(turn.text)
            if call is not None:
                calls.append(ReferenceCall(call, turns[i + 1].text))
    return calls


def _same_args(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    return sum(1 for key, value in a.items() if key in b and values_equal(value, b[key]))


def ordered_calls(output: AgentOutput) -> list[AgentToolCall]:
    """The model's calls in the order they happened (by turn, then as listed)."""
    return [c for _, c in sorted(enumerate(output.tool_calls), key=lambda p: (p[1].turn, p[0]))]


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


def replay(case: GoldenCase, output: AgentOutput) -> list[dict[str, Any]]:
    """The conversation the agent under test lived: scripted customer turns, its own replies
    at the agent turns, its own calls with the results the scenario gives them."""
    calls = ordered_calls(output)
    results = mock_results(case, calls)
    responses = {r.turn: r.text for r in output.responses}
    view: list[dict[str, Any]] = []
    n = len(case.transcript)
    for position in range(n + 1):
        for call, result in zip(calls, results, strict=True):
            if call.turn == position:
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
                         "missing": position not in responses or not text.strip()})
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
    ("$1,540" equals 1540, "11 am" equals "11:00 AM"); lists compare as multisets.
    """
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
    if _compact(a) == _compact(b):
        return True
    anchors_a, anchors_b = extract_anchors(a), extract_anchors(b)
    return (len(anchors_a) == 1 and len(anchors_b) == 1
            and anchor_supported(anchors_a[0], anchors_b)
            and _residue(a, anchors_a[0].text) == _residue(b, anchors_b[0].text))


_UNIT_WORDS = frozenset({"usd", "dollar", "dollars", "bucks", "rs", "inr", "rupee", "rupees",
                         "eur", "euro", "euros", "gbp", "pound", "pounds"})


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
                    config: AgentConfig | None = None, *, reply: bool = False) -> list[str]:
    """What the agent had been told before ``position``: customer turns, recorded tool
    results and its instructions. Its own earlier replies are not evidence: an invented
    value does not become grounded by saying it twice.

    A ``reply`` at agent turn ``position`` has also seen the results of calls made at that
    position (they come right before it); a call made there has not.
    """
    def seen(entry: Mapping[str, Any]) -> bool:
        if entry["speaker"] in ("customer", "other"):
            return bool(entry["turn"] < position)
        if entry["speaker"] == TOOL_RESULT and entry.get("recorded"):
            return bool(entry["turn"] < position or (reply and entry["turn"] == position))
        return False

    texts = [str(entry["text"]) for entry in view if seen(entry)]
    if config is not None:
        texts.extend([config.system_prompt, *config.business_rules])
    return [t for t in texts if t.strip()]


# --- programmatic tool routing and parameter extraction ------------------------------------


@dataclass
class Alignment:
    """Expected calls paired with model calls: ``pairs`` are (expected, model, in_order)."""

    pairs: list[tuple[int, int, bool]] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    extra: list[int] = field(default_factory=list)


def align_calls(expected: Sequence[ToolCall], made: Sequence[AgentToolCall]) -> Alignment:
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


def score_tool_routing(expected: Sequence[ToolCall], made: Sequence[AgentToolCall]) -> RubricScore:
    """Tool routing on the seed's 0–5 rubric from an alignment of the calls."""
    al = align_calls(expected, made)
    n, k = len(expected), len(al.pairs)
    missing, extra = len(al.missing), len(al.extra)
    out_of_order = [p for p in al.pairs if not p[2]]
    # A wrong tool is an extra call standing where an expected one is missing.
    wrong = min(missing, extra)
    redundant = extra - wrong
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
                  else f"no tool call expected; {extra} unnecessary call(s)")
    elif not made:
        score, reason = 0.0, f"no tool called; {n} expected"
    elif k == 0:
        score, reason = 0.0, "none of the expected tools was called (entirely wrong tool set)"
    elif missing == 0:
        deviations = extra + len(out_of_order)
        score = {0: 5.0, 1: 4.0, 2: 3.0}.get(deviations, 2.0)
        reason = (f"all {n} expected tools called"
                  + (f"; {len(out_of_order)} out of order" if out_of_order else "")
                  + (f"; {extra} redundant call(s)" if extra else ""))
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
    return RubricScore(score, reason, code, bad_turns if score < 5 else [], details)


def score_parameters(
    expected: Sequence[ToolCall], made: Sequence[AgentToolCall], config: AgentConfig,
    view: Sequence[Mapping[str, Any]],
) -> RubricScore | None:
    """Parameter extraction on the seed's 0–5 rubric, over the aligned calls.

    Each expected argument is correct, wrong or missing; a model argument the expected call
    does not have counts as fabricated when its value was never said before the call. An
    error on a parameter declared ``required: false`` is minor. None when no call was
    expected and none was made (nothing to assess).
    """
    al = align_calls(expected, made)
    if not expected and not made:
        return None
    correct = 0
    errors: list[dict[str, Any]] = []
    total = 0
    for ei, mj, _ in al.pairs:
        exp, got = expected[ei], made[mj]
        tool = config.tool(exp.name)
        context = contexts_before(view, got.turn, config)
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
                invented = not listed and not value_grounded(got.arguments[key], context)
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
            if not value_grounded(value, context):
                errors.append({"call": exp.name, "parameter": key, "kind": "fabricated",
                               "critical": True, "turn": got.turn, "got": value})
    for mj in al.extra:
        got = made[mj]
        context = contexts_before(view, got.turn, config)
        for key, value in got.arguments.items():
            if not value_grounded(value, context):
                errors.append({"call": got.name, "parameter": key, "kind": "fabricated",
                               "critical": True, "turn": got.turn, "got": value})
    fabricated = sum(1 for e in errors if e["kind"] == "fabricated")
    missing = sum(1 for e in errors if e["kind"] == "missing")
    n_critical = sum(1 for e in errors if e["critical"])
    details: dict[str, Any] = {"arguments_checked": total, "correct": correct,
                               "errors": errors}
    expected_args = sum(len(c.arguments) for c in expected)
    if expected_args and not al.pairs:
        score, reason = 0.0, "no expected tool was called, so no argument was extracted"
    elif not errors:
        score = 5.0
        reason = (f"all {total} arguments correct" if total
                  else "no argument expected and none invented")
    elif len(errors) == 1:
        score = 4.0 if not n_critical else 3.0
        e = errors[0]
        reason = (f"one {'minor' if not n_critical else 'critical'} argument error: "
                  f"{e['call']}.{e['parameter']} {e['kind']}")
    elif total and correct == 0 and all(e["kind"] in ("fabricated", "missing") for e in errors):
        score, reason = 0.0, "no argument taken from the conversation: all invented or empty"
    elif 2 * (fabricated + missing) > max(total, 1):
        score = 1.0
        reason = (f"most arguments invented or missing ({correct} of {total} correct, "
                  f"{fabricated} invented, {missing} missing)")
    else:
        score = 2.0
        reason = f"{len(errors)} argument errors ({correct} of {total} correct)"
    code = None
    if score < RUBRIC_GOOD:
        kinds = {e["kind"] for e in errors}
        code = ("fabricated_parameter" if "fabricated" in kinds
                else "wrong_parameter_value" if "wrong" in kinds
                else "missing_parameter" if "missing" in kinds
                else "no_tool_called")
    turns = sorted({int(e["turn"]) for e in errors})
    return RubricScore(score, reason, code, turns, details)


# --- the task ---------------------------------------------------------------------------------


def _diagnostics(verdict: JudgeVerdict, score: float) -> tuple[str | None, list[int]]:
    code = verdict.details.get("failure_code")
    turns_raw = verdict.details.get("turns")
    turns = [t for t in turns_raw if isinstance(t, int) and not isinstance(t, bool)] \
        if isinstance(turns_raw, list) else []
    if score >= RUBRIC_GOOD:
        return None, turns
    if isinstance(code, str) and code.strip():
        return normalize(code).replace(" ", "_"), turns
    # The judge gave no label: a generic one still tells a reader which metric failed.
    return f"low_{verdict.metric}", turns


class AgentTask(FamilyTask):
    name = TASK
    title = "Agent"
    metrics = METRICS
    output_model = AgentOutput
    expected_model = AgentExpected
    config_model = AgentConfig

    def check_transcript(self, case: GoldenCase) -> list[str]:
        return super().check_transcript(case) + scenario_problems(case)

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        problems = []
        declared = {t.name for t in config.tools}
        if declared and expected.tool_calls:
            for i, call in enumerate(expected.tool_calls):
                if call.name not in declared:
                    problems.append(f"expected_outcome.tool_calls[{i}].name: {call.name!r} is "
                                    "not one of config.tools")
        for i, call in enumerate(expected.tool_calls or []):
            if call.turn is not None and call.turn > len(case.transcript):
                problems.append(f"expected_outcome.tool_calls[{i}].turn: {call.turn} is past "
                                f"the end of the transcript ({len(case.transcript)} turns)")
        return problems

    def output_problems(self, ctx: EvalContext) -> list[str]:
        out: AgentOutput = ctx.parsed  # type: ignore[assignment]
        turns = ctx.case.transcript
        problems = []
        for i, response in enumerate(out.responses):
            if response.turn >= len(turns):
                problems.append(f"responses[{i}].turn: {response.turn} is past the end of the "
                                f"transcript ({len(turns)} turns)")
            elif speaker_kind(turns[response.turn].speaker) != "agent":
                problems.append(f"responses[{i}].turn: turn {response.turn} is a "
                                f"{turns[response.turn].speaker or 'unlabelled'} turn, not an "
                                "agent turn")
        for i, call in enumerate(out.tool_calls):
            if call.turn > len(turns):
                problems.append(f"tool_calls[{i}].turn: {call.turn} is past the end of the "
                                f"transcript ({len(turns)} turns)")
        return problems

    # --- judging ------------------------------------------------------------------------

    def focus(self, ctx: EvalContext) -> dict[str, Any]:
        """What every agent judgement looks at; judges need no task knowledge beyond it."""
        out: AgentOutput = ctx.parsed  # type: ignore[assignment]
        exp: AgentExpected = ctx.expected  # type: ignore[assignment]
        config: AgentConfig = ctx.config  # type: ignore[assignment]
        view = replay(ctx.case, out)
        calls = ordered_calls(out)
        results = mock_results(ctx.case, calls)
        return {
            "conversation": view,
            "system_prompt": config.system_prompt,
            "business_rules": list(config.business_rules),
            "tools": [t.model_dump(mode="json") for t in config.tools],
            "expected_tool_calls": None if exp.tool_calls is None
            else [c.model_dump(mode="json") for c in exp.tool_calls],
            "task_outcome": exp.task_outcome,
            "tool_calls": [{**c.model_dump(mode="json"), "result": r}
                           for c, r in zip(calls, results, strict=True)],
            "responses": [r.model_dump(mode="json") for r in out.responses],
            "evaluation_criteria_override": config.evaluation_criteria_override,
        }

    def instructions(self, metric_id: str, config: AgentConfig) -> str:
        spec = self.spec(metric_id)
        text = (spec.rubric or spec.description) + _DIAGNOSTICS
        if config.evaluation_criteria_override and config.evaluation_criteria_override.strip():
            text += ("\n\nTest case-specific evaluation emphasis:\n"
                     + config.evaluation_criteria_override.strip())
        return text

    def _programmatic(self, ctx: EvalContext) -> bool:
        return ctx.expected.tool_calls is not None  # type: ignore[attr-defined]

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        config: AgentConfig = ctx.config  # type: ignore[assignment]
        weights = resolve_weights(config.metrics)
        focus = self.focus(ctx)
        requests = []
        for metric_id in weights:
            if metric_id in PROGRAMMATIC and self._programmatic(ctx):
                continue
            scale: Scale = "binary" if metric_id == TASK_COMPLETION else "rubric0_5"
            requests.append(self.request(ctx, metric_id, scale, focus,
                                         self.instructions(metric_id, config)))
        return requests

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        config: AgentConfig = ctx.config  # type: ignore[assignment]
        exp: AgentExpected = ctx.expected  # type: ignore[assignment]
        out: AgentOutput = ctx.parsed  # type: ignore[assignment]
        weights = resolve_weights(config.metrics)
        metrics: dict[str, MetricResult] = {}
        view = replay(ctx.case, out)
        calls = ordered_calls(out)
        for metric_id, weight in weights.items():
            spec = self.spec(metric_id)
            meta = {"tier": spec.tier, "weight": weight}
            if metric_id in PROGRAMMATIC and exp.tool_calls is not None:
                scored = (score_tool_routing(exp.tool_calls, calls)
                          if metric_id == "tool_routing"
                          else score_parameters(exp.tool_calls, calls, config, view))
                if scored is None:
                    metrics[metric_id] = MetricResult.not_scored(
                        "n/a: no tool call expected and none made", **meta)
                    continue
                metrics[metric_id] = spec.result(
                    scored.score, scored.reason, score_0_5=scored.score,
                    normalized=scored.score / 5, failure_code=scored.failure_code,
                    turns=scored.turns, computed="programmatic", **meta, **scored.details)
                continue
            metrics[metric_id] = self._judged(metric_id, verdicts.get(metric_id), meta)

        parts = [(mid, metrics[mid], w) for mid, w in weights.items()]
        total = weight_sum = 0.0
        dropped = []
        for mid, result, w in parts:
            if not result.scored or result.value is None:
                dropped.append(mid)
                continue
            total += w * float(result.details.get("normalized", result.value))
            weight_sum += w
        if weight_sum == 0:
            return metrics, None, dropped
        overall = 100 * total / weight_sum
        passed = overall >= config.pass_threshold
        effective = {mid: w / weight_sum for mid, r, w in parts if mid not in dropped}
        metrics["overall_score"] = MetricResult(
            value=overall, rating="good" if passed else "fail",
            reason=f"{overall:.1f} / 100 against a pass threshold of "
                   f"{config.pass_threshold:g}",
            details={"pass_threshold": config.pass_threshold, "passed": passed,
                     "weights": weights, "effective_weights": effective,
                     "renormalised_without": dropped},
        )
        metrics["passed"] = MetricResult(
            value=1.0 if passed else 0.0, rating="good" if passed else "fail",
            reason=f"overall {overall:.1f} {'>=' if passed else '<'} "
                   f"{config.pass_threshold:g}",
            details={"pass_threshold": config.pass_threshold},
        )
        return metrics, overall / 100, dropped

    def _judged(self, metric_id: str, verdict: JudgeVerdict | None,
                meta: dict[str, Any]) -> MetricResult:
        spec = self.spec(metric_id)
        if verdict is None:
            return MetricResult.not_scored("no judge verdict", **meta)
        if verdict.score is None:
            return MetricResult.not_scored(verdict.reason, **meta, **verdict.details)
        scale: Scale = "binary" if metric_id == TASK_COMPLETION else "rubric0_5"
        score, warning = checked_score(scale, verdict.score)
        assert score is not None
        code, turns = _diagnostics(verdict, score * (5 if scale == "binary" else 1))
        details = {**verdict.details, **meta, "failure_code": code, "turns": turns,
                   "normalized": score if scale == "binary" else score / 5,
                   "computed": "judge"}
        if scale != "binary":
            details["score_0_5"] = score
        if warning:
            details["warning"] = warning
        result = spec.result(score, verdict.reason, **details)
        result.flagged = verdict.flagged or warning is not None
        return result

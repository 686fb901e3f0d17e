"""The agent family's nine rubric metrics (seed 001): their rubrics, tiers and default
weights, and how a case's metric selection resolves to weights."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.judging import ReplyField
from ..core.metrics import Bands, MetricSpec
from .base import structure_spec
from .family_base import RUBRIC_BANDS

if TYPE_CHECKING:
    from .agent_schemas import MetricSelection

TASK = "agent"
TASK_COMPLETION = "task_completion"
PROGRAMMATIC = ("tool_routing", "parameter_extraction")

# What a judge adds to a rubric verdict (seed 001): the failure and where it shows.
_TURNS_FIELD: ReplyField = (
    "turns", "turns", "the numbers of the conversation turns where the issue shows; empty "
    "when there is none")
DIAGNOSTIC_FIELDS: tuple[ReplyField, ...] = (
    ("failure_code", "code", "a short snake_case label of the failure mode (e.g. "
     "wrong_tool_selected, hallucinated_result, missing_confirmation) when the score is below "
     "4; null otherwise"),
    _TURNS_FIELD,
)
# The same for task completion, scored 0 or 1: a strict schema without them left every
# failed task "low_task_completion" with no turn.
COMPLETION_DIAGNOSTIC_FIELDS: tuple[ReplyField, ...] = (
    ("failure_code", "code", "a short snake_case label of why the task was not completed "
     "(e.g. transfer_not_made, wrong_account_used) when the score is 0; null when it is 1"),
    _TURNS_FIELD,
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
    "Did the agent complete the primary task stated in focus.task_outcome? "
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


def rubric_from_count(problems: int, checked: int) -> float:
    """The seed's 0–5 rubric read off a count of problems among ``checked`` items: none is 5,
    one meaningful problem is 3, several is 2, most of them is 1."""
    if problems == 0:
        return 5.0
    if problems == 1:
        return 3.0
    return 1.0 if 2 * problems > checked else 2.0


def argument_tally(correct: int, total: int, errors: Sequence[Mapping[str, Any]]) -> str:
    """What became of the expected arguments, adding up to their count, then the arguments
    invented that no expected call has: "1 of 6 correct, 1 invented, 5 missing" counted an
    invented extra among the six expected."""
    # An error on an expected argument carries its expected value; an extra one has none.
    kinds = Counter(e["kind"] for e in errors if "expected" in e)
    tally = ", ".join([f"{correct} of {total} expected arguments correct"] + [
        f"{kinds[kind]} {label}" for kind, label in
        (("wrong", "wrong"), ("fabricated", "invented"), ("missing", "missing")) if kinds[kind]])
    unexpected = len(errors) - kinds.total()
    if unexpected:
        tally += f"; {unexpected} unexpected argument{'s' * (unexpected > 1)} invented"
    return tally

"""Case, configuration and output schemas of the agent family (seed 001).

The agent is replayed through a scripted scenario: the golden transcript holds the customer's
turns, the reference agent's turns and the tool calls the reference agent made, each followed
by the result the tool returned. The model under test answers at the agent turns and makes its
own tool calls; a call of a tool receives the recorded result of the same tool (the scenario
is the tool mock). See ``agent.py`` for how the two are merged for judging.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..core.context import unreadable_json
from ..core.memo import batch_memoised
from .agent_metrics import AGENT_METRIC_IDS, TASK_COMPLETION
from .call_schemas import LooseConfig, NoBooleanNumbers, StrictModel, _duplicates

CUSTOMER_SPEAKERS = frozenset({"customer", "user", "caller", "patient", "client"})
AGENT_SPEAKERS = frozenset({"agent", "assistant", "bot", "system_agent"})
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"


# The seed's pass mark of an agent case's overall score (0–100).
DEFAULT_PASS_THRESHOLD = 75.0

class ToolCall(StrictModel):
    """A tool call of the reference (expected_outcome) or of the model under test."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    turn: int | None = Field(default=None, ge=0)


class AgentToolCall(StrictModel):
    """A call the model made; ``turn`` is the transcript position the call was made before."""

    turn: int = Field(ge=0)
    name: str = Field(min_length=1)
    arguments: dict[str, Any]


class Called(Protocol):
    """What aligning reads of a call: a :class:`ToolCall`, an :class:`AgentToolCall`, or a
    judge's lighter record of one read from its focus."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Mapping[str, Any]: ...


class AgentResponse(StrictModel):
    """What the model said at agent turn ``turn`` of the transcript."""

    turn: int = Field(ge=0)
    text: str


class AgentOutput(StrictModel):
    tool_calls: list[AgentToolCall]
    responses: list[AgentResponse]

    @model_validator(mode="after")
    def _unique_turns(self) -> AgentOutput:
        dups = _duplicates([r.turn for r in self.responses])
        if dups:
            raise ValueError(f"two responses for turn {', '.join(dups)}")
        return self


class AgentExpected(StrictModel):
    """The golden truth: the tool calls that should be made (None = not specified, judge
    only) and the outcome of the task in words."""

    tool_calls: list[ToolCall] | None = None
    task_outcome: str = Field(min_length=1)


class ToolParameter(NoBooleanNumbers):
    model_config = ConfigDict(extra="allow", frozen=True)

    description: str = ""
    # Required parameters are the critical ones of the parameter_extraction rubric.
    required: bool = True
    # Values a parameter takes from a fixed list need not be said in the conversation.
    enum: list[str] | None = None


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, ToolParameter] = Field(default_factory=dict)


class MetricSelection(NoBooleanNumbers):
    """One selected metric of ``config.metrics`` with an optional weight override."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str
    weight: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _check(self) -> MetricSelection:
        if self.metric not in AGENT_METRIC_IDS:
            raise ValueError(f"unknown agent metric {self.metric!r} (known: "
                             f"{', '.join(AGENT_METRIC_IDS)})")
        if self.metric == TASK_COMPLETION and self.weight is None:
            raise ValueError("task_completion has no default weight (0): select it with an "
                             "explicit weight, e.g. {metric: task_completion, weight: 0.5}")
        return self


class AgentConfig(LooseConfig):
    system_prompt: str = ""
    business_rules: list[str] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    metrics: list[MetricSelection] | None = None
    pass_threshold: float = Field(default=DEFAULT_PASS_THRESHOLD, ge=0, le=100)
    evaluation_criteria_override: str | None = None

    @field_validator("business_rules", mode="before")
    @classmethod
    def _rules_as_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _check(self) -> AgentConfig:
        if self.metrics:
            dups = _duplicates([m.metric for m in self.metrics])
            if dups:
                raise ValueError(f"metrics: {', '.join(dups)} selected twice")
            if sum(m.weight if m.weight is not None else 1.0 for m in self.metrics) <= 0:
                raise ValueError("metrics: the selected weights add up to 0")
        dups = _duplicates([t.name for t in self.tools])
        if dups:
            raise ValueError(f"tools: {', '.join(dups)} declared twice")
        return self

    def tool(self, name: str) -> ToolSpec | None:
        for spec in self.tools:
            if spec.name == name:
                return spec
        return None


@batch_memoised
def parse_tool_call_text(text: str) -> tuple[ToolCall | None, str | None]:
    """A transcript ``tool_call`` turn: JSON ``{"name": ..., "arguments": {...}}``; the
    scenario's calls are read again for every output of the case."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"a tool_call turn must be JSON {{\"name\", \"arguments\"}} ({exc.msg})"
    except (ValueError, RecursionError) as exc:
        # Valid JSON that Python will not read: a number of over 4,300 digits, or nesting
        # deeper than the interpreter's recursion limit.
        return None, f"a tool_call turn cannot be read: {unreadable_json(exc)}"
    if not isinstance(data, dict):
        return None, "a tool_call turn must be a JSON object {\"name\", \"arguments\"}"
    try:
        return ToolCall.model_validate(data, strict=True), None
    except ValueError as exc:
        return None, f"a tool_call turn must be {{\"name\", \"arguments\"}}: {exc}"

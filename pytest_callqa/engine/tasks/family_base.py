"""Shared behaviour of the agent, conversation, extraction and grounding families.

These families differ from the call-intelligence tasks in two ways the base class does not
cover: the golden truth of an agent case is not in the shape of the model's output (expected
tool calls versus a trajectory), and every family needs a transcript whose turns say
something. The helpers below add both without changing how the engine drives a task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..cases import GoldenCase, validation_problems
from ..judges.base import JudgeRequest, Scale, lowest_score, valid_score
from ..registry import Bands
from .base import BaseTask

if TYPE_CHECKING:
    from ..evaluate import EvalContext

# Rubric scores at or above this are "acceptable or better": no failure code is reported.
# The same bands serve the 0–5 agent rubrics and the 1–5 extraction rubrics: 4 is "good,
# one minor issue", 3 "one meaningful issue".
RUBRIC_GOOD = 4.0
RUBRIC_BANDS = Bands(good=RUBRIC_GOOD, acceptable=3.0)


class FamilyTask(BaseTask):
    """A task whose golden truth may have its own model (``expected_model``)."""

    # Defaults to the output model (conversation, extraction and grounding compare like
    # with like); the agent family sets its own.
    expected_model: type[BaseModel] | None = None
    # Whether a case must carry at least one transcript turn.
    needs_transcript: bool = True

    def _expected_cls(self) -> type[BaseModel]:
        return self.expected_model or self.output_model

    def case_models(self, case: GoldenCase) -> tuple[BaseModel, BaseModel]:
        expected = self._expected_cls().model_validate(case.expected_outcome, strict=True)
        config = self.config_model.model_validate(case.config)
        return expected, config

    def check_case(self, case: GoldenCase) -> list[str]:
        problems = self.check_transcript(case)
        expected = config = None
        try:
            config = self.config_model.model_validate(case.config)
        except ValidationError as exc:
            problems.extend(validation_problems(exc, "config"))
        if case.expected_outcome is None:
            problems.append("expected_outcome: missing (the golden truth is required)")
        else:
            try:
                expected = self._expected_cls().model_validate(case.expected_outcome,
                                                               strict=True)
            except ValidationError as exc:
                problems.extend(validation_problems(exc, "expected_outcome"))
        if expected is not None and config is not None:
            problems.extend(self.check_consistency(case, expected, config))
        return problems

    def check_transcript(self, case: GoldenCase) -> list[str]:
        """Empty turns are an authoring mistake in every family: nothing can be judged in them."""
        problems = []
        if self.needs_transcript and not case.transcript:
            problems.append(f"transcript: no turn (every {self.name} case needs one)")
        for i, turn in enumerate(case.transcript):
            if not turn.text.strip():
                problems.append(f"transcript[{i}].text: empty turn (every turn must say "
                                "something)")
        return problems

    def item_request(
        self, ctx: EvalContext, metric_id: str, scale: Scale, focus: Mapping[str, Any],
        item: str, instructions: str | None = None, model_output: Any = None,
    ) -> JudgeRequest:
        """A request judged once per unit of the output (a turn, a signal)."""
        request = self.request(ctx, metric_id, scale, focus, instructions)
        if model_output is not None:
            request = replace(request, model_output=model_output)
        return replace(request, item=item)


def checked_score(scale: Scale, score: float | None) -> tuple[float | None, str | None]:
    """A judge score if it is legal on ``scale``; otherwise the scale's lowest with a warning."""
    if score is None:
        return None, None
    if valid_score(scale, score):
        return float(score), None
    low = lowest_score(scale)
    return low, (f"judge score {score!r} is outside the {scale} scale; scored {low:g} "
                 "(the most conservative score)")

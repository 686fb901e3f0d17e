"""Shared behaviour of the agent, conversation, extraction and grounding families.

Every one of these families judges some metrics once per unit of an output (a turn, a
signal) and converts rubric scores that a judge may get out of range; the transcript checks
every task shares are in ``base.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core.judging import JudgeRequest, ReplyField, Scale, lowest_score, valid_score
from ..core.metrics import Bands
from .base import BaseTask

if TYPE_CHECKING:
    from ..core.context import EvalContext

# Rubric scores at or above this are "acceptable or better": no failure code is reported.
# The same bands serve the 0–5 agent rubrics and the 1–5 extraction rubrics: 4 is "good,
# one minor issue", 3 "one meaningful issue".
RUBRIC_GOOD = 4.0
RUBRIC_BANDS = Bands(good=RUBRIC_GOOD, acceptable=3.0)


class FamilyTask(BaseTask):
    """A task that judges some metrics once per unit of its output (a turn, a signal)."""

    def item_request(
        self, ctx: EvalContext, metric_id: str, scale: Scale, focus: Mapping[str, Any],
        item: str, instructions: str | None = None, model_output: Any = None,
        reply_fields: tuple[ReplyField, ...] = (), *, keeps_out_of_range: bool = False,
    ) -> JudgeRequest:
        """A request judged once per unit of the output (a turn, a signal)."""
        return self.request(ctx, metric_id, scale, focus, instructions, reply_fields,
                            item=item, model_output=model_output,
                            keeps_out_of_range=keeps_out_of_range)


def checked_score(scale: Scale, score: float | None) -> tuple[float | None, str | None]:
    """A judge score if it is legal on ``scale``; otherwise the scale's lowest with a warning."""
    if score is None:
        return None, None
    if valid_score(scale, score):
        return float(score), None
    low = lowest_score(scale)
    return low, (f"judge score {score!r} is outside the {scale} scale; scored {low:g} "
                 "(the most conservative score)")

"""Shared machinery of task families: case checks, judge requests, weighting, verdicts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..core.cases import GoldenCase, validation_problems
from ..core.context import STRUCTURE
from ..core.judging import FULL_VIEW, JudgeRequest, JudgeVerdict, JudgeView, ReplyField, Scale
from ..core.metrics import Bands, MetricSpec
from ..core.results import MetricResult, TaskResult
from ..core.unicode_text import has_words

if TYPE_CHECKING:
    from ..core.context import EvalContext


# Runs once at import, before mutmut can switch a mutant on; tests/engine/test_spec_tables.py
# checks what it builds instead.
def structure_spec(task: str) -> MetricSpec:  # pragma: no mutate block
    return MetricSpec(
        id=STRUCTURE, task=task, name="Response Structure Compliance",
        description="Output has exactly the task's keys and JSON types (prerequisite).",
        scale="0/1", threshold="must = 1", bands=Bands(good=1.0, blocker=1.0), blocker=True,
    )


def weighted_score(
    parts: Sequence[tuple[str, MetricResult | None, float]],
) -> tuple[float | None, list[str]]:
    """Weighted mean of the scored parts, weights renormalised over what was scored.

    Returns the score (None when nothing was scored) and the ids that were left out.
    """
    total = 0.0
    weight = 0.0
    dropped: list[str] = []
    for metric_id, result, w in parts:
        if result is None or not result.scored or result.value is None:
            dropped.append(metric_id)
            continue
        total += result.value * w
        weight += w
    if weight == 0:
        return None, dropped
    return total / weight, dropped


class BaseTask(ABC):
    """Common behaviour; a family sets the class attributes and implements ``_plan``/``_score``."""

    name: str
    title: str
    metrics: tuple[MetricSpec, ...]
    output_model: type[BaseModel]
    config_model: type[BaseModel]
    # Blockers that void the score (the seed's "score = invalid"); other blockers only
    # disqualify the model for the task.
    voiding: frozenset[str] = frozenset({STRUCTURE})
    # The model of the golden truth, when it is not in the shape of the output (an agent's
    # expected tool calls versus its trajectory); None means the output model.
    expected_model: type[BaseModel] | None = None
    # What a judge call may show besides each metric's focus (the family's context policy).
    judge_view: JudgeView = FULL_VIEW
    # Whether a case must carry at least one transcript turn (grounding can take its
    # context from the config instead).
    needs_transcript: bool = True

    def spec(self, metric_id: str) -> MetricSpec:
        for spec in self.metrics:
            if spec.id == metric_id:
                return spec
        raise KeyError(f"{self.name} has no metric {metric_id!r}")

    # --- golden cases -------------------------------------------------------------------

    def expected_cls(self) -> type[BaseModel]:
        return self.expected_model or self.output_model

    def case_models(self, case: GoldenCase) -> tuple[BaseModel, BaseModel]:
        expected = self.expected_cls().model_validate(case.expected_outcome, strict=True)
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
                expected = self.expected_cls().model_validate(case.expected_outcome, strict=True)
            except ValidationError as exc:
                problems.extend(validation_problems(exc, "expected_outcome"))
        if expected is not None and config is not None:
            problems.extend(self.check_consistency(case, expected, config))
        return problems

    def check_transcript(self, case: GoldenCase) -> list[str]:
        """A case without turns, or with a turn that says nothing, gives nothing to judge."""
        problems = []
        if self.needs_transcript and not case.transcript:
            problems.append(f"transcript: no turn (every {self.name} case needs one)")
        for i, turn in enumerate(case.transcript):
            if not turn.text.strip():
                problems.append(f"transcript[{i}].text: empty turn (every turn must say "
                                "something)")
        # A turn of "..." or an emoji is a real transcript's pause or noise, but a call made
        # only of such turns says nothing to judge an output against.
        if (self.needs_transcript and not problems and case.transcript
                and not any(has_words(turn.text) for turn in case.transcript)):
            problems.append("transcript: no turn has a letter or a digit (every "
                            f"{self.name} case needs words to judge against)")
        return problems

    def check_consistency(
        self, case: GoldenCase, expected: Any, config: Any
    ) -> list[str]:
        """Task-specific checks of a case whose parts each validate."""
        return []

    def output_problems(self, ctx: EvalContext) -> list[str]:
        """Problems of a schema-valid output that still make it unusable (unknown ids...)."""
        return []

    def prompt_config(self, case: GoldenCase) -> dict[str, Any]:
        """The ``config`` the built-in live prompt shows the model: the case's own."""
        return case.config

    # --- judging ------------------------------------------------------------------------

    def request(
        self, ctx: EvalContext, metric_id: str, scale: Scale, focus: Mapping[str, Any],
        instructions: str | None = None, reply_fields: tuple[ReplyField, ...] = (), *,
        item: str | None = None, model_output: Any = None, keeps_out_of_range: bool = False,
    ) -> JudgeRequest:
        """A judgement of ``metric_id`` on ``ctx``'s output (``model_output`` when given),
        made in one go: a request is frozen, and each ``dataclasses.replace`` of one runs its
        whole init again."""
        spec = self.spec(metric_id) if metric_id in {m.id for m in self.metrics} else None
        text = instructions or (spec.rubric or spec.description if spec else metric_id)
        return JudgeRequest(
            case=ctx.case, task=self.name, metric=metric_id, scale=scale,
            instructions=text,
            model_output=ctx.output if model_output is None else model_output,
            focus=dict(focus), item=item, keeps_out_of_range=keeps_out_of_range,
            view=self.judge_view, reply_fields=reply_fields,
        )

    def from_verdict(
        self,
        metric_id: str,
        verdict: JudgeVerdict | None,
        convert: Callable[[float], float] = float,
    ) -> MetricResult:
        spec = self.spec(metric_id)
        if verdict is None:
            return MetricResult.not_scored("no judge verdict")
        if verdict.score is None:
            return MetricResult.not_scored(verdict.reason, **verdict.details)
        result = spec.result(convert(verdict.score), verdict.reason, **verdict.details)
        result.flagged = verdict.flagged
        return result

    def plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        if ctx.parsed is None:
            return []
        return self._plan(ctx)

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        return []

    def similarity_pairs(self, ctx: EvalContext) -> list[tuple[list[str], list[str]]]:
        """The ``(a, b)`` arguments of the ``pair_similarity`` calls scoring ``ctx`` will
        make, for a batch to work them out ahead all at once (a parsed output only)."""
        return []

    def score(self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]) -> TaskResult:
        if ctx.parsed is None:
            return self.invalid(ctx)
        metrics, score, dropped = self._score(ctx, verdicts)
        return self.finalize(ctx, metrics, score, dropped)

    @abstractmethod
    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        """The task's metrics (structure excluded), its score, and the weights dropped."""

    # --- results ------------------------------------------------------------------------

    def invalid(self, ctx: EvalContext) -> TaskResult:
        metrics = {STRUCTURE: ctx.structure}
        skipped = "not scored: the output failed the structure check"
        for spec in self.metrics:
            if spec.id != STRUCTURE:
                metrics[spec.id] = MetricResult.not_scored(skipped)
        return TaskResult(
            task=self.name, case_id=ctx.case.id, score=None, valid=False, blocked=True,
            blockers=[STRUCTURE], metrics=metrics, model=ctx.model, run=ctx.run,
            notes=[f"structure check failed: {ctx.structure.reason}"],
        )

    def finalize(
        self,
        ctx: EvalContext,
        metrics: dict[str, MetricResult],
        score: float | None,
        dropped: list[str],
    ) -> TaskResult:
        full = {STRUCTURE: ctx.structure, **metrics}
        blockers = [mid for mid, m in full.items() if m.blocker]
        voided = [mid for mid in blockers if mid in self.voiding]
        notes = []
        not_scored = sorted(mid for mid, m in full.items() if not m.scored)
        if dropped:
            notes.append(
                "weights renormalised without: " + ", ".join(dropped)
                + " (not scored)"
            )
        if voided:
            notes.append(
                "score void (invalid) because of blocker: " + ", ".join(voided)
                + (f"; it would have been {score:.3f}" if score is not None else "")
            )
        if score is None and not voided:
            # Grounding's score is its verdict, which an unchecked hallucination leaves
            # undecided while relevance and completeness stand.
            notes.append("no metric of this task could be scored"
                         if all(mid in not_scored for mid in metrics)
                         else "the task score could not be estimated: "
                         + ", ".join(not_scored) + " not scored")
        return TaskResult(
            task=self.name, case_id=ctx.case.id,
            score=None if voided else score,
            # Nothing scored without a voiding blocker is an unknown score, not an invalid
            # one: an invalid case counts 0 in the task mean, a number nobody measured.
            valid=not voided,
            blocked=bool(blockers), blockers=blockers, metrics=full, model=ctx.model,
            run=ctx.run, not_scored=not_scored, renormalised=bool(dropped), notes=notes,
        )

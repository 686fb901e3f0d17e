"""Task 1 — QA analysis: scoring a call against a QA scorecard (seed 000)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..core.judging import JudgeRequest, JudgeVerdict
from ..core.metrics import Bands, MetricSpec
from ..core.results import MetricResult
from .base import BaseTask, structure_spec, weighted_score
from .call_schemas import QAConfig, QAExpected, QAOutput, QAQuestion

if TYPE_CHECKING:
    from ..core.cases import GoldenCase
    from ..core.context import EvalContext

TASK = "qa"
# SPEC 5.1: ±0.5 per 5 points of max_score, inclusive.
SCORE_TOLERANCE = 0.1
_EPS = 1e-9
# The seed's ratio over the output's reasons has nothing to count in an output with none: no
# judge is asked, and both judges leave it as the offline one words it.
NO_REASON = "not scored: the output gives no reason"

EVIDENCE_RUBRIC = (
    "For each reason the model gave, check two things: (1) it cites evidence — a quote, a "
    "timestamp or a specific action from the transcript, not a vague judgement such as "
    "'agent was polite'; (2) the cited moment exists in the transcript and is described "
    "accurately. Score = (reasons with evidence + factual reasons) / (2 × reasons), 0.0–1.0."
)

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        id="question_score_accuracy", task=TASK, name="Question Score Accuracy",
        description="Share of scorecard questions scored as in expected_outcome "
                    "(SCORE within ±10% of max_score, PASS_FAIL exact).",
        scale="0-1", threshold=">= 0.95", bands=Bands(good=0.95, acceptable=0.90), weight=0.70,
    ),
    MetricSpec(
        id="score_gap_accuracy", task=TASK, name="Score Gap Accuracy",
        description="1 − mean of |model − expected| / max_score over questions.",
        scale="0-1", threshold=">= 0.90", bands=Bands(good=0.90, acceptable=0.80), weight=0.20,
    ),
    MetricSpec(
        id="evidence_backed_reasoning", task=TASK, name="Evidence-Backed Reasoning",
        description="(reasons with evidence + factual reasons) / (2 × reasons).",
        scale="0-1", threshold=">= 0.90", bands=Bands(good=0.90, acceptable=0.80), weight=0.10,
        source="judge", rubric=EVIDENCE_RUBRIC,
    ),
    MetricSpec(
        id="compliance_false_pass_rate", task=TASK, name="Compliance False Pass Rate",
        description="PASS_FAIL questions given a score above 0 where expected is 0, over all "
                    "PASS_FAIL questions (pooled across cases).",
        scale="rate", threshold="<= 1% | > 3% blocker",
        bands=Bands(good=0.01, acceptable=0.03, blocker=0.03, higher_is_better=False),
        blocker=True, aggregate="pooled", percent=True,
    ),
    structure_spec(TASK),
)


def _checks(model_q: QAQuestion | None,
            expected_q: QAQuestion) -> tuple[bool, float, bool, bool, bool]:
    """One question's answer: correct (SPEC 5.1: a SCORE within ±10 % of max_score, a
    PASS_FAIL exact, never out of range), its normalised gap, out of range (a score below 0
    or above max_score: a wrong answer, not bad structure), not pass-fail (a PASS_FAIL score
    within range that is neither 0 nor max_score: the seed allows only full marks or zero,
    so 4.5 of 5 is an illegal value, not a near miss) and falsely passed (any score above 0
    on a PASS_FAIL question the call failed: the conservative reading of an illegal answer
    such as 4.99 of 5; a score below 0 claims no pass, it is out of range). Each field is
    read once: a field of a model costs several times a local's reading, and this ran for
    every question of every output (4 % of a QA batch's instructions)."""
    if model_q is None:
        return False, 1.0, False, False, False
    score, expected, max_score = model_q.score, expected_q.score, expected_q.max_score
    pass_fail = expected_q.type == "PASS_FAIL"
    out_of_range = not -_EPS <= score <= max_score + _EPS
    tolerance = 0.0 if pass_fail else SCORE_TOLERANCE * max_score
    correct = not out_of_range and abs(score - expected) <= tolerance + _EPS
    gap = min(1.0, max(0.0, abs(score - expected) / max_score))
    not_pass_fail = (pass_fail and not out_of_range and abs(score) > _EPS
                     and abs(score - max_score) > _EPS)
    false_pass = pass_fail and expected == 0 and score > _EPS
    return correct, gap, out_of_range, not_pass_fail, false_pass


class QATask(BaseTask):
    name = TASK
    title = "QA"
    metrics = METRICS
    output_model = QAOutput
    expected_model = QAExpected
    config_model = QAConfig

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        problems = []
        for i, q in enumerate(expected.questions):
            if q.type == "PASS_FAIL" and q.score not in (0, q.max_score):
                problems.append(
                    f"expected_outcome.questions[{i}].score: a PASS_FAIL question scores 0 "
                    f"or max_score ({q.max_score:g}), got {q.score:g}"
                )
        asked = {q.question_id: q for q in config.questions}
        expected_ids = {q.question_id for q in expected.questions}
        for i, q in enumerate(config.questions):
            if q.question_id not in expected_ids:
                problems.append(
                    f"config.questions[{i}].question_id: {q.question_id!r} has no expected score"
                )
        for i, q in enumerate(expected.questions):
            put = asked.get(q.question_id)
            where = f"expected_outcome.questions[{i}]"
            if put is None:
                problems.append(f"{where}.question_id: {q.question_id!r} is not asked in "
                                "config.questions (a live model would never answer it)")
                continue
            if put.type is not None and put.type != q.type:
                problems.append(f"{where}.type: {q.type} but config.questions asks "
                                f"{q.question_id!r} as {put.type}")
            if put.max_score is not None and put.max_score != q.max_score:
                problems.append(f"{where}.max_score: {q.max_score:g} but config.questions "
                                f"gives {q.question_id!r} max_score {put.max_score:g}")
        return problems

    def output_problems(self, ctx: EvalContext) -> list[str]:
        expected_ids = {q.question_id for q in ctx.expected.questions}  # type: ignore[attr-defined]
        unknown = [q.question_id for q in ctx.parsed.questions  # type: ignore[union-attr]
                   if q.question_id not in expected_ids]
        if unknown:
            return [f"questions: unknown question_id {', '.join(map(repr, unknown))} "
                    "(not in the scorecard)"]
        return []

    def prompt_config(self, case: GoldenCase) -> dict[str, Any]:
        """The config with each question's omitted ``type`` and ``max_score`` taken from the
        expected question of the same id: a model told the default scale (SCORE out of 1)
        while scored on PASS_FAIL out of 5 was marked wrong for following its prompt. The
        scale is the scorecard's, not the answer; the expected scores stay unseen."""
        try:
            expected = self.expected_cls().model_validate(case.expected_outcome, strict=True)
        except ValidationError:
            return case.config
        scales = {q.question_id: q for q in expected.questions}  # type: ignore[attr-defined]
        questions = case.config.get("questions")
        if not isinstance(questions, list):
            return case.config
        filled = []
        for asked_q in questions:
            scale = scales.get(asked_q.get("question_id")) if isinstance(asked_q, dict) else None
            if scale is not None:
                asked_q = {**asked_q, **{key: getattr(scale, key) for key in ("type", "max_score")
                                         if asked_q.get(key) is None}}
            filled.append(asked_q)
        return {**case.config, "questions": filled}

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        expected = {q.question_id: q for q in ctx.expected.questions}  # type: ignore[attr-defined]
        reasons = [
            {"question_id": q.question_id, "reason": q.reason,
             "expected_reason": expected[q.question_id].reason}
            for q in ctx.parsed.questions  # type: ignore[union-attr]
        ]
        if not reasons:
            return []
        return [self.request(ctx, "evidence_backed_reasoning", "unit", {"reasons": reasons})]

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        expected: list[QAQuestion] = list(ctx.expected.questions)  # type: ignore[attr-defined]
        answered = {q.question_id: q for q in ctx.parsed.questions}  # type: ignore[union-attr]
        correct, gaps, missing, false_passes, per_question = 0, [], [], [], []
        out_of_range: list[str] = []
        not_pass_fail: list[str] = []
        pass_fail = 0
        for eq in expected:
            question_id, question_type = eq.question_id, eq.type
            pass_fail += question_type == "PASS_FAIL"
            mq = answered.get(question_id)
            if mq is None:
                missing.append(question_id)
            ok, gap, outside, illegal, falsely_passed = _checks(mq, eq)
            if outside:
                out_of_range.append(question_id)
            if illegal:
                not_pass_fail.append(question_id)
            correct += ok
            gaps.append(gap)
            if falsely_passed:
                false_passes.append(question_id)
            per_question.append({
                "question_id": question_id, "type": question_type, "expected": eq.score,
                "model": None if mq is None else mq.score, "max_score": eq.max_score,
                "correct": ok, "normalized_gap": gap,
            })
        n = len(expected)
        accuracy = self.spec("question_score_accuracy").result(
            correct / n, f"{correct} of {n} questions scored correctly"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; score outside 0..max_score: {', '.join(out_of_range)}"
               if out_of_range else "")
            + (f"; PASS_FAIL score neither 0 nor max_score: {', '.join(not_pass_fail)}"
               if not_pass_fail else ""),
            correct=correct, total=n, missing=missing, out_of_range=out_of_range,
            not_pass_fail=not_pass_fail, questions=per_question,
        )
        gap_mean = sum(gaps) / n
        gap_accuracy = self.spec("score_gap_accuracy").result(
            1.0 - gap_mean, f"average normalised gap {gap_mean:.3f}", average_gap=gap_mean,
        )
        if pass_fail:
            rate = len(false_passes) / pass_fail
            false_pass = self.spec("compliance_false_pass_rate").result(
                rate,
                f"{len(false_passes)} of {pass_fail} PASS_FAIL questions falsely passed"
                + (f": {', '.join(false_passes)}" if false_passes else ""),
                numerator=len(false_passes), denominator=pass_fail,
                false_passes=false_passes,
            )
        else:
            false_pass = MetricResult.not_scored("n/a: the scorecard has no PASS_FAIL question")
        evidence = self.from_verdict(
            "evidence_backed_reasoning", verdicts.get("evidence_backed_reasoning")
        ) if answered else MetricResult.not_scored(NO_REASON)
        metrics = {
            "question_score_accuracy": accuracy,
            "score_gap_accuracy": gap_accuracy,
            "evidence_backed_reasoning": evidence,
            "compliance_false_pass_rate": false_pass,
        }
        score, dropped = weighted_score([
            ("question_score_accuracy", accuracy, 0.70),
            ("score_gap_accuracy", gap_accuracy, 0.20),
            ("evidence_backed_reasoning", evidence, 0.10),
        ])
        return metrics, score, dropped

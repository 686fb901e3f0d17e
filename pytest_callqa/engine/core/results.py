"""The one result model every task produces.

Results are plain dataclasses so they stay cheap to build in hot loops; ``to_dict`` and
``from_dict`` convert them to builtins only, which is what crosses xdist worker boundaries
and what the JSON report is made of.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from .unicode_text import replace_lone_surrogates

Rating = Literal["good", "acceptable", "fail", "blocker"]
RATINGS: tuple[Rating, ...] = ("good", "acceptable", "fail", "blocker")


def plain(value: Any) -> Any:
    """Convert numpy scalars, tuples and nested containers to JSON-safe builtins.

    Non-finite floats become ``None``: JSON has no NaN, and a NaN that reached a report
    would read as a number. An unpaired UTF-16 surrogate in a string, which no UTF-8 report
    can hold, becomes U+FFFD.
    """
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return replace_lone_surrogates(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {replace_lone_surrogates(str(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    item = getattr(value, "item", None)
    if callable(item):
        return plain(item())
    return replace_lone_surrogates(str(value))


class EvaluationUnavailable(Exception):
    """A number the evaluation could not produce for a reason of its own, not the model's: the
    plugin reports a test that depends on it as an error, never as a failure or a pass."""


class JudgeUnavailable(EvaluationUnavailable):
    """A verdict the judge could not give — its call failed, its reply stayed unusable, the
    budget was spent or the input was too large. A failure of the tool, never of the model
    under test: the plugin reports a test that depends on it as an error."""


class MetricCodeError(EvaluationUnavailable):
    """A project's custom metric raised while computing: an error in the evaluation's code,
    never a failure of the model under test (the metric is not scored; a test that asserts
    on it, or on the blockers when it is one, is reported as an error)."""


# How the reason of a metric that does not apply begins (MetricResult.not_applicable).
NOT_APPLICABLE = ("n/a", "skipped: config.")


@dataclass
class MetricResult:
    """One metric of one task output.

    ``scored`` is False when the metric could not be estimated honestly (or does not apply);
    ``value`` is then None and the task score's weights are renormalised without it.
    ``judge_error`` marks a metric the judge could not score (or one computed from such a
    metric): it is not scored, and nothing is renormalised around it.
    """

    value: float | None
    scored: bool = True
    rating: Rating | None = None
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    blocker: bool = False
    flagged: bool = False
    judge_error: bool = False

    @classmethod
    def not_scored(cls, reason: str, **details: Any) -> MetricResult:
        # Positional, in the fields' order: a call by keywords costs a third of a result's
        # making. ``details`` is this call's own new dict already (``**``).
        return cls(None, False, None, reason, details)

    @property
    def not_applicable(self) -> bool:
        """Not scored because the case or the output holds nothing the metric measures (no
        domain term to preserve, no tool call expected and none made), or because the case
        asks for it not to be: no estimate is missing."""
        return not self.scored and (self.reason or "").startswith(NOT_APPLICABLE)

    @classmethod
    def judge_failed(cls, reason: str | None, **details: Any) -> MetricResult:
        """Not scored because the judge could not give what it needs: the tool's failure,
        not the model's."""
        # Positional, as not_scored's.
        return cls(None, False, None, reason, details, False, False, True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": plain(self.value),
            "scored": self.scored,
            "rating": self.rating,
            "reason": self.reason,
            "blocker": self.blocker,
            "flagged": self.flagged,
            "judge_error": self.judge_error,
            "details": plain(self.details),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricResult:
        return cls(
            value=data.get("value"),
            scored=bool(data.get("scored", True)),
            rating=data.get("rating"),
            reason=data.get("reason"),
            details=dict(data.get("details") or {}),
            blocker=bool(data.get("blocker", False)),
            flagged=bool(data.get("flagged", False)),
            judge_error=bool(data.get("judge_error", False)),
        )


@dataclass
class TaskResult:
    """The evaluation of one model output for one golden case.

    ``valid`` is False when a prerequisite failed or a blocker voids the score (the seed's
    "score = invalid"); an invalid case counts 0.0 in the task mean. ``blocked`` is True when
    any blocker fired, which disqualifies the model for the task. ``judge_errors`` lists the
    metrics the judge could not score; when one of the task's own metrics is among them the
    task score is unknown (None), which is neither a pass nor a model failure. So is a task
    score none of whose metrics could be scored (:attr:`score_unknown`).
    """

    task: str
    case_id: str
    score: float | None
    valid: bool
    blocked: bool
    blockers: list[str]
    metrics: dict[str, MetricResult]
    model: str | None = None
    run: int = 0
    not_scored: list[str] = field(default_factory=list)
    renormalised: bool = False
    judge_records: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    judge_errors: list[str] = field(default_factory=list)
    # The minimum task score a team's policy sets for this task, when it sets one.
    pass_bar: float | None = None
    # Whether the tests of this run passed; set only for repeated runs (``--callqa-runs``).
    passed: bool | None = None
    # A later run that is run 1's result again (a recorded output under the deterministic
    # offline judge cannot score differently): no sample of how the model varies.
    copied_run: bool = False

    def metric(self, metric_id: str) -> MetricResult:
        """The metric's result; raises :class:`JudgeUnavailable` when the judge could not
        score it, so no check can read a verdict that does not exist."""
        try:
            found = self.metrics[metric_id]
        except KeyError:
            # Standard library, loaded for a mistyped id only.
            import difflib

            close = difflib.get_close_matches(str(metric_id), list(self.metrics), n=1)
            known = ", ".join(sorted(self.metrics)) or "none"
            raise KeyError(
                f"metric {metric_id!r} is not part of the {self.task} result for case "
                f"{self.case_id!r}" + (f"; did you mean {close[0]!r}?" if close else "")
                + f" (known: {known})"
            ) from None
        if found.judge_error:
            raise JudgeUnavailable(self.judge_error_text([metric_id]))
        return found

    @property
    def incomplete(self) -> bool:
        """Whether the task score is unknown because the judge could not score a metric."""
        return bool(self.judge_errors) and self.score is None and self.valid

    @property
    def score_unknown(self) -> bool:
        """Whether the task score is unknown: the judge could not score a metric
        (:attr:`incomplete`), or no metric of the task could be scored at all (none
        applies to the case, or the judge cannot estimate any). Neither a pass nor a model
        failure: the scorecard leaves the output out of the task score."""
        return self.score is None and self.valid

    def judge_error_text(self, metric_ids: list[str] | None = None) -> str:
        """Why the judge could not decide, for a test's error message."""
        ids = [m for m in (metric_ids or self.judge_errors) if m in self.metrics]
        lines = [f"the judge could not score {', '.join(ids) or 'this output'} for model "
                 f"{self.model!r}, case {self.case_id!r} (a judge error, not a model failure)"]
        lines += [f"  {mid}: {self.metrics[mid].reason}" for mid in ids]
        return "\n".join(lines)

    @property
    def judge_record(self) -> list[dict[str, Any]]:
        """What the judge said for this output, in a stable order (for snapshots)."""
        return sorted(self.judge_records, key=lambda r: str(r.get("metric", "")))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "case_id": self.case_id,
            "model": self.model,
            "run": self.run,
            "score": plain(self.score),
            "valid": self.valid,
            "blocked": self.blocked,
            "blockers": list(self.blockers),
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
            "not_scored": list(self.not_scored),
            "renormalised": self.renormalised,
            "judge_records": plain(self.judge_records),
            "usage": plain(self.usage),
            "notes": list(self.notes),
            "judge_errors": list(self.judge_errors),
            # Only when a policy set it, so results without one keep their shape.
            **({"pass_bar": self.pass_bar} if self.pass_bar is not None else {}),
            **({"passed": self.passed} if self.passed is not None else {}),
            **({"copied_run": True} if self.copied_run else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskResult:
        return cls(
            task=data["task"],
            case_id=data["case_id"],
            model=data.get("model"),
            run=int(data.get("run", 0)),
            score=data.get("score"),
            valid=bool(data["valid"]),
            blocked=bool(data["blocked"]),
            blockers=list(data.get("blockers", [])),
            metrics={k: MetricResult.from_dict(v) for k, v in data.get("metrics", {}).items()},
            not_scored=list(data.get("not_scored", [])),
            renormalised=bool(data.get("renormalised", False)),
            judge_records=list(data.get("judge_records", [])),
            usage=dict(data.get("usage", {})),
            notes=list(data.get("notes", [])),
            judge_errors=list(data.get("judge_errors", [])),
            pass_bar=data.get("pass_bar"),
            passed=data.get("passed"),
            copied_run=data.get("copied_run") is True,
        )

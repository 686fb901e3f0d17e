"""What a CI dashboard reads of a run: each evaluation test's metrics as JUnit ``<property>``
elements, and the run's verdict and figures as properties of the test suite."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..engine.core.results import TaskResult

PREFIX = "callqa"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def result_properties(result: TaskResult) -> list[tuple[str, str]]:
    """One test's properties: the task score and validity, every metric's value and rating,
    the blockers and the judge errors (values as text; empty when not scored)."""
    props = [
        (f"{PREFIX}.model", _text(result.model)),
        (f"{PREFIX}.case", result.case_id),
        (f"{PREFIX}.task", result.task),
        (f"{PREFIX}.score", _text(result.score)),
        (f"{PREFIX}.valid", _text(result.valid)),
        (f"{PREFIX}.blockers", ",".join(result.blockers)),
        (f"{PREFIX}.judge_errors", ",".join(result.judge_errors)),
    ]
    for metric_id, metric in result.metrics.items():
        props.append((f"{PREFIX}.metric.{metric_id}", _text(metric.value)))
        props.append((f"{PREFIX}.rating.{metric_id}", _text(metric.rating)))
    return props


def suite_properties(report: Mapping[str, Any],
                     gate: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The run's properties: the gate's verdict and, per model, its final score, whether a
    blocker fired, its cost and its rank."""
    props = [(f"{PREFIX}.verdict", _text(gate.get("verdict")) if gate else "no baseline"),
             (f"{PREFIX}.regressions", _text(len(gate.get("regressions", []))) if gate
              else "")]
    for name, card in (report.get("models") or {}).items():
        final = card.get("final_score_a")
        if final is None:
            final = card.get("final_score_b")
        props += [
            (f"{PREFIX}.{name}.final_score", _text(final)),
            (f"{PREFIX}.{name}.any_blocker", _text(card.get("any_blocker"))),
            (f"{PREFIX}.{name}.cost_per_1000_calls", _text(card.get("cost_per_1000_calls"))),
            (f"{PREFIX}.{name}.rank", _text(card.get("cost_adjusted_rank"))),
        ]
    return props

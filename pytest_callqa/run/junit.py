"""What a CI dashboard reads of a run: each evaluation test's metrics (and runs) as JUnit
``<property>`` elements, and the run's verdict and figures as properties of the test suite.

A test's properties are those of one attempt: a plugin that runs a failed test again
(pytest-rerunfailures) writes a ``<testcase>`` per attempt, from the same list of the test's
properties, so the plugin's own are taken out of it after each attempt (:func:`without_own`)
rather than added to those of the attempts before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .gaps import budget_cut
from .gate_text import incomplete_cause, incomplete_summary

if TYPE_CHECKING:
    from ..engine.core.results import TaskResult

PREFIX = "callqa"
# The properties of a test over repeated runs (the rest are PREFIX-dotted).
RUN_PROPERTIES = ("callqa_runs", "callqa_pass_rate", "callqa_flaky", "callqa_unknown_runs")


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


def run_properties(outcomes: list[bool | None]) -> list[tuple[str, object]]:
    """A repeated test's properties: its runs, the pass rate over the runs whose outcome is
    known (None: the tool failed in it) and whether they disagree — both empty when fewer
    than two are known, as the JSON report's are null: one run that passed is no pass rate
    of 1 — and how many are unknown (when any is)."""
    known = [ok for ok in outcomes if ok is not None]
    passes = sum(known)
    told = len(known) >= 2
    props: list[tuple[str, object]] = [
        ("callqa_runs", len(outcomes)),
        ("callqa_pass_rate", round(passes / len(known), 6) if told else ""),
        ("callqa_flaky", str(0 < passes < len(known)).lower() if told else ""),
    ]
    if len(known) < len(outcomes):
        props.append(("callqa_unknown_runs", len(outcomes) - len(known)))
    return props


def without_own(props: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """A test's properties without the plugin's (what another plugin or the test recorded)."""
    return [(name, value) for name, value in props
            if not (name.startswith(f"{PREFIX}.") or name in RUN_PROPERTIES)]


def suite_properties(report: Mapping[str, Any],
                     gate: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The run's properties: the gate's verdict ("gate not run: " and why, when it could not
    be run) and, when it is incomplete, why; why the run is incomplete when the budget cut
    it short, and, per model, its final score, whether a blocker fired, its cost and its
    rank."""
    verdict = _text(gate.get("verdict")) if gate else "no baseline"
    if gate and gate.get("problem"):
        verdict = f"gate not run: {gate['problem']}"
    # A gate that did not run counted no regression: empty, as with no baseline.
    props = [(f"{PREFIX}.verdict", verdict),
             (f"{PREFIX}.regressions", _text(len(gate.get("regressions", [])))
              if gate and not gate.get("problem") else "")]
    if gate and gate.get("verdict") == "incomplete":
        # Why a job whose tests passed exited 4: the comparisons not made, and whose
        # limitation held the gate open (the tool's, the run's or the baseline's).
        props.append((f"{PREFIX}.gate_incomplete",
                      f"{incomplete_summary(gate)}: {incomplete_cause(gate)}"))
    cut = budget_cut(report)
    if cut is not None:
        # Why a job whose tests passed exited 4.
        props.append((f"{PREFIX}.incomplete", cut))
    basis = (report.get("run") or {}).get("rank_basis")
    for name, card in (report.get("models") or {}).items():
        if basis in ("final_score_a", "final_score_b"):
            # The score the models are ranked by: a Final Score A that judge errors left
            # unknown is unknown, not Final Score B, which would compare unlike with the rest.
            final = card.get(basis)
        else:
            final = card.get("final_score_a")
            if final is None:
                final = card.get("final_score_b")
        props += [
            (f"{PREFIX}.{name}.final_score", _text(final)),
            (f"{PREFIX}.{name}.any_blocker", _text(card.get("any_blocker"))),
            (f"{PREFIX}.{name}.disqualified", _text(card.get("disqualified"))),
            (f"{PREFIX}.{name}.cost_per_1000_calls", _text(card.get("cost_per_1000_calls"))),
            (f"{PREFIX}.{name}.rank", _text(card.get("cost_adjusted_rank"))),
        ]
    return props

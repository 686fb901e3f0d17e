"""Metric and task definitions: what a metric measures, how it is weighted and rated, and what a
task family must provide."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .numbers import finite_number
from .results import MetricResult, Rating

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .cases import GoldenCase
    from .context import EvalContext
    from .judging import JudgeRequest, JudgeVerdict
    from .results import TaskResult

# What the baseline gate and the reports' per-metric keys call a task's own score: no
# metric may take the id.
TASK_SCORE_ID = "score"
# The threshold text of a metric a team's policy disabled (not rated, never a blocker, not
# shown, not gated).
DISABLED_THRESHOLD = "disabled by policy"
# A result detail: the case's own config set the bar it was rated by (a conversation case's
# threshold, a grounding case's hallucination limit, an agent case's pass threshold). The
# more specific bar wins: a team's policy rates the cases that set none.
CASE_BAR = "case_bar"
# A result detail: the edges of the bands that rated the metric when they are not its
# definition's (a policy's, or a case's own bar), so a message showing the figure keeps it on
# the side of each edge that the rating is.
BAND_EDGES = "band_edges"
# Rounding before comparing keeps 19/20 (0.9499999…) on the right side of a 0.95 band.
BAND_DIGITS = 9
# How far from every band edge a value must be for its rating to need no rounding (twenty
# times the 5e-10 rounding to BAND_DIGITS can move it, so a float difference's own error
# cannot matter).
_NEAR_EDGE = 1e-8

Source = Literal["programmatic", "judge", "embedding", "judge+programmatic"]
Aggregate = Literal["mean", "pooled"]


@dataclass(frozen=True)
class Bands:
    """Rating bands of a metric.

    For ``higher_is_better`` metrics a value is *good* at or above ``good``, *acceptable* at or
    above ``acceptable``, a *blocker* below ``blocker`` and *fail* otherwise. For
    lower-is-better metrics (rates, counts) the comparisons flip: good at or below ``good``,
    acceptable at or below ``acceptable``, blocker above ``blocker``.
    """

    good: float
    acceptable: float | None = None
    blocker: float | None = None
    higher_is_better: bool = True

    def rate(self, value: float) -> Rating:
        v = value
        # Rounding (a decimal conversion, most of a rating's cost) moves a value by at most
        # 5e-10, so it can change no comparison of a float farther than _NEAR_EDGE from every
        # edge: only a value near one (or NaN, never farther) is rounded, and any value not a
        # float (an int too large for one, a Decimal from a caller of the engine) as before.
        if not isinstance(v, float) or not (abs(v - self.good) > _NEAR_EDGE
                and (self.acceptable is None or abs(v - self.acceptable) > _NEAR_EDGE)
                and (self.blocker is None or abs(v - self.blocker) > _NEAR_EDGE)):
            v = round(value, BAND_DIGITS)
        if self.higher_is_better:
            if self.blocker is not None and v < self.blocker:
                return "blocker"
            if v >= self.good:
                return "good"
            if self.acceptable is not None and v >= self.acceptable:
                return "acceptable"
            return "fail"
        if self.blocker is not None and v > self.blocker:
            return "blocker"
        if v <= self.good:
            return "good"
        if self.acceptable is not None and v <= self.acceptable:
            return "acceptable"
        return "fail"

    def passes(self, value: float) -> bool:
        """Whether ``value`` meets the good threshold (Layer 2 binarisation)."""
        return self.rate(value) == "good"

    @property
    def edges(self) -> tuple[float, ...]:
        """The values at which the rating changes."""
        return tuple(edge for edge in (self.good, self.acceptable, self.blocker)
                     if edge is not None)


def _side(value: float, edge: float) -> int:
    """-1, 0 or 1: below ``edge``, at it or above it, as :meth:`Bands.rate` compares them."""
    rounded = round(value, BAND_DIGITS)
    return (rounded > edge) - (rounded < edge)


def beside_edges(value: float, edges: Sequence[float], digits: int = 3, *,
                 percent: bool = False) -> str:
    """``value`` with ``digits`` decimals (of a percentage with ``percent``), or with as many
    more as keep the figure on the side of each band edge in ``edges`` that the value is on,
    and at an edge only when the value is (to the digits ratings compare to). Rounded to the
    usual digits, 1/33 read "3.0%" beside a blocker rating for "> 3%", and 189/199 "0.950"
    beside "acceptable" for ">= 0.95"."""
    scale, suffix = (100.0, "%") if percent else (1.0, "")
    # The figure is read back and compared with each edge as a rating compares, not printed
    # beside the edge's own figure as the failure headlines' apart() does: the edge a strict
    # bar is rated by sits just inside it (garbled turns' "< 10%" at 0.1 - 1e-6), and a rate
    # of exactly 10 % would have been told apart from it as "10.0000%".
    for places in range(digits, 18):
        text = f"{value * scale:.{places}f}"
        if all(_side(float(text) / scale, edge) == _side(value, edge) for edge in edges):
            return text + suffix
    return repr(value)



def metric_figure(value: float, scale: str, edges: Sequence[float] = ()) -> str:
    """A metric's value as the scorecard writes it: a rate (``scale`` "rate") in percent
    with one decimal, a count without decimals (two when it has some), the rest with three —
    each with more beside one of ``edges`` (:func:`beside_edges`)."""
    if scale == "rate":
        return beside_edges(value, edges, 1, percent=True)
    if scale == "count":
        return beside_edges(value, edges, 2).rstrip("0").rstrip(".") if value % 1 \
            else f"{value:.0f}"
    return beside_edges(value, edges)


def band_edges(spec: MetricSpec | None) -> tuple[float, ...]:
    """The edges of ``spec``'s bands (none without a spec or bands)."""
    return spec.bands.edges if spec is not None and spec.bands is not None else ()


def rated_edges(details: Mapping[str, Any], edges: Sequence[float]) -> tuple[float, ...]:
    """The edges of the bands a metric was rated by: its definition's ``edges``, and those a
    policy or the case's own bar recorded on it (``details``, as the result or the JSON
    report holds them). A bar that rated nothing — a similarity threshold of a list match —
    is no edge."""
    recorded = details.get(BAND_EDGES)
    extra = tuple(float(edge) for edge in recorded if finite_number(edge)) \
        if isinstance(recorded, (list, tuple)) else ()
    bar = details.get("threshold")
    if details.get(CASE_BAR) and bar is not None and finite_number(bar):
        extra += (float(bar),)
    return tuple(edges) + extra

@dataclass(frozen=True)
class MetricSpec:
    """Definition of one metric of one task."""

    id: str
    task: str
    name: str
    description: str
    scale: str
    threshold: str
    bands: Bands | None = None
    weight: float | None = None
    parent: str | None = None
    source: Source = "programmatic"
    layer: int = 1
    blocker: bool = False
    aggregate: Aggregate = "mean"
    percent: bool = False
    shown: bool = True
    in_defaults: bool = True
    tier: str | None = None
    rubric: str | None = None

    def rate(self, value: float | None) -> Rating | None:
        if value is None or self.bands is None:
            return None
        return self.bands.rate(value)

    def result(
        self, value: float | None, reason: str | None = None, **details: Any
    ) -> MetricResult:
        """A scored result rated by this metric's bands."""
        if value is None:
            return MetricResult.not_scored(reason or "not scored", **details)
        rating = self.rate(value)
        # Positional, in MetricResult's field order (value, scored, rating, reason, details,
        # blocker): a call by keywords costs a third of a result's making, and every scored
        # metric is made here. ``details`` is this call's own new dict already (``**``).
        return MetricResult(float(value), True, rating, reason, details, rating == "blocker")

    def describe(self, tolerance: float | None = None) -> dict[str, Any]:
        """The definition as the JSON report records it. ``tolerance`` is the drop the
        baseline gate allows the metric (a policy's ``tolerance``, in its own units; None:
        the run's regression tolerance, scaled): recorded with the definition, so a gate run
        on the report alone — a merge of shards — applies it as the run did."""
        return {
            "id": self.id,
            "task": self.task,
            "name": self.name,
            "description": self.description,
            "tier": self.tier,
            "weight": self.weight,
            "weight_within": self.parent,
            "scale": self.scale,
            "threshold": self.threshold,
            "bands": None if self.bands is None else {
                "good": self.bands.good,
                "acceptable": self.bands.acceptable,
                "blocker": self.bands.blocker,
                "higher_is_better": self.bands.higher_is_better,
            },
            "blocker": self.blocker,
            "aggregate": self.aggregate,
            "percent": self.percent,
            "shown": self.shown,
            "source": self.source,
            "layer": self.layer,
            "in_defaults": self.in_defaults,
            "rubric": self.rubric,
            "regression_tolerance": tolerance,
        }


class TaskSpec(Protocol):
    """A task family: how its cases are checked, what it asks the judge, how it scores."""

    # Read-only members, so task classes may narrow them (a concrete output model...).
    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def metrics(self) -> tuple[MetricSpec, ...]: ...

    @property
    def output_model(self) -> type[BaseModel]: ...

    @property
    def config_model(self) -> type[BaseModel]: ...

    def case_models(self, case: GoldenCase) -> tuple[BaseModel, BaseModel]:
        """The case's expected outcome and config, validated."""
        ...

    def check_case(self, case: GoldenCase) -> list[str]:
        """Problems with a golden case of this task, each as ``field.path: message``."""
        ...

    def output_problems(self, ctx: EvalContext) -> list[str]:
        """Problems that make a schema-valid output unusable (unknown item ids...)."""
        ...

    def plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        """The judge requests needed to score ``ctx`` (none when the structure is invalid)."""
        ...

    def score(self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]) -> TaskResult:
        """Score the output, given the judge's verdicts keyed by metric id."""
        ...


CustomMetricFn = Callable[["GoldenCase", Any, "TaskResult"], "MetricResult | float | None"]


@dataclass(frozen=True)
class CustomMetric:
    """A user metric: computed after the task's own metrics, reported but not weighted."""

    spec: MetricSpec
    compute: CustomMetricFn

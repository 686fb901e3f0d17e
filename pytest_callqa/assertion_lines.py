"""How the assertion helpers' messages show a result: a metric's line (value, rating,
threshold, the judge's reason) and the lines of every metric a failed check lists; and how
they read the bounds a test gives and compare a value with one."""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .engine.core.metrics import BAND_DIGITS, CASE_BAR, band_edges, beside_edges, rated_edges
from .engine.core.unicode_text import showable

if TYPE_CHECKING:
    from .engine.core.metrics import MetricSpec
    from .engine.core.results import MetricResult, TaskResult

FAILING = ("fail", "blocker")


def at_least(value: float, bound: float) -> bool:
    """``value >= bound`` to the digits ratings keep: a value that is the bound but for float
    arithmetic (0.9999999999999998 for 1.0, or 1/3 against a bound of 1/3) is at it."""
    return round(value - bound, BAND_DIGITS) >= 0


def at_most(value: float, bound: float) -> bool:
    """``value <= bound``, compared as :func:`at_least` compares."""
    return round(value - bound, BAND_DIGITS) <= 0


def real_bound(helper: str, name: str, value: object,
               scale: tuple[float, float] | None = None) -> float:
    """``value`` as a float, when it is a bound a result can be held to: a real number — a
    numpy scalar, a Fraction or a Decimal too (np.float32(0.9) was refused as no number) —
    neither NaN (every comparison with it is false, so the check could never fail) nor
    infinite, nor off the score's own scale (a minimum below it always passes, one above it
    always fails)."""
    __tracebackhide__ = True
    number = math.nan
    # A Decimal is no numbers.Real; numpy's bool and a complex number are neither (numpy's
    # complex __float__ would drop the imaginary part).
    if not isinstance(value, bool) and isinstance(value, (numbers.Real, decimal.Decimal)):
        try:
            number = float(value)
        except OverflowError:  # an int past the largest float
            number = math.inf
        except ValueError:  # a signalling NaN (Decimal("sNaN")) refuses to be a float
            number = math.nan
    if not math.isfinite(number):
        raise TypeError(f"{helper}: {name} must be a finite number, got {value!r}")
    if scale is not None and not scale[0] <= number <= scale[1]:
        raise ValueError(f"{helper}: {name} must lie on the score's scale, {scale[0]:g} to "
                         f"{scale[1]:g}, got {value!r}")
    return number


def spec_for(result: TaskResult, metric_id: str) -> MetricSpec | None:
    """The built-in definition of a metric (custom metrics have none here): how its values
    are shown. What a policy or a custom metric's definition changes — its threshold, whether
    it is a blocker — the evaluation records on the metric itself."""
    # Test modules import the helpers at collection; the task families load on first use.
    from .engine.registry import default_registry
    from .engine.tasks.benchmark_specs import BENCHMARK_SPECS

    registry = default_registry()
    if result.task in registry.tasks:
        for spec in registry.metrics_for(result.task):
            if spec.id == metric_id:
                return spec
    return BENCHMARK_SPECS.get(metric_id)


def value_text(value: float | None, spec: MetricSpec | None,
               edges: Sequence[float] = ()) -> str:
    """A metric's value on its scale, with more digits beside one of ``edges``, the band
    edges it was rated by (:func:`beside_edges`): "3.0%" read as no blocker above 3 %."""
    if value is None:
        return "not scored"
    if spec is not None and spec.percent:
        return beside_edges(value, edges, 1, percent=True)
    if spec is not None and spec.scale == "count" and float(value).is_integer():
        return f"{value:.0f}"
    return beside_edges(value, edges)


def metric_edges(metric: MetricResult, spec: MetricSpec | None) -> tuple[float, ...]:
    """The edges of the bands ``metric`` was rated by: the built-in definition's and what the
    evaluation recorded on it (a policy's bands, a case's own bar: :func:`rated_edges`)."""
    return rated_edges(metric.details, band_edges(spec))


def apart(value: float, bound: float, digits: int = 3, *,
          percent: bool = False) -> tuple[str, str]:
    """``value`` and the ``bound`` it was checked against, with ``digits`` decimals (of a
    percentage with ``percent``), or with as many more as two different numbers take to read
    differently: rounded alike, a headline stated "0.900 < 0.900"."""
    scale, suffix = (100.0, "%") if percent else (1.0, "")
    # Values the checks take for equal (they compare to 9 digits, as ratings do) are shown
    # alike: 0.09999999999999999 is at a bound of 0.1.
    same = round(value - bound, BAND_DIGITS) == 0
    for places in range(digits, 18):
        shown = (f"{value * scale:.{places}f}{suffix}", f"{bound * scale:.{places}f}{suffix}")
        if shown[0] != shown[1] or same:
            return shown
    return (repr(value), repr(bound))


def value_texts(value: float, bound: float, spec: MetricSpec | None) -> tuple[str, str]:
    """:func:`value_text` of a metric's value and of a bound it was checked against, apart
    (:func:`apart`)."""
    if spec is not None and spec.percent:
        return apart(value, bound, 1, percent=True)
    if spec is not None and spec.scale == "count" and float(value).is_integer() \
            and float(bound).is_integer():
        return (f"{value:.0f}", f"{bound:.0f}")
    return apart(value, bound)


def rate_and_limit(rate: float, threshold: object) -> tuple[str, str]:
    """A rate and its limit as the metric records it — a share (the case's, or the check's
    ``max_rate``), or a policy's rule — with the digits that tell a rate and a share apart
    ("9.5% is not below 10%" was 9.52 % against 9.5 %)."""
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
        return f"{rate:.1%}", f"within the policy's threshold ({threshold})"
    shown, bar = f"{rate:.1%}", f"{threshold:.0%}"
    if shown == f"{threshold:.1%}" or float(bar.rstrip("%")) != round(threshold * 100, 9):
        shown, bar = apart(rate, threshold, 1, percent=True)
    return shown, f"below {bar}"


def who(result: TaskResult) -> str:
    model = result.model if result.model is not None else "(unnamed)"
    return f"for model {model!r}, case {result.case_id!r}"


def signal_types(result: TaskResult) -> list[str]:
    """The signal types an extraction result evaluated, each by its own F1."""
    return sorted(m.removesuffix("_f1") for m in result.metrics
                  if m.endswith("_f1") and m != "signal_f1")


def not_evaluated(result: TaskResult, metric_id: str) -> str:
    """That this case's evaluation left out ``metric_id``, a metric of its task."""
    which = (f"the signal types it evaluates are {', '.join(signal_types(result)) or 'none'}"
             if result.task == "extraction" and metric_id.endswith("_f1")
             else "the case's evaluation leaves it out")
    return showable(f"{metric_id} is not evaluated {who(result)}: {which}")


def code_error(result: TaskResult, metric_ids: list[str]) -> str:
    """Why custom metrics whose code raised cannot be asserted on."""
    reasons = "; ".join(f"{mid}: {result.metrics[mid].reason}" for mid in metric_ids)
    return showable(f"the custom metric code raised {who(result)}, so it could not be scored "
                    f"(an error in the evaluation, not a model failure): {reasons}")


def unknown_score(what: str, result: TaskResult) -> str:
    """That ``what`` is unknown, and which verdicts the judge could not give, for the message
    of a check the known verdicts decided."""
    return (f"the {what} is unknown: the judge could not score "
            f"{', '.join(result.judge_errors)} (a judge error, not a model failure)")


def why_unscored(metric: MetricResult) -> str:
    """Why ``metric`` has no value, without the "not scored: " its reason may begin with."""
    return (metric.reason or "not scored").removeprefix("not scored: ")


def judge_reason(result: TaskResult, metric_id: str, metric: MetricResult) -> str | None:
    for record in result.judge_records:
        if record.get("metric") == metric_id:
            said = str(record.get("reason") or metric.reason or "")
            return f"judge {record.get('judge', '?')}: {said.removeprefix('not scored: ')}"
    return metric.reason


def threshold_text(metric: MetricResult, spec: MetricSpec | None) -> str | None:
    """The bar ``metric`` was rated against: a policy's or a case's, recorded on the metric
    when it was rated, over the built-in one; None when there is neither. A number recorded
    without ``CASE_BAR`` rated nothing — a list match's similarity threshold (an extraction
    type's F1 showed "0.500 (fail; threshold 0.500)"), or a case's bar left at the default —
    and the built-in bar is shown."""
    threshold = metric.details.get("threshold")
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        if metric.details.get(CASE_BAR):
            # A case's own bar (a fraction): shown on the metric's scale, a rate as a
            # percentage.
            return value_text(float(threshold), spec)
        threshold = None
    if threshold is None and spec is not None:
        threshold = spec.threshold
    return None if threshold is None else str(threshold)


def metric_line(result: TaskResult, metric_id: str) -> str:
    """``  metric = value (rating; threshold …) — reason`` for one metric of ``result``."""
    metric = result.metrics[metric_id]
    spec = spec_for(result, metric_id)
    facts: list[str] = []
    if metric.scored:
        facts.append(metric.rating or "unrated")
    threshold = threshold_text(metric, spec)
    if threshold is not None:
        facts.append(f"threshold {threshold}")
    if metric.flagged:
        facts.append("flagged: an off-scale judge reply, scored by the family's rule")
    if metric.judge_error:
        facts.append("judge error")
    line = f"  {metric_id} = {value_text(metric.value, spec, metric_edges(metric, spec))}"
    if facts:
        line += f" ({'; '.join(facts)})"
    reason = judge_reason(result, metric_id, metric)
    if reason and not metric.scored:
        reason = reason.removeprefix("not scored: ")
    return f"{line} — {reason}" if reason else line


def detail_lines(result: TaskResult, *, include_below_good: bool = True) -> list[str]:
    # Loaded with the result's own family (the benchmarks are scored beside it).
    from .engine.tasks.benchmark_specs import BENCHMARK_SPECS

    failing = [mid for mid, m in result.metrics.items() if m.rating in FAILING]
    # The Layer 2 benchmarks weigh nothing in the task score: listed after the task's own
    # metrics, under a heading, so a failed score's message leads with what made it.
    layer2 = [mid for mid in failing if mid in BENCHMARK_SPECS]
    lines = [metric_line(result, mid) for mid in failing if mid not in layer2]
    if layer2:
        lines.append("  Layer 2 benchmarks (not in the task score):")
        lines.extend(metric_line(result, mid) for mid in layer2)
    if not failing and include_below_good:
        weak = [mid for mid, m in result.metrics.items() if m.rating == "acceptable"]
        if weak:
            lines.append("  no metric failed; below good:")
            lines.extend(metric_line(result, mid) for mid in weak)
    if result.blockers:
        lines.append(f"  blockers: {', '.join(result.blockers)}")
    unscored = [mid for mid, m in result.metrics.items() if not m.scored]
    if unscored and result.valid:
        lines.append(f"  not scored: {', '.join(unscored)}")
    lines.extend(f"  note: {note}" for note in result.notes)
    return lines

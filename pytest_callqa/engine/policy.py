"""A team's own bars: a policy that changes a metric's threshold, whether a breach is a
blocker, or turns the metric off, read from ``[tool.callqa]`` in ``pyproject.toml`` or from a
TOML file of its own.

::

    [tool.callqa.metrics.question_score_accuracy]   # or "qa.question_score_accuracy"
    threshold = 0.97        # the good band's edge (on the metric's own scale)
    acceptable = 0.92       # optional: the acceptable band's edge
    blocker = true          # a value past the threshold is a blocker (false: never one)

    [tool.callqa.metrics.highlight_recall]
    disabled = true         # not rated, never a blocker, not shown

    [tool.callqa.metrics.keyword_f1]
    tolerance = 0.05        # the drop the baseline gate allows it (its own units)

    [tool.callqa.tasks.qa]
    pass_bar = 0.9          # assert_qa_score's minimum when a test gives none

A policy changes how values are rated — the ratings, the blockers, the disqualifications,
the scorecard, the assertion helpers' defaults and the baseline gate all follow it — not how
they are computed: the task formulas keep their weights (a ``weight`` key is refused).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .core.metrics import DISABLED_THRESHOLD, Bands, MetricSpec
from .core.numbers import MAX_MAGNITUDE, finite_number
from .registry import Registry

_KEYS = frozenset({"threshold", "acceptable", "blocker", "disabled", "tolerance"})
# The keys that change how a metric is rated (the tolerance is the gate's alone).
_RATING_KEYS = frozenset({"threshold", "acceptable", "blocker"})
_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*[-–/]\s*(\d+(?:\.\d+)?)")
# The values a metric takes, listed: "0/1", "0/0.5/1", "1/0.5/0" (read as a range, the last
# two were 0 to 0.5 and 1 to 0.5: the built-in threshold was off its own scale).
_VALUES = re.compile(r"\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


class PolicyError(ValueError):
    """A policy that cannot be applied; the message names the file and the key."""


def scale_range(spec: MetricSpec) -> tuple[float, float]:
    """The values a metric can take: the lowest to the highest of a scale that lists them
    ("0/0.5/1"), the last ``low-high`` of one that gives a range ("1-5 → 0-1" is reported on
    0–1), 0–1 for rates, 0 and up for counts."""
    if _VALUES.fullmatch(spec.scale.strip()):
        values = [float(v) for v in _NUMBER.findall(spec.scale)]
        return min(values), max(values)
    found = _RANGE.findall(spec.scale)
    if found:
        low, high = found[-1]
        return float(low), float(high)
    if spec.scale == "count":
        return 0.0, math.inf
    return 0.0, 1.0


def _number(value: Any, where: str, spec: MetricSpec) -> float:
    if not finite_number(value):
        raise PolicyError(f"{where}: expected a number, got {value!r}")
    low, high = scale_range(spec)
    if not low <= value <= high:
        raise PolicyError(f"{where}: {value!r} is off the metric's scale "
                          f"({spec.scale}: {low:g} to {high:g})")
    return float(value)


def _find(registry: Registry, key: str, where: str) -> MetricSpec:
    task, _, metric_id = key.rpartition(".")
    found = [spec for spec in registry.all_metrics()
             if spec.id == metric_id and (not task or spec.task == task)]
    if not found:
        raise PolicyError(f"{where}: unknown metric {key!r} (see pytest --callqa-metrics)")
    if len(found) > 1:
        tasks = ", ".join(sorted(spec.task for spec in found))
        raise PolicyError(f"{where}: metric {metric_id!r} exists in several tasks ({tasks}): "
                          f"name it as '<task>.{metric_id}'")
    return found[0]


def _rule(spec: MetricSpec, entry: Mapping[str, Any], where: str) -> MetricSpec:
    unknown = sorted(set(entry) - _KEYS)
    if "weight" in unknown:
        raise PolicyError(f"{where}.weight: weights cannot be changed by a policy (each task's "
                          "formula fixes them); thresholds, blockers and disabled can")
    if unknown:
        raise PolicyError(f"{where}: unknown key(s) {', '.join(unknown)}; known: "
                          f"{', '.join(sorted(_KEYS))}")
    if "tolerance" in entry:
        tolerance = entry["tolerance"]
        # Written into the report's metric definitions, which a later run reads as its
        # baseline: past MAX_MAGNITUDE it refused them (and an int past a float's range
        # raised OverflowError here).
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
                or not 0 <= tolerance <= MAX_MAGNITUDE:
            raise PolicyError(f"{where}.tolerance: expected a number from 0 to "
                              f"{MAX_MAGNITUDE:g}, got {tolerance!r}")
        low, high = scale_range(spec)
        if tolerance >= high - low:
            # As --callqa-regression-tolerance 2 is refused: no drop could be a regression.
            raise PolicyError(f"{where}.tolerance: {tolerance!r} is the metric's whole scale "
                              f"({spec.scale}: {low:g} to {high:g}) or more, so no drop could "
                              "regress; a tolerance is in the metric's own units (0.02 for 2 "
                              "points of a 0-1 score)")
    disabled = entry.get("disabled", False)
    if not isinstance(disabled, bool):
        raise PolicyError(f"{where}.disabled: expected true or false, got {disabled!r}")
    if disabled:
        return replace(spec, bands=None, blocker=False, shown=False,
                       threshold=DISABLED_THRESHOLD)
    blocker = entry.get("blocker", spec.blocker)
    if not isinstance(blocker, bool):
        raise PolicyError(f"{where}.blocker: expected true or false, got {blocker!r}")
    if not _RATING_KEYS & set(entry):
        # A tolerance alone is the gate's: the ratings stay as they were (a metric without a
        # bar was given one of its scale's top, ">= 1", and every value failed it).
        return spec
    if spec.bands is None and not blocker and set(entry) & _RATING_KEYS == {"blocker"}:
        # No bar, and none asked for: there is no blocker edge to take away.
        return replace(spec, blocker=False)
    old = spec.bands or Bands(good=scale_range(spec)[1])
    good = (_number(entry["threshold"], f"{where}.threshold", spec) if "threshold" in entry
            else old.good)
    acceptable = (_number(entry["acceptable"], f"{where}.acceptable", spec)
                  if "acceptable" in entry else old.acceptable)
    higher = old.higher_is_better
    if acceptable is not None and (acceptable > good if higher else acceptable < good):
        if "acceptable" in entry:
            raise PolicyError(f"{where}.acceptable: {acceptable:g} is past the threshold "
                              f"{good:g}")
        acceptable = None  # the built-in acceptable band no longer fits under the new bar
    edge = (acceptable if acceptable is not None else good) if blocker else None
    if blocker and old.blocker is not None and "threshold" not in entry \
            and "acceptable" not in entry:
        edge = old.blocker
    sign, worse = (">=", "<") if higher else ("<=", ">")
    text = f"{sign} {_bar_text(good, spec)}" + (
        f" | {worse} {_bar_text(edge, spec)} blocker" if edge is not None else "")
    return replace(spec, bands=Bands(good=good, acceptable=acceptable, blocker=edge,
                                     higher_is_better=higher),
                   blocker=blocker, threshold=text)


def _bar_text(bar: float, spec: MetricSpec) -> str:
    # A rate is shown in percent, its bars too: "20.0% … > 0.05 blocker" read as a bar of
    # 0.05 %.
    return f"{bar * 100:g}%" if spec.percent or spec.scale == "rate" else f"{bar:g}"


def apply_policy(registry: Registry, policy: Mapping[str, Any], origin: str) -> None:
    """Apply a policy table (``{"metrics": {key: {...}}}``) from ``origin`` to ``registry``.

    Raises :class:`PolicyError` naming ``origin`` and the key at the first problem.
    """
    unknown = sorted(set(policy) - {"metrics", "tasks"})
    if unknown:
        raise PolicyError(f"{origin}: [tool.callqa] has unknown table(s) "
                          f"{', '.join(unknown)}; known: metrics, tasks")
    _apply_tasks(registry, policy.get("tasks", {}), origin)
    metrics = policy.get("metrics", {})
    if not isinstance(metrics, Mapping):
        raise PolicyError(f"{origin}: tool.callqa.metrics must be a table")
    # The key that set each metric (``task.id``), as written: ``keyword_f1`` and
    # ``"entity.keyword_f1"`` are one metric, whose two rules would pile up in file order.
    set_by: dict[str, str] = {}
    for key, entry in metrics.items():
        where = f"{origin}: tool.callqa.metrics.{key}"
        if not isinstance(entry, Mapping):
            raise PolicyError(f"{where}: must be a table of threshold, acceptable, blocker, "
                              "disabled")
        spec = _find(registry, str(key), where)
        metric = f"{spec.task}.{spec.id}"
        if metric in set_by:
            raise PolicyError(f"{where}: metric {metric!r} is already set by "
                              f"tool.callqa.metrics.{set_by[metric]}; give its rule once")
        set_by[metric] = str(key)
        registry.override(_rule(spec, entry, where), origin)
        if "tolerance" in entry:
            registry.tolerances[f"{spec.task}.{spec.id}"] = float(entry["tolerance"])


def _apply_tasks(registry: Registry, tasks: Any, origin: str) -> None:
    if not isinstance(tasks, Mapping):
        raise PolicyError(f"{origin}: tool.callqa.tasks must be a table")
    for task, entry in tasks.items():
        where = f"{origin}: tool.callqa.tasks.{task}"
        if task not in registry.tasks:
            raise PolicyError(f"{where}: unknown task {task!r} (known: "
                              f"{', '.join(registry.tasks)})")
        if not isinstance(entry, Mapping) or set(entry) - {"pass_bar"}:
            raise PolicyError(f"{where}: must be a table with pass_bar only")
        bar = entry.get("pass_bar")
        if isinstance(bar, bool) or not isinstance(bar, (int, float)) or not 0 <= bar <= 1:
            raise PolicyError(f"{where}.pass_bar: expected a task score from 0 to 1, got "
                              f"{bar!r}")
        registry.pass_bars[str(task)] = float(bar)

"""The baseline gate: this run's JSON report against an earlier one (from ``main``, say).

For every (model, task) both reports scored, the task score and each metric they share are
compared. A *regression* is a move in the worse direction larger than the metric's tolerance
that is also significant on the cases both runs share: a paired bootstrap over those cases
(fixed seed) gives an interval for the change, and the change counts only when that interval
lies wholly on the worse side of zero. With fewer shared cases than ``min_cases`` the check
says "too few cases" rather than guessing. A blocker a shared case did not have in the
baseline, and a task newly disqualified, are regressions whatever the numbers say.

Everything here works on plain report dicts (schema ``callqa-report/1``); numpy is the only
library it loads, when a comparison runs.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .report_check import check_report

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

TASK_SCORE = "score"
DEFAULT_TOLERANCE = 0.02
# How far a move may pass its tolerance by the rounding of its sums alone.
TOLERANCE_SLACK = 1e-9
MIN_RESAMPLES = 1000
MOVED_CASES = 3
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*[-–]\s*(-?\d+(?:\.\d+)?)\s*$")
_RUN_KEYS = ("judge", "embeddings")

CaseKey = tuple[str, str, str]  # (model, task, case_id)


# --- reading a report --------------------------------------------------------------------


@dataclass
class _Case:
    """One (model, task, case) of a report, its runs averaged as the scorecard does."""

    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    counts: dict[str, tuple[float, float]] = field(default_factory=dict)
    blockers: set[str] = field(default_factory=set)
    judge_error: bool = False


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _cases(report: Mapping[str, Any]) -> dict[CaseKey, _Case]:
    runs: dict[CaseKey, list[dict[str, Any]]] = defaultdict(list)
    for case in report["cases"]:
        runs[(case["model"], case["task"], case["case_id"])].append(case)
    found: dict[CaseKey, _Case] = {}
    for key, entries in runs.items():
        item = _Case()
        item.judge_error = any(e.get("judge_errors") for e in entries)
        # An invalid output counts 0 in the task score, as on the scorecard.
        item.score = _mean([float(e["score"]) if e.get("valid", True)
                            and e.get("score") is not None else 0.0 for e in entries])
        values: dict[str, list[float]] = defaultdict(list)
        counts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for entry in entries:
            item.blockers.update(str(b) for b in entry.get("blockers") or ())
            for mid, metric in entry["metrics"].items():
                value = metric.get("value") if isinstance(metric, dict) else None
                if value is None or not metric.get("scored", True):
                    continue
                values[mid].append(float(value))
                details = metric.get("details") or {}
                if "numerator" in details and "denominator" in details:
                    counts[mid][0] += float(details["numerator"])
                    counts[mid][1] += float(details["denominator"])
        item.metrics = {mid: v for mid, vs in values.items() if (v := _mean(vs)) is not None}
        item.counts = {mid: (num, den) for mid, (num, den) in counts.items()}
        found[key] = item
    return found


# --- the rules ---------------------------------------------------------------------------


def scale_factor(scale: str | None) -> float:
    """How many units of a metric make one unit of a 0–1 scale: a stated numeric range's
    width (``0-100`` → 100, ``0-5`` → 5, ``1-5`` → 4), 1 for everything else (0–1 scores,
    0/1 checks, rates, counts). A scale written ``1-5 → 0-1`` is reported on the right side."""
    if not scale:
        return 1.0
    shown = scale.split("→")[-1]
    match = _RANGE.match(shown)
    if match is None:
        return 1.0
    width = float(match.group(2)) - float(match.group(1))
    return width if width > 0 else 1.0


@dataclass(frozen=True)
class _Spec:
    higher_is_better: bool
    pooled: bool
    scale: str | None
    # The drop the run's policy allows the metric, in its own units (None: the default).
    tolerance: float | None


def _specs(report: Mapping[str, Any]) -> dict[tuple[str, str], _Spec]:
    found: dict[tuple[str, str], _Spec] = {}
    builtin: dict[tuple[str, str], bool] | None = None
    for task, specs in report["metric_specs"].items():
        for spec in specs:
            bands = spec.get("bands")
            higher = not (isinstance(bands, dict) and bands.get("higher_is_better") is False)
            if "aggregate" in spec:
                pooled = spec["aggregate"] == "pooled"
            else:
                if builtin is None:
                    builtin = _builtin_pooled()
                pooled = builtin.get((task, spec["id"]), False)
            found[(task, spec["id"])] = _Spec(higher, pooled, spec.get("scale"),
                                              spec.get("regression_tolerance"))
    return found


def _builtin_pooled() -> dict[tuple[str, str], bool]:
    """Which built-in metrics are pooled, for a report whose metric definitions do not say."""
    # The registry loads the task families (pydantic): only for such older reports.
    from ..engine.registry import default_registry

    registry = default_registry()
    return {(task, spec.id): spec.aggregate == "pooled"
            for task in registry.tasks for spec in registry.metrics_for(task)}


def _tolerance(task: str, metric: str, spec: _Spec | None, base: float,
               overrides: Mapping[str, float]) -> float:
    for key in (f"{task}.{metric}", metric):
        if key in overrides:
            return float(overrides[key])
    if spec is not None and spec.tolerance is not None:
        return float(spec.tolerance)
    return base * scale_factor(spec.scale if spec else None)


def _tolerance_problem(value: Any) -> bool:
    """Whether ``value`` cannot be a regression tolerance: not a finite number >= 0 (no drop
    is beyond an infinite one, and none beyond NaN, which the report's JSON refuses)."""
    return (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or value < 0)


def _check_tolerances(tolerance: float, tolerances: Mapping[str, Any]) -> None:
    if _tolerance_problem(tolerance):
        raise ValueError(f"regression tolerance: {tolerance!r} is not a number >= 0")
    for key, value in tolerances.items():
        if _tolerance_problem(value):
            raise ValueError(f"regression tolerance for {key!r}: {value!r} is not a "
                             "number >= 0")


class _Bootstrap:
    """Paired bootstrap intervals. Every check with the same number of cases resamples them
    the same way, whatever order the checks run in: each draws its indices again from the
    seed, a block of rows at a time (``engine.stats.resample_blocks``: the same stream as one
    2,000 x n draw, without holding it: 0.5 GB at 33,000 cases)."""

    def __init__(self, resamples: int, seed: int, confidence: float) -> None:
        self.resamples = resamples
        self.seed = seed
        self.confidence = confidence

    def _rng(self) -> np.random.Generator:
        # numpy loads only when a gate actually compares something.
        import numpy as np

        return np.random.default_rng(self.seed)

    def _interval(self, stats: npt.NDArray[np.float64]) -> list[float] | None:
        # numpy loads only when a gate actually compares something.
        import numpy as np

        tail = (1 - self.confidence) / 2 * 100
        finite = stats[np.isfinite(stats)]
        if finite.size == 0:
            return None
        lo, hi = np.percentile(finite, [tail, 100 - tail])
        return [float(lo), float(hi)]

    def mean_diff(self, old: list[float], new: list[float]) -> list[float] | None:
        # numpy loads only when a gate actually compares something.
        import numpy as np

        # The engine's statistics load with numpy, when a gate compares something.
        from ..engine.stats import resampled_means

        diff = np.asarray(new, dtype=float) - np.asarray(old, dtype=float)
        return self._interval(resampled_means(self._rng(), diff, self.resamples))

    def pooled_diff(self, old: list[tuple[float, float]],
                    new: list[tuple[float, float]]) -> list[float] | None:
        # numpy loads only when a gate actually compares something.
        import numpy as np

        # The engine's statistics load with numpy, when a gate compares something.
        from ..engine.stats import resample_blocks

        o, n = np.asarray(old, dtype=float), np.asarray(new, dtype=float)
        blocks = []
        with np.errstate(divide="ignore", invalid="ignore"):
            for idx in resample_blocks(self._rng(), len(o), self.resamples):
                blocks.append(n[:, 0][idx].sum(axis=1) / n[:, 1][idx].sum(axis=1)
                              - o[:, 0][idx].sum(axis=1) / o[:, 1][idx].sum(axis=1))
        return self._interval(np.concatenate(blocks))


# --- the comparison ----------------------------------------------------------------------


def _version_warnings(current: Mapping[str, Any], baseline: Mapping[str, Any],
                      name: str) -> list[str]:
    warnings = []
    now, then = current.get("run") or {}, baseline.get("run") or {}
    versions_now, versions_then = now.get("versions") or {}, then.get("versions") or {}
    for key in sorted(set(versions_now) | set(versions_then)):
        if key in ("python", "pytest"):
            continue
        if versions_now.get(key) != versions_then.get(key):
            warnings.append(f"{name} has {key} {versions_then.get(key)!r}, this run "
                            f"{versions_now.get(key)!r}: compared on what they share")
    for key in _RUN_KEYS:
        a, b = (then.get(key) or {}), (now.get(key) or {})
        if (a.get("name"), a.get("model")) != (b.get("name"), b.get("model")):
            before = a.get("description") or a.get("name")
            after = b.get("description") or b.get("name")
            warnings.append(f"{name} was scored with {key} {before!r}, this run with {after!r}")
    for task in sorted(set(current["metric_specs"]) & set(baseline["metric_specs"])):
        ids_now = {s.get("id") for s in current["metric_specs"][task] if isinstance(s, dict)}
        ids_then = {s.get("id") for s in baseline["metric_specs"][task] if isinstance(s, dict)}
        if ids_now != ids_then:
            only_now = ", ".join(sorted(str(i) for i in ids_now - ids_then)) or "none"
            only_then = ", ".join(sorted(str(i) for i in ids_then - ids_now)) or "none"
            warnings.append(f"{task}: another metric set than {name} (only now: {only_now}; "
                            f"only in the baseline: {only_then}); compared on the metrics "
                            "both have")
    return warnings


def _per_case(cases: Mapping[CaseKey, _Case], keys: list[CaseKey],
              metric: str) -> dict[CaseKey, float]:
    if metric == TASK_SCORE:
        return {k: s for k in keys if (s := cases[k].score) is not None}
    return {k: cases[k].metrics[metric] for k in keys if metric in cases[k].metrics}


class _Comparison:
    def __init__(self, current: Mapping[str, Any], baseline: Mapping[str, Any], *,
                 tolerance: float, tolerances: Mapping[str, float], min_cases: int,
                 bootstrap: _Bootstrap) -> None:
        self.current, self.baseline = current, baseline
        self.now, self.then = _cases(current), _cases(baseline)
        self.specs = {**_specs(baseline), **_specs(current)}
        self.tolerance, self.tolerances = tolerance, tolerances
        self.min_cases = min_cases
        self.bootstrap = bootstrap
        self.checks: list[dict[str, Any]] = []
        self.regressions: list[dict[str, Any]] = []
        self.warnings: list[str] = []

    def shared_keys(self, model: str, task: str) -> tuple[list[CaseKey], list[CaseKey]]:
        """Cases of (model, task) in both reports without judge errors, and all the cases
        both reports have."""
        keys = sorted(k for k in self.now if k[0] == model and k[1] == task and k in self.then)
        usable = [k for k in keys if not self.now[k].judge_error and not self.then[k].judge_error]
        return usable, keys

    def metric(self, model: str, task: str, metric: str, old: float, new: float,
               keys: list[CaseKey]) -> None:
        spec = self.specs.get((task, metric))
        higher = spec.higher_is_better if spec else True
        pooled = bool(spec and spec.pooled)
        tol = _tolerance(task, metric, spec, self.tolerance, self.tolerances)
        old_cases = _per_case(self.then, keys, metric)
        new_cases = _per_case(self.now, keys, metric)
        if pooled:
            paired = [k for k in keys if metric in self.then[k].counts
                      and metric in self.now[k].counts]
        else:
            paired = [k for k in keys if k in old_cases and k in new_cases]
        check: dict[str, Any] = {
            "model": model, "task": task, "metric": metric, "old": old, "new": new,
            "delta": new - old, "tolerance": tol, "higher_is_better": higher,
            "pooled": pooled, "shared_cases": len(paired), "shared_delta": None,
            "interval": None, "significant": False, "status": "unchanged",
        }
        self.checks.append(check)
        if len(paired) < max(self.min_cases, 1):
            check["status"] = "too few cases"
            return
        if pooled:
            o = [self.then[k].counts[metric] for k in paired]
            n = [self.now[k].counts[metric] for k in paired]
            o_den, n_den = sum(c[1] for c in o), sum(c[1] for c in n)
            if not o_den or not n_den:
                check["status"] = "too few cases"
                return
            shared = sum(c[0] for c in n) / n_den - sum(c[0] for c in o) / o_den
            interval = self.bootstrap.pooled_diff(o, n)
        else:
            o_vals = [old_cases[k] for k in paired]
            n_vals = [new_cases[k] for k in paired]
            shared = (sum(n_vals) - sum(o_vals)) / len(paired)
            interval = self.bootstrap.mean_diff(o_vals, n_vals)
        if interval is None:
            check["status"] = "too few cases"
            return
        worse = -shared if higher else shared
        lo, hi = interval
        significant_worse = (hi < 0) if higher else (lo > 0)
        significant_better = (lo > 0) if higher else (hi < 0)
        check.update(shared_delta=shared, interval=interval,
                     significant=significant_worse or significant_better)
        # "More than its tolerance" in exact arithmetic: the same 0.02 drop is
        # -0.020000000000000018 from 0.50 and -0.01999999999999987 from 0.80.
        if significant_worse and worse > tol + TOLERANCE_SLACK:
            check["status"] = "regression"
            moved = sorted(paired, key=lambda k: (new_cases.get(k, 0.0) - old_cases.get(k, 0.0))
                           * (1 if higher else -1))
            self.regressions.append({
                "kind": "metric", "model": model, "task": task, "metric": metric,
                "old": old, "new": new, "delta": new - old, "interval": interval,
                "shared_cases": len(paired), "tolerance": tol,
                "moved_cases": [{"case_id": k[2], "old": old_cases.get(k),
                                 "new": new_cases.get(k)} for k in moved[:MOVED_CASES]],
            })
        elif significant_better and -worse > tol + TOLERANCE_SLACK:
            check["status"] = "improvement"

    def task(self, model: str, task: str) -> None:
        agg_now = self.current["models"][model]["tasks"][task]
        agg_then = self.baseline["models"][model]["tasks"][task]
        keys, shared = self.shared_keys(model, task)
        dropped = len(shared) - len(keys)
        if dropped:
            self.warnings.append(f"{model} {task}: {dropped} shared case(s) with judge errors "
                                 "left out of the comparison")
        pairs = [(TASK_SCORE, agg_then.get("score"), agg_now.get("score"))]
        for mid in agg_now["metrics"]:
            if mid in agg_then["metrics"]:
                pairs.append((mid, (agg_then["metrics"][mid] or {}).get("value"),
                              (agg_now["metrics"][mid] or {}).get("value")))
        for metric, old, new in pairs:
            if old is None or new is None:
                if old is not None:
                    self.warnings.append(f"{model} {task} {metric}: scored in the baseline "
                                         f"({_fmt(old)}), not in this run")
                continue
            self.metric(model, task, metric, float(old), float(new), keys)
        # Every shared case, judge errors or not: a blocker that fired is known whatever else
        # the judge could not score (left out with the case, it passed the gate).
        self.blockers(model, task, shared)
        if agg_now.get("disqualified") and not agg_then.get("disqualified"):
            self.regressions.append({
                "kind": "new disqualification", "model": model, "task": task,
                "metric": "disqualified", "old": agg_then.get("blocked_cases"),
                "new": agg_now.get("blocked_cases"), "delta": None, "interval": None,
                "shared_cases": len(keys), "moved_cases": [],
            })

    def blockers(self, model: str, task: str, keys: list[CaseKey]) -> None:
        fresh: dict[str, list[CaseKey]] = defaultdict(list)
        for key in keys:
            for metric in sorted(self.now[key].blockers - self.then[key].blockers):
                fresh[metric].append(key)
        for metric, cases in sorted(fresh.items()):
            self.regressions.append({
                "kind": "new blocker", "model": model, "task": task, "metric": metric,
                "old": None, "new": None, "delta": None, "interval": None,
                "shared_cases": len(keys),
                "moved_cases": [{"case_id": k[2], "old": self.then[k].metrics.get(metric),
                                 "new": self.now[k].metrics.get(metric)} for k in cases],
            })


def compare_reports(current: Mapping[str, Any], baseline: Mapping[str, Any], *,
                    tolerance: float = DEFAULT_TOLERANCE,
                    tolerances: Mapping[str, float] | None = None, min_cases: int = 5,
                    resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
                    baseline_name: str = "baseline") -> dict[str, Any]:
    """Compare ``current`` with ``baseline`` (both ``callqa-report/1`` dicts) and return the
    gate: ``verdict`` ("pass" or "fail"), ``regressions``, every ``check``, the cases and
    models added or removed, and ``warnings``.

    ``tolerance`` is on a 0–1 scale and grows with a metric's scale (see ``scale_factor``).
    A metric's ``regression_tolerance`` in ``current``'s ``metric_specs`` (its policy's, in its
    own units) replaces it for that metric, and ``tolerances`` overrides both, keyed
    ``metric`` or ``task.metric`` (``score`` is the task score), in the metric's own units.
    Raises ``ValueError`` naming the report and the key when an input is not a usable report
    or a setting is out of range.
    """
    check_report(baseline, baseline_name)
    check_report(current, "current report")
    overrides = dict(tolerances or {})
    _check_tolerances(tolerance, overrides)
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"bootstrap resamples: {resamples} is below {MIN_RESAMPLES}")
    if not 0 < confidence < 1:
        raise ValueError(f"bootstrap confidence: {confidence} is not between 0 and 1")
    comparison = _Comparison(current, baseline, tolerance=tolerance, tolerances=overrides,
                             min_cases=min_cases,
                             bootstrap=_Bootstrap(resamples, seed, confidence))
    comparison.warnings.extend(_version_warnings(current, baseline, baseline_name))
    models_now, models_then = current["models"], baseline["models"]
    shared_models = [m for m in models_now if m in models_then]
    for model in shared_models:
        for task in models_now[model]["tasks"]:
            if task in models_then[model]["tasks"]:
                comparison.task(model, task)
    shared = set(shared_models)

    def listed(keys: set[CaseKey]) -> list[dict[str, str]]:
        return [{"model": m, "task": t, "case_id": c} for m, t, c in sorted(keys)
                if m in shared]

    return {
        "verdict": "fail" if comparison.regressions else "pass",
        "regressions": comparison.regressions,
        "checks": comparison.checks,
        "added_cases": listed(set(comparison.now) - set(comparison.then)),
        "removed_cases": listed(set(comparison.then) - set(comparison.now)),
        "added_models": [m for m in models_now if m not in models_then],
        "removed_models": [m for m in models_then if m not in models_now],
        "warnings": comparison.warnings,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": confidence,
                      "min_cases": min_cases},
    }


# --- the terminal summary ----------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) >= 100 else f"{value:.3f}"
    return str(value)


def confidence_label(gate: Mapping[str, Any]) -> str:
    """The interval's confidence as text (``95 %``), from the gate's bootstrap settings."""
    confidence = (gate.get("bootstrap") or {}).get("confidence", 0.95)
    return f"{confidence * 100:g} %"


def regression_line(reg: Mapping[str, Any], confidence: str = "95 %") -> str:
    """One regression, in words: model, task, metric, old → new, interval, cases moved."""
    head = f"{reg['model']} · {reg['task']} · {reg['metric']}"
    moved = reg.get("moved_cases") or []
    if reg.get("kind") == "new blocker":
        cases = ", ".join(m["case_id"] for m in moved)
        return f"{head}: new blocker on {cases}"
    if reg.get("kind") == "new disqualification":
        return (f"{head}: newly disqualified ({_fmt(reg.get('old'))} → "
                f"{_fmt(reg.get('new'))} blocked cases)")
    cases = "; ".join(f"{m['case_id']} {_fmt(m['old'])} → {_fmt(m['new'])}" for m in moved)
    return (f"{head}: {_fmt(reg['old'])} → {_fmt(reg['new'])} (Δ {reg['delta']:+.3f}"
            + (f", {confidence} interval [{interval[0]:+.3f}, {interval[1]:+.3f}]"
               if (interval := reg.get("interval")) else "")
            + f", {reg['shared_cases']} shared cases)"
            + (f"; moved most: {cases}" if cases else ""))


def change_counts(gate: Mapping[str, Any]) -> list[str]:
    """What the two runs do not share, counted: ``["2 cases added", "1 model removed"]``."""
    changes = []
    for key, label in (("added_cases", "cases added"), ("removed_cases", "cases removed"),
                       ("added_models", "models added"), ("removed_models", "models removed")):
        items = gate.get(key) or []
        if items:
            changes.append(f"{len(items)} {label}")
    return changes


def gate_lines(gate: Mapping[str, Any]) -> list[str]:
    """The gate in a few terminal lines: the verdict, one line per regression, what was
    added or removed, and the warnings."""
    regressions = gate.get("regressions") or []
    where = f" against {gate['baseline']}" if gate.get("baseline") else ""
    verdict = str(gate.get("verdict", "pass")).upper()
    count = len(regressions)
    lines = [f"callqa gate{where}: {verdict}"
             + (f" — {count} regression{'s' if count != 1 else ''}" if count else
                " — no regression")]
    if gate.get("mode") == "report" and regressions:
        lines[0] += " (report mode: the run's exit status is not changed)"
    label = confidence_label(gate)
    lines += [f"  regression: {regression_line(reg, label)}" for reg in regressions]
    checks = gate.get("checks") or []
    few = sum(1 for c in checks if c.get("status") == "too few cases")
    better = sum(1 for c in checks if c.get("status") == "improvement")
    lines.append(f"  {len(checks)} comparisons: {better} improved, {few} with too few shared "
                 "cases to tell")
    changes = change_counts(gate)
    if changes:
        lines.append("  " + ", ".join(changes))
    lines += [f"  warning: {w}" for w in gate.get("warnings") or []]
    return lines

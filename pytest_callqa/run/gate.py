"""The baseline gate: this run's JSON report against an earlier one (from ``main``, say).

For every (model, task) both reports scored, the task score and each metric they share are
compared. A *regression* is a move in the worse direction larger than the metric's tolerance
that is also significant on the cases both runs share: a paired bootstrap over those cases
(fixed seed) gives an interval for the change, and the change counts only when that interval
lies wholly on the worse side of zero. With fewer shared cases than ``min_cases`` the check
says "too few cases" rather than guessing. A blocker a shared case did not have in the
baseline, and a task newly disqualified, are regressions whatever the numbers say.

A comparison the tool's own failure kept the gate from making is not a pass: a judge error
(a case whose metric, task score or blocker verdict the judge could not score, in this run or
in the baseline), a project's blocker metric whose code raised (its verdict undecided, as on
the scorecard), a case whose test errored or that had no output in one run. With no
regression found the verdict is "incomplete", naming each; nothing is said of the model.
``gate_cases`` reads the cases.

Everything here works on plain report dicts (schema ``callqa-report/1``); numpy is the only
library it loads, when a comparison runs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..engine.core.metrics import TASK_SCORE_ID
from ..engine.core.numbers import finite_number
from .gate_cases import (
    BENCHMARKS,
    BENCHMARKS_OFF,
    EITHER,
    EMBEDDER,
    JUDGE,
    JUDGE_ERRORS,
    NOT_SCORED_NOW,
    OTHER_TOOL,
    UNDECIDED_CAUSES,
    Case,
    CaseKey,
    Spec,
    benchmark_specs,
    per_case,
    read_cases,
    read_specs,
    unevaluated_in,
    unevaluated_pairs,
    unreached,
    unreached_in_baseline,
)
from .gate_text import changed_tools, difference_warnings
from .report_check import check_report

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

TASK_SCORE = TASK_SCORE_ID
DEFAULT_TOLERANCE = 0.02
# How far a move may pass its tolerance by the rounding of its sums alone.
TOLERANCE_SLACK = 1e-9
MIN_RESAMPLES = 1000
MOVED_CASES = 3
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*[-–]\s*(-?\d+(?:\.\d+)?)\s*$")


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


def _tolerance(task: str, metric: str, spec: Spec | None, base: float,
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
    return not finite_number(value) or value < 0


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


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


class _Comparison:
    def __init__(self, current: Mapping[str, Any], baseline: Mapping[str, Any], *,
                 tolerance: float, tolerances: Mapping[str, float], min_cases: int,
                 bootstrap: _Bootstrap) -> None:
        self.current, self.baseline = current, baseline
        self.now, self.then = read_cases(current), read_cases(baseline)
        self.unevaluated = unevaluated_pairs(current), unevaluated_pairs(baseline)
        specs_then, specs_now = read_specs(baseline), read_specs(current)
        self.specs = {**benchmark_specs(), **specs_then, **specs_now}
        # Disabled by this run's policy (a worse count was read as better): not gated.
        self.disabled = {key for key, spec in specs_now.items() if spec.disabled}
        # A metric either report defines as a blocker, and the run's policy does not disable:
        # a judge error leaves its verdict unknown.
        self.blocking = {k for specs in (specs_then, specs_now)
                         for k, spec in specs.items() if spec.blocker} - self.disabled
        # Another judge or embedder than the baseline's: the checks whose figures depend on
        # it are not compared; the tasks of a case that matched by the embedder depend on it.
        self.changed = frozenset(changed_tools(current, baseline))
        self.embedded = {k[1] for cases in (self.now, self.then) for k, c in cases.items()
                         if c.embedded} if EMBEDDER in self.changed else set()
        self.tolerance, self.tolerances = tolerance, tolerances
        self.min_cases = min_cases
        self.bootstrap = bootstrap
        self.checks: list[dict[str, Any]] = []
        self.regressions: list[dict[str, Any]] = []
        self.incomplete: list[dict[str, Any]] = []
        self.warnings: list[str] = []

    def shared_keys(self, model: str, task: str) -> list[CaseKey]:
        return sorted(k for k in self.now if k[0] == model and k[1] == task and k in self.then)

    def other_tool(self, task: str, metrics: Iterable[str]) -> str | None:
        """Why the figures of ``metrics`` of ``task`` (``score``: its task score, from its
        weighted metrics) cannot be compared when any depends on a judge or an embedder other
        than the baseline's, by its definition's ``source``; None when none does."""
        tools: set[str] = set()
        for metric in metrics if self.changed else ():
            if metric == TASK_SCORE:
                weighted = [s.tools for (t, _), s in self.specs.items() if t == task
                            and s.weighted]
                found = set().union(*weighted) if weighted else set(EITHER)
            else:
                spec = self.specs.get((task, metric))
                found = set(spec.tools if spec else EITHER)
            if task in self.embedded and (metric == TASK_SCORE or JUDGE not in found):
                found.add(EMBEDDER)
            tools |= found
        return " and ".join(OTHER_TOOL[t] for t in (JUDGE, EMBEDDER)
                            if t in tools & self.changed) or None

    def left_out(self, keys: list[CaseKey], task: str,
                 metric: str) -> tuple[list[CaseKey], list[CaseKey]]:
        """The cases of ``keys`` a judge error keeps out of the comparison of ``metric``: in
        this run, and in the baseline. A task score is out with a judge error in any metric
        weighted into it (an older report renormalised around one)."""
        weighted = {m for (t, m), spec in self.specs.items() if t == task and spec.weighted}

        def out(case: Case) -> bool:
            if metric == TASK_SCORE:
                return case.score_unknown or bool(case.judge_errors & weighted)
            return metric in case.judge_errors

        return [k for k in keys if out(self.now[k])], [k for k in keys if out(self.then[k])]

    def unknown_blockers(self, case: Case, task: str) -> set[str]:
        """The blocker metrics whose verdict is unknown in ``case``: a judge error left them
        unscored, their code raised, or no estimate of them was made (the scorecard counts
        each as undecided)."""
        judged = {m for m in case.judge_errors
                  if (task, m) in self.blocking or m in case.blocker_metrics}
        found = judged | case.raised_blockers | case.unestimated_blockers
        return {m for m in found - case.blockers if (task, m) not in self.disabled}

    def undecided_reason(self, task: str, run: list[CaseKey], baseline: list[CaseKey],
                         metric: str | None = None, gaps: frozenset[str] = frozenset()) -> str:
        """Why the blocker verdicts of ``metric`` (None: any blocker) are unknown in the
        cases ``run`` of this run and ``baseline`` of the baseline, in the gate's words,
        with the ``gaps``: why pairs of the task were not evaluated."""
        causes: set[str] = set(gaps)
        for cases, keys in ((self.now, run), (self.then, baseline)):
            for key in keys:
                case = cases[key]
                for mid in self.unknown_blockers(case, task) if metric is None else {metric}:
                    causes |= case.undecided_by(mid)
        # A scorecard may say a disqualification is unknown with no case showing why (an
        # older report): the judge is named, as the gate has always named it.
        return " and ".join(c for c in UNDECIDED_CAUSES if c in causes) or JUDGE_ERRORS

    def unmade(self, kind: str, model: str, task: str, metric: str | None, reason: str,
               run: list[CaseKey], baseline: list[CaseKey], detail: str | None = None) -> None:
        """Records a comparison the gate could not make, with the cases that kept it (and
        what names its cause beyond them: the case files a run could not read)."""
        self.incomplete.append({
            "kind": kind, "model": model, "task": task, "metric": metric, "reason": reason,
            "run": sorted({k[2] for k in run}), "baseline": sorted({k[2] for k in baseline}),
            **({"detail": detail} if detail else {})})

    def change(self, metric: str, pooled: bool, paired: list[CaseKey],
               old_cases: Mapping[CaseKey, float],
               new_cases: Mapping[CaseKey, float]) -> tuple[float, list[float]] | None:
        """The change on the paired cases and its interval; None with too few to tell."""
        if len(paired) < max(self.min_cases, 1):
            return None
        if pooled:
            o = [self.then[k].counts[metric] for k in paired]
            n = [self.now[k].counts[metric] for k in paired]
            o_den, n_den = sum(c[1] for c in o), sum(c[1] for c in n)
            if not o_den or not n_den:
                return None
            shared = sum(c[0] for c in n) / n_den - sum(c[0] for c in o) / o_den
            interval = self.bootstrap.pooled_diff(o, n)
        else:
            o_vals = [old_cases[k] for k in paired]
            n_vals = [new_cases[k] for k in paired]
            shared = (sum(n_vals) - sum(o_vals)) / len(paired)
            interval = self.bootstrap.mean_diff(o_vals, n_vals)
        return None if interval is None else (shared, interval)

    def metric(self, model: str, task: str, metric: str, old: float | None,
               new: float | None, keys: list[CaseKey]) -> None:
        spec = self.specs.get((task, metric))
        higher = spec.higher_is_better if spec else True
        pooled = bool(spec and spec.pooled)
        tol = _tolerance(task, metric, spec, self.tolerance, self.tolerances)
        run_out, base_out = self.left_out(keys, task, metric)
        out = {*run_out, *base_out}
        usable = [k for k in keys if k not in out]
        old_cases = per_case(self.then, usable, metric)
        new_cases = per_case(self.now, usable, metric)
        if pooled:
            # A case with no units in either run (0 of 0 both times) cannot move the rate:
            # counted as shared, it let one case's change pass for the evidence of many.
            paired = [k for k in usable if metric in self.then[k].counts
                      and metric in self.now[k].counts
                      and (self.then[k].counts[metric][1] or self.now[k].counts[metric][1])]
        else:
            paired = [k for k in usable if k in old_cases and k in new_cases]
        check: dict[str, Any] = {
            "model": model, "task": task, "metric": metric, "old": old, "new": new,
            "delta": None if old is None or new is None else new - old, "tolerance": tol,
            "higher_is_better": higher, "pooled": pooled, "shared_cases": len(paired),
            "percent": bool(spec and spec.percent),
            "judge_error_cases": len(out), "shared_delta": None, "interval": None,
            "significant": False, "status": "unchanged",
        }
        self.checks.append(check)
        found = self.change(metric, pooled, paired, old_cases, new_cases)
        other = self.other_tool(task, [metric])
        if found is None:
            check["status"] = "too few cases"
        else:
            self.judge(check, found, paired, old_cases, new_cases, gated=other is None)
        if other and found is not None:
            self.unmade("metric", model, task, metric, other, paired, [])
        # Cases the judge failed on, and cases the baseline scored that this run has no value
        # for (the judge cannot estimate it for the new output, or it failed), may hide a
        # regression: no pass is given without them, unless the task has too few cases to
        # tell with them anyway.
        # One that no longer applies (the new output has no pair to compare) misses nothing.
        lost = [k for k in usable if metric not in self.now[k].not_applicable and (
            metric in self.then[k].counts and metric not in self.now[k].counts if pooled
            else k in old_cases and k not in new_cases)]
        if (out or lost) and check["status"] != "regression" \
                and len(keys) >= max(self.min_cases, 1):
            check["status"] = "incomplete"
            if out:
                self.unmade("metric", model, task, metric, JUDGE_ERRORS, run_out, base_out)
            if lost:
                self.unmade("metric", model, task, metric, NOT_SCORED_NOW, lost, [])

    def judge(self, check: dict[str, Any], found: tuple[float, list[float]],
              paired: list[CaseKey], old_cases: Mapping[CaseKey, float],
              new_cases: Mapping[CaseKey, float], *, gated: bool = True) -> None:
        """A check's status from the change on its paired cases; a regression is recorded.
        One not ``gated`` (another judge or embedder than the baseline's) is incomplete."""
        shared, interval = found
        higher, tol = check["higher_is_better"], check["tolerance"]
        worse = -shared if higher else shared
        lo, hi = interval
        significant_worse = (hi < 0) if higher else (lo > 0)
        significant_better = (lo > 0) if higher else (hi < 0)
        check.update(shared_delta=shared, interval=interval,
                     significant=significant_worse or significant_better)
        if not gated:
            check["status"] = "incomplete"
            return
        # "More than its tolerance" in exact arithmetic: the same 0.02 drop is
        # -0.020000000000000018 from 0.50 and -0.01999999999999987 from 0.80.
        if significant_worse and worse > tol + TOLERANCE_SLACK:
            check["status"] = "regression"
            moved = sorted(paired, key=lambda k: (new_cases.get(k, 0.0) - old_cases.get(k, 0.0))
                           * (1 if higher else -1))
            self.regressions.append({
                "kind": "metric", **{k: check[k] for k in ("model", "task", "metric", "old",
                                                           "new", "delta", "shared_delta",
                                                           "percent")},
                "interval": interval, "shared_cases": len(paired), "tolerance": tol,
                "moved_cases": [{"case_id": k[2], "old": old_cases.get(k),
                                 "new": new_cases.get(k)} for k in moved[:MOVED_CASES]],
            })
        elif significant_better and -worse > tol + TOLERANCE_SLACK:
            check["status"] = "improvement"

    def task(self, model: str, task: str) -> None:
        agg_now = self.current["models"][model]["tasks"][task]
        agg_then = self.baseline["models"][model]["tasks"][task]
        keys = self.shared_keys(model, task)
        pairs = [(TASK_SCORE, agg_then.get("score"), agg_now.get("score"))]
        for mid in agg_now["metrics"]:
            if mid in agg_then["metrics"] and (task, mid) not in self.disabled:
                pairs.append((mid, (agg_then["metrics"][mid] or {}).get("value"),
                              (agg_now["metrics"][mid] or {}).get("value")))
        for metric, old, new in pairs:
            # A figure a judge error left unknown is compared on the cases that have it; one
            # the baseline had and this run has not is a comparison not made (metric()).
            if old is None and not any(self.left_out(keys, task, metric)):
                continue
            self.metric(model, task, metric, _number(old), _number(new), keys)
        # Every shared case: a blocker that fired is known whatever else the judge could not
        # score (left out with the case, it passed the gate); one the judge could not decide
        # is not compared.
        self.blockers(model, task, keys)
        self.disqualification(model, task, keys, agg_now, agg_then)

    def benchmarks(self, model: str) -> None:
        """Each Layer 2 criterion both reports scored for ``model``, over every shared case
        that has it. Consistency has no value per case (it is the spread of a case's runs):
        the task scores it is worked out from are compared with their tasks. One only the
        baseline scored is a comparison not made when this run had the benchmarks off (else a
        pull request could pass the gate by switching them off), and a warning otherwise."""
        now = self.current["models"][model].get(BENCHMARKS) or {}
        then = self.baseline["models"][model].get(BENCHMARKS) or {}
        keys = sorted(k for k in self.now if k[0] == model and k in self.then)
        # Only the criteria this run lacks are looked up case by case: every shared case of a
        # large suite, for each criterion, was read on every gate.
        cases_then = {bid: [k for k in keys if bid in self.then[k].metrics]
                      for bid in then if bid not in now and bid != "consistency"}
        missing = {bid: cases for bid, cases in cases_then.items()
                   if cases or (then[bid] or {}).get("value") is not None}
        off = (self.current.get("run") or {}).get("benchmarks") is False
        # As for a metric not scored now: with too few cases to tell, nothing is missed.
        if off and len(keys) >= max(self.min_cases, 1):
            for bid, cases in missing.items():
                self.unmade("metric", model, BENCHMARKS, bid, BENCHMARKS_OFF, cases, [])
        elif missing:
            self.warnings.append(f"{model}: Layer 2 benchmarks the baseline scored and this "
                                 f"run did not, not compared: {', '.join(missing)}")
        for bid in now:
            if bid not in then or bid == "consistency":
                continue
            old, new = (then[bid] or {}).get("value"), (now[bid] or {}).get("value")
            if old is None and not any(self.left_out(keys, BENCHMARKS, bid)):
                continue
            self.metric(model, BENCHMARKS, bid, _number(old), _number(new), keys)

    def blockers(self, model: str, task: str, keys: list[CaseKey]) -> None:
        fresh: dict[str, list[CaseKey]] = defaultdict(list)
        unknown: dict[str, tuple[list[CaseKey], list[CaseKey]]] = defaultdict(lambda: ([], []))
        for key in keys:
            now, then = self.now[key], self.then[key]
            now_unknown = self.unknown_blockers(now, task)
            then_unknown = self.unknown_blockers(then, task)
            # A blocker is new only against a baseline verdict that is known not to block.
            for metric in (now.blockers | now_unknown) - then.blockers:
                if metric in now_unknown:
                    unknown[metric][0].append(key)
                if metric in then_unknown:
                    unknown[metric][1].append(key)
                if metric not in now_unknown | then_unknown:
                    fresh[metric].append(key)
        for metric, cases in sorted(fresh.items()):
            other = self.other_tool(task, [metric])
            if other:
                self.unmade("new blocker", model, task, metric, other, cases, [])
                continue
            self.regressions.append({
                "kind": "new blocker", "model": model, "task": task, "metric": metric,
                "old": None, "new": None, "delta": None, "interval": None,
                "shared_cases": len(keys),
                "moved_cases": [{"case_id": k[2], "old": self.then[k].metrics.get(metric),
                                 "new": self.now[k].metrics.get(metric)} for k in cases],
            })
        for metric, (run, base) in sorted(unknown.items()):
            self.unmade("new blocker", model, task, metric,
                        self.undecided_reason(task, run, base, metric), run, base)

    def disqualification(self, model: str, task: str, keys: list[CaseKey],
                         agg_now: Mapping[str, Any], agg_then: Mapping[str, Any]) -> None:
        then_dq, now_dq = agg_then.get("disqualified"), agg_now.get("disqualified")
        if then_dq:
            return
        # A scorecard that says its disqualification is unknown (or gives None) leaves it
        # open; one that says it is known decided it with its undecided cases counted (they
        # could not tip it over the tolerance). A report older than that field is open when
        # any case of the task has a blocker verdict a judge error or its code left unknown.
        run = [k for k, c in self.now.items()
               if k[:2] == (model, task) and self.unknown_blockers(c, task)]
        base = [k for k, c in self.then.items()
                if k[:2] == (model, task) and self.unknown_blockers(c, task)]
        now_open = (now_dq is None or agg_now.get("disqualification_unknown") is True
                    or ("disqualification_unknown" not in agg_now and bool(run)))
        then_open = (then_dq is None or agg_then.get("disqualification_unknown") is True
                     or ("disqualification_unknown" not in agg_then and bool(base)))
        if not (now_dq or now_open):
            return
        if now_dq and not then_open:
            blocked = [k for k, c in self.now.items() if k[:2] == (model, task) and c.blockers]
            other = self.other_tool(task, {m for k in blocked for m in self.now[k].blockers})
            if other:
                self.unmade("new disqualification", model, task, "disqualified", other,
                            blocked, [])
                return
            self.regressions.append({
                "kind": "new disqualification", "model": model, "task": task,
                "metric": "disqualified", "old": agg_then.get("blocked_cases"),
                "new": agg_now.get("blocked_cases"), "delta": None, "interval": None,
                "shared_cases": len(keys), "moved_cases": [],
            })
        else:
            # A pair either report did not evaluate is undecided on the scorecard too.
            now, then = (unevaluated_in(pairs, model, task) for pairs in self.unevaluated)
            reason = self.undecided_reason(task, run, base, gaps=frozenset(
                [*now.values(), *then.values()]))
            self.unmade("new disqualification", model, task, "disqualified", reason,
                        [*run, *now], [*base, *then])

    def not_evaluated(self) -> tuple[set[CaseKey], set[CaseKey]]:
        """The cases only one report has, less those the other report did not evaluate
        (their test errored, or they had no output: recorded as such; or those it may never
        have reached, a partial run: ``gate_cases.unreached``): added, removed."""
        added, removed = set(self.now) - set(self.then), set(self.then) - set(self.now)
        now, then = self.unevaluated
        not_run = {k: now[k[0], k[2]][1] for k in removed if (k[0], k[2]) in now}
        unrun, details = unreached(self.current, self.baseline, removed - set(not_run))
        not_run.update(unrun)
        not_then = {k: then[k[0], k[2]][1] for k in added if (k[0], k[2]) in then}
        unrun, then_details = unreached_in_baseline(self.current, self.baseline,
                                                    added - set(not_then))
        not_then.update(unrun)
        details.update(then_details)
        for model, task, why in sorted({(*k[:2], why) for k, why in
                                        [*not_run.items(), *not_then.items()]}):
            self.unmade("not evaluated", model, task, None, why,
                        [k for k, r in not_run.items() if (*k[:2], r) == (model, task, why)],
                        [k for k, r in not_then.items() if (*k[:2], r) == (model, task, why)],
                        details.get(why))
        return added - set(not_then), removed - set(not_run)


def compare_reports(current: Mapping[str, Any], baseline: Mapping[str, Any], *,
                    tolerance: float = DEFAULT_TOLERANCE,
                    tolerances: Mapping[str, float] | None = None, min_cases: int = 5,
                    resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
                    baseline_name: str = "baseline") -> dict[str, Any]:
    """Compare ``current`` with ``baseline`` (both ``callqa-report/1`` dicts) and return the
    gate: ``verdict`` ("fail" on a regression; else "incomplete" when a judge error, a
    custom blocker metric whose code raised, a test error or a missing output kept a
    comparison from being made; else "pass"), ``regressions``, every
    ``check``, the comparisons ``incomplete``, the cases and models added or removed, and
    ``warnings``.

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
    comparison.warnings.extend(difference_warnings(current, baseline, baseline_name))
    if comparison.disabled:
        comparison.warnings.append("not compared, disabled by the run's policy: " + ", ".join(
            sorted(f"{task}.{metric}" for task, metric in comparison.disabled)))
    models_now, models_then = current["models"], baseline["models"]
    shared_models = [m for m in models_now if m in models_then]
    for model in shared_models:
        for task in models_now[model]["tasks"]:
            if task in models_then[model]["tasks"]:
                comparison.task(model, task)
        comparison.benchmarks(model)
    added, removed = comparison.not_evaluated()
    shared = set(shared_models)
    # A model whose every pair errored or had no output is not evaluated, not removed.
    unevaluated = {e["model"] for e in comparison.incomplete if e["kind"] == "not evaluated"}

    def listed(keys: set[CaseKey]) -> list[dict[str, str]]:
        return [{"model": m, "task": t, "case_id": c} for m, t, c in sorted(keys)
                if m in shared]

    verdict = ("fail" if comparison.regressions else
               "incomplete" if comparison.incomplete else "pass")
    return {
        "verdict": verdict,
        "regressions": comparison.regressions,
        "incomplete": comparison.incomplete,
        "checks": comparison.checks,
        "added_cases": listed(added),
        "removed_cases": listed(removed),
        "added_models": [m for m in models_now if m not in models_then
                         and m not in unevaluated],
        "removed_models": [m for m in models_then if m not in models_now
                           and m not in unevaluated],
        "warnings": comparison.warnings,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": confidence,
                      "min_cases": min_cases},
    }

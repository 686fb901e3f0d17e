"""Repeated runs of one (model, case): how a test over them passes, and what they say
together (pass rate, pass^k, pass@k, each metric's mean and standard deviation).

Run 1 is the run of a single-run session, unchanged; runs 2..N are independent samples
(their own generation and judge calls). A test over N runs is run once per run; the pass
rule says what its N outcomes make of it:

- ``all`` — it passes when every run passes (pass^k with k = N; the default);
- ``majority`` — when more than half of the runs pass;
- ``mean`` — when it passes on the mean of the runs (each metric's mean value, rated by the
  metric's bands; a blocker or a judge error in any run stays).

A test whose runs do not all agree is *flaky*, whatever the rule made of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .core.metrics import MetricSpec
from .core.results import MetricResult, Rating, TaskResult
from .registry import Registry
from .stats import mean_sd, pass_at_k, pass_hat_k
from .tasks.benchmark_specs import BENCHMARK_SPECS

PASS_RULES: tuple[str, ...] = ("all", "majority", "mean")
DEFAULT_PASS_RULE = "all"


def rule_passes(rule: str, outcomes: Sequence[bool]) -> bool:
    """Whether runs with these outcomes pass under ``all`` or ``majority`` (``mean`` is
    decided on :func:`mean_result`, not on the outcomes)."""
    if not outcomes:
        raise ValueError("no run outcome to decide on")
    if rule == "all":
        return all(outcomes)
    if rule == "majority":
        return 2 * sum(outcomes) > len(outcomes)
    raise ValueError(f"pass rule {rule!r} is not decided by run outcomes; "
                     f"known rules: {', '.join(PASS_RULES)}")


@dataclass(frozen=True)
class RunStats:
    """What the runs of one (model, case) say together."""

    runs: int
    passes: int

    @property
    def pass_rate(self) -> float:
        return self.passes / self.runs

    def pass_hat_k(self, k: int) -> float:
        """The chance that k of these runs, drawn without replacement, all pass."""
        return pass_hat_k(self.passes, self.runs, k)

    def pass_at_k(self, k: int) -> float:
        """The chance that some one of k of these runs, drawn without replacement, passes."""
        return pass_at_k(self.passes, self.runs, k)

    @property
    def flaky(self) -> bool:
        return 0 < self.passes < self.runs


def run_stats(outcomes: Sequence[bool]) -> RunStats:
    if not outcomes:
        raise ValueError("no run outcome")
    return RunStats(runs=len(outcomes), passes=sum(1 for o in outcomes if o))


def metric_spread(results: Sequence[TaskResult]) -> dict[str, dict[str, float | int | None]]:
    """Each metric's mean and sample standard deviation over the runs that scored it (the
    deviation None when one run did), and how many did."""
    spread: dict[str, dict[str, float | int | None]] = {}
    ids = dict.fromkeys(mid for r in results for mid in r.metrics)
    for mid in ids:
        values = [float(m.value) for r in results
                  if (m := r.metrics.get(mid)) is not None and m.scored and m.value is not None]
        found = mean_sd(values)
        if found is not None:
            spread[mid] = {"mean": found[0], "sd": found[1], "scored_runs": len(values)}
    return spread


def metric_specs(registry: Registry, task: str) -> dict[str, MetricSpec]:
    """The definitions a result of ``task`` is rated by: the task's own, its custom metrics
    and the benchmarks."""
    specs = dict(BENCHMARK_SPECS)
    if task in registry.tasks:
        specs.update((s.id, s) for s in registry.metrics_for(task))
    return specs


# Ratings from the worst up: between two runs' ratings, the worse one is the mean's when
# the bands that rated them are not known.
_RATING_ORDER = ("blocker", "fail", "acceptable", "good")


def bracketed_rating(spec: MetricSpec | None, entries: Sequence[MetricResult],
                     mean: float) -> Rating | None:
    """The rating of ``mean``, a mean of ``entries`` (a case's runs, or a model's cases). By
    the metric's bands when they gave every entry its rating; a case can rate by bands of
    its own (a grounding case's hallucination limit, an agent's pass threshold, a
    conversation's threshold), and then the entries bracket the mean: bands are intervals,
    so a mean between two entries of one rating has that rating, and between two ratings it
    gets the worse one."""
    # An entry without a rating (one built by hand) says nothing of its bands.
    rated = [(float(m.value), m.rating) for m in entries
             if m.scored and m.value is not None and not m.blocker and m.rating is not None]
    if spec is not None and spec.bands is not None and all(
            spec.rate(value) == rating for value, rating in rated):
        return spec.rate(mean)
    lower = max(((v, r) for v, r in rated if v <= mean), default=None, key=lambda p: p[0])
    upper = min(((v, r) for v, r in rated if v >= mean), default=None, key=lambda p: p[0])
    bracket = [p[1] for p in (lower, upper) if p is not None and p[1] in _RATING_ORDER]
    if not bracket:
        return entries[0].rating
    return min(bracket, key=_RATING_ORDER.index)


def _shared_details(entries: Sequence[MetricResult]) -> dict[str, Any]:
    """The details every run gave alike: what the case configured (a pass threshold, a rate's
    limit), and whatever a rule decided the same way in every run (passed in all of them,
    a lower bound in all of them) — true of the mean too. What differs is the run's own and
    is left out."""
    first, *others = [m.details for m in entries]
    shared = {key: value for key, value in first.items()
              if key != "runs" and all(key in d and d[key] == value for d in others)}
    if not {"numerator", "denominator"} <= shared.keys():
        # A rate's counts stand for its value only as a pair.
        shared.pop("numerator", None)
        shared.pop("denominator", None)
    if any(m.details.get("lower_bound") for m in entries):
        # A mean over a value known only from below is known only from below.
        shared["lower_bound"] = True
    return shared


def _unknown_mean(entries: Sequence[MetricResult], missed: Sequence[tuple[int, MetricResult]],
                  scored: int) -> MetricResult:
    """The mean of runs of which none, or not all, scored the metric: not scored, for the
    reason of the runs that missed it, keeping what the helpers read of them (an unknown
    blocker, a custom metric that raised)."""
    if not scored:
        reason = entries[0].reason or "not scored in any run"
    else:
        first = missed[0][1].reason or "not scored"
        runs = ", ".join(str(run + 1) for run, _ in missed)
        plural = "s" if len(missed) > 1 else ""
        reason = (f"not scored: the mean of the runs is unknown, run{plural} {runs} scored no "
                  f"value ({first.removeprefix('not scored: ')})")
    details: dict[str, Any] = {}
    if any(m.details.get("blocker_metric") for m in entries):
        details["blocker_metric"] = True  # as for a judge error
    raised = next((m.details["raised"] for m in entries if "raised" in m.details), None)
    if raised is not None:
        details["raised"] = raised
    return MetricResult.not_scored(reason, **details)


def mean_result(results: Sequence[TaskResult], specs: Mapping[str, MetricSpec]) -> TaskResult:
    """One result standing for the runs: each metric's mean over the runs that scored it,
    rated by its spec. Conservative wherever the runs differ in kind: a metric the judge
    could not score in some run is a judge error; a blocker of any run stays (and voids the
    score when its run was voided); the score is the mean only when every run has one."""
    if not results:
        raise ValueError("no run to average")
    first = results[0]
    metrics: dict[str, MetricResult] = {}
    for mid in dict.fromkeys(mid for r in results for mid in r.metrics):
        entries = [r.metrics[mid] for r in results if mid in r.metrics]
        spec = specs.get(mid)
        if any(m.judge_error for m in entries):
            reason = next(m.reason for m in entries if m.judge_error)
            # Still a blocker the judge could not decide, when it is one: the helpers ask.
            blocker = any(m.details.get("blocker_metric") for m in entries)
            metrics[mid] = MetricResult.judge_failed(
                reason, **({"blocker_metric": True} if blocker else {}))
            continue
        values = [float(m.value) for m in entries if m.scored and m.value is not None]
        # A run without a value that the metric applies to (its output failed, no estimate
        # was made, a custom metric raised) leaves the mean unknown: the mean of the others
        # would pass over that run. One the metric does not apply to adds nothing.
        missed = [(r.run, r.metrics[mid]) for r in results if mid in r.metrics
                  and not r.metrics[mid].scored and not r.metrics[mid].not_applicable]
        if not values or missed:
            metrics[mid] = _unknown_mean(entries, missed, len(values))
            continue
        mean = sum(values) / len(values)
        rating = bracketed_rating(spec, entries, mean)
        blocker = any(m.blocker for m in entries)
        metrics[mid] = MetricResult(
            value=mean, rating="blocker" if blocker else rating, blocker=blocker,
            flagged=any(m.flagged for m in entries),
            reason=f"mean of {len(values)} run{'s' if len(values) != 1 else ''}",
            details={**_shared_details(entries), "runs": values})
    valid = all(r.valid for r in results)
    scores = [r.score for r in results]
    score = (sum(scores) / len(scores)  # type: ignore[arg-type]
             if valid and all(s is not None for s in scores) else None)
    blockers = list(dict.fromkeys(b for r in results for b in r.blockers))
    return TaskResult(
        task=first.task, case_id=first.case_id, score=score, valid=valid,
        blocked=bool(blockers), blockers=blockers, metrics=metrics, model=first.model,
        run=first.run, not_scored=sorted(mid for mid, m in metrics.items() if not m.scored),
        renormalised=any(r.renormalised for r in results),
        judge_errors=sorted({mid for r in results for mid in r.judge_errors}),
        notes=[f"the mean of {len(results)} runs"], pass_bar=first.pass_bar,
    )

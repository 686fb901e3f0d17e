"""The cross-model scorecard: per model → per task → metric aggregates, final scores, cost."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .core.metrics import MetricSpec
from .core.results import Rating, TaskResult, plain
from .ranking import rank
from .registry import Registry, default_registry
from .runs import RunStats, bracketed_rating, run_stats
from .stats import (
    Interval,
    around,
    bootstrap_mean,
    bootstrap_ratio,
    bootstrap_weighted,
)
from .tasks.benchmark_specs import BENCHMARK_IDS, BENCHMARK_SPECS

FINAL_WEIGHTS_A = {"qa": 0.25, "entity": 0.20, "text": 0.15, "translation": 0.10,
                   "benchmarks": 0.30}
FINAL_WEIGHTS_B = {"qa": 0.35, "entity": 0.30, "text": 0.20, "translation": 0.15}
UNNAMED_MODEL = "(model)"


@dataclass
class MetricAggregate:
    value: float | None
    rating: Rating | None
    blocker: bool
    scored_cases: int
    flagged: int = 0
    judge_errors: int = 0
    # The 95 % bootstrap interval of ``value`` over cases (stats.py).
    interval: Interval | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"value": plain(self.value), "rating": self.rating, "blocker": self.blocker,
                "scored_cases": self.scored_cases, "flagged": self.flagged,
                "judge_errors": self.judge_errors, "interval": plain(self.interval)}


@dataclass
class TaskAggregate:
    task: str
    score: float | None
    cases: int
    invalid_cases: int
    blocked_cases: int
    disqualified: bool
    metrics: dict[str, MetricAggregate]
    not_scored: list[str]
    renormalised_cases: int
    # Cases left out of the task score because the judge could not score them.
    judge_error_cases: int = 0
    # Cases left out of the task score because none of their metrics could be scored (none
    # applies, or the judge cannot estimate any): not a judge error, not a model failure.
    unscored_cases: int = 0
    # Cases not known to be blocked whose blocker metric could not be decided (the judge could
    # not score it, or its code raised): each may or may not have been blocked.
    blocker_unknown_cases: int = 0
    unknown_blockers: list[str] = field(default_factory=list)
    # Of those, the cases whose test errored, those without an output: not among ``cases``.
    errored_cases: int = 0
    no_output_cases: int = 0
    # Not disqualified by the cases known to be blocked, but the undecided ones could tip it.
    disqualification_unknown: bool = False
    interval: Interval | None = None
    # The score of each case (runs averaged), what the interval resamples.
    case_scores: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": plain(self.score), "interval": plain(self.interval), "cases": self.cases,
            "invalid_cases": self.invalid_cases, "blocked_cases": self.blocked_cases,
            "judge_error_cases": self.judge_error_cases,
            "unscored_cases": self.unscored_cases,
            "blocker_unknown_cases": self.blocker_unknown_cases,
            "unknown_blockers": list(self.unknown_blockers),
            "errored_cases": self.errored_cases, "no_output_cases": self.no_output_cases,
            "disqualified": self.disqualified,
            "disqualification_unknown": self.disqualification_unknown,
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
            "not_scored": self.not_scored, "renormalised_cases": self.renormalised_cases,
        }


@dataclass
class ModelCard:
    model: str
    tasks: dict[str, TaskAggregate]
    benchmarks: dict[str, dict[str, Any]]
    benchmark_score: float | None
    final_score_a: float | None
    final_score_b: float | None
    missing_tasks: list[str]
    cost_per_1000_calls: float | None
    # Whether a blocker fired in any case, disqualifying or within the tolerance; None when
    # none is known to have, but a case's blocker could not be decided.
    any_blocker: bool | None
    # Whether a task disqualifies the model (more blocked cases than the tolerance), what the
    # rank reads; None when none is known to, but one's disqualification is unknown.
    disqualified: bool | None
    usage: dict[str, float]
    cost_efficiency: float | None = None
    cost_adjusted_rank: int | None = None
    final_interval_a: Interval | None = None
    final_interval_b: Interval | None = None
    # The interval of what the rank compares (cost efficiency, or the final score), and the
    # models whose interval overlaps it: a tie the cases cannot break.
    rank_interval: Interval | None = None
    rank_ties: list[str] = field(default_factory=list)
    # Results without a cost beside others with one: the cost per 1000 calls is unknown.
    uncosted_results: int = 0
    # Repeated runs: each (task/case) with test outcomes per run, and what they say.
    run_stats: dict[str, RunStats] = field(default_factory=dict)
    # The final-score tasks (and "benchmarks") the judge could not score in full, or with a
    # case whose test errored or that has no output: the final scores that weigh them are
    # unknown, not renormalised around the gap.
    incomplete_tasks: list[str] = field(default_factory=list)
    # The tasks with a case whose test errored, and those with a case without an output,
    # final-score tasks or not (and "benchmarks" when that leaves the Benchmark Score
    # unknown): the notes say which it was.
    errored_tasks: list[str] = field(default_factory=list)
    no_output_tasks: list[str] = field(default_factory=list)

    def gap_causes(self, gaps: list[str]) -> tuple[list[str], list[str], list[str]]:
        """``gaps`` (incomplete tasks) split by what left them so (:func:`gap_causes`)."""
        return gap_causes(gaps, self.errored_tasks, self.no_output_tasks)

    def runs_summary(self) -> dict[str, Any] | None:
        """Pass rate, pass^k and pass@k over the cases run more than once (means over
        cases), the flaky cases; None without repeated runs. pass^k and pass@k are of one
        k, the fewest known runs of a case, each case's estimated from all its known runs:
        a case with a run of unknown outcome averaged in at its own, smaller k mixed two
        figures under the one k the report named."""
        stats = self.run_stats
        if not stats:
            return None
        n = len(stats)
        k = min(s.runs for s in stats.values())
        return {
            "runs": max(s.runs for s in stats.values()),
            "k": k,
            "cases": n,
            "pass_rate": sum(s.pass_rate for s in stats.values()) / n,
            "pass_hat_k": sum(s.pass_hat_k(k) for s in stats.values()) / n,
            "pass_at_k": sum(s.pass_at_k(k) for s in stats.values()) / n,
            "flaky": sorted(key for key, s in stats.items() if s.flaky),
        }

    def gap_fields(self) -> dict[str, list[str]]:
        """The tasks the model's final scores lack or leave unknown, and why: one list each,
        as every report of the card writes them."""
        return {"missing_tasks": list(self.missing_tasks),
                "incomplete_tasks": list(self.incomplete_tasks),
                "errored_tasks": list(self.errored_tasks),
                "no_output_tasks": list(self.no_output_tasks)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": {k: v.to_dict() for k, v in self.tasks.items()},
            "benchmarks": plain(self.benchmarks),
            "benchmark_score": plain(self.benchmark_score),
            "final_score_a": plain(self.final_score_a),
            "final_score_b": plain(self.final_score_b),
            **self.gap_fields(),
            "cost_per_1000_calls": plain(self.cost_per_1000_calls),
            "cost_efficiency": plain(self.cost_efficiency),
            "cost_adjusted_rank": self.cost_adjusted_rank,
            "any_blocker": self.any_blocker,
            "disqualified": self.disqualified,
            "usage": plain(self.usage),
            "final_interval_a": plain(self.final_interval_a),
            "final_interval_b": plain(self.final_interval_b),
            "rank_interval": plain(self.rank_interval),
            "rank_ties": list(self.rank_ties),
            **({"runs": plain(runs)} if (runs := self.runs_summary()) is not None else {}),
        }


@dataclass
class Scorecard:
    models: dict[str, ModelCard]
    task_order: list[str]
    results: list[TaskResult]
    registry: Registry
    rank_basis: str = "final_score_b"
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": {name: card.to_dict() for name, card in self.models.items()},
            "rank_basis": self.rank_basis,
            "notes": list(self.notes),
        }

    def specs(self, task: str) -> list[MetricSpec]:
        return self.registry.metrics_for(task)


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return sum(items) / len(items) if items else None


def _aggregate_metric(spec: MetricSpec, results: list[TaskResult],
                      case_groups: Mapping[str, list[TaskResult]], *,
                      interval_wanted: bool = True) -> MetricAggregate | None:
    entries = [r.metrics[spec.id] for r in results if spec.id in r.metrics]
    if not entries:
        return None
    scored = [m for m in entries if m.scored and m.value is not None]
    blocker = any(m.blocker for m in entries)
    # Counted by case, as the task's cases are: under --callqa-runs a count of runs read as
    # three times the cases. A case is scored when some run scored it (its value is the
    # mean of those runs), flagged or a judge error when some run was.
    by_case = [[m for r in runs if (m := r.metrics.get(spec.id)) is not None]
               for runs in case_groups.values()]
    scored_cases = sum(1 for ms in by_case if any(m.scored and m.value is not None for m in ms))
    flagged = sum(1 for ms in by_case if any(m.flagged for m in ms))
    judge_errors = sum(1 for ms in by_case if any(m.judge_error for m in ms))
    interval: Interval | None
    # A rate some cases know only from below (a garbled turn rate beside turn scores the
    # judge did not give) is known only from below over the cases too: over every case,
    # decided or not, it fails when that fails, and is otherwise unknown. Over the decided
    # cases alone — those already failing — it was neither.
    if any(m.details.get("lower_bound") is True for m in entries):
        lowest = _lowest(spec, case_groups)
        # Failed only under every bar the cases set (their own, a conversation's threshold).
        bars = [m.details.get("bound_limit") for m in entries
                if m.details.get("lower_bound") is True]
        rated = None if lowest is None or not all(
            isinstance(bar, (int, float)) and lowest >= bar for bar in bars) \
            else bracketed_rating(spec, scored, lowest)
        value = lowest if rated in ("fail", "blocker") else None
        interval = None
    elif spec.aggregate == "pooled":
        num = sum(float(m.details.get("numerator", 0)) for m in scored)
        den = sum(float(m.details.get("denominator", 0)) for m in scored)
        value = num / den if den else None
        # Resampled by case: each case's runs pooled together, as the value pools them.
        nums, dens = [], []
        for runs in case_groups.values():
            pooled = [r.metrics[spec.id] for r in runs if spec.id in r.metrics
                      and r.metrics[spec.id].scored and r.metrics[spec.id].value is not None]
            if pooled:
                nums.append(sum(float(m.details.get("numerator", 0)) for m in pooled))
                dens.append(sum(float(m.details.get("denominator", 0)) for m in pooled))
        interval = around(bootstrap_ratio(nums, dens), value) if interval_wanted else None
    else:
        per_case = []
        for runs in case_groups.values():
            values = [r.metrics[spec.id].value for r in runs
                      if spec.id in r.metrics and r.metrics[spec.id].scored]
            case_value = _mean(v for v in values if v is not None)
            if case_value is not None:
                per_case.append(case_value)
        value = _mean(per_case)
        interval = around(bootstrap_mean(per_case), value) if interval_wanted else None
    # A case rated by bands of its own (its threshold) is rated so in the aggregate too.
    rating: Rating | None = "blocker" if blocker else (
        None if value is None else bracketed_rating(spec, scored, value))
    return MetricAggregate(value=value, rating=rating, blocker=blocker,
                           scored_cases=scored_cases, flagged=flagged, judge_errors=judge_errors,
                           interval=interval)


def _lowest(spec: MetricSpec, case_groups: Mapping[str, list[TaskResult]]) -> float | None:
    """The lowest a rate could be over the cases, some of which know it only from below:
    each run counts at its counts (numerator over denominator — an exact rate's or a
    bound's; without any, 0 of 0, a rate of 0), a case's runs averaged, or pooled for a
    pooled rate, as the exact rate's would be."""
    counts = [[(float(m.details.get("numerator", 0)), float(m.details.get("denominator", 0)))
               for r in runs if (m := r.metrics.get(spec.id)) is not None]
              for runs in case_groups.values()]
    counts = [case for case in counts if case]
    if spec.aggregate == "pooled":
        den = sum(d for case in counts for _, d in case)
        return sum(n for case in counts for n, _ in case) / den if den else None
    return _mean(sum(n / d if d else 0.0 for n, d in case) / len(case) for case in counts)


def _consistency(case_groups: Mapping[str, list[TaskResult]]) -> tuple[float | None, int]:
    values = []
    for runs in case_groups.values():
        # A run whose score the judge left unknown is left out, as from the task score (it
        # counted 0, so one judge error failed the benchmark); two scorable runs are needed.
        # A copy of run 1 samples nothing: counted, recorded outputs under the offline judge
        # scored a Consistency of 1 that lifted Final Score A.
        known = [r for r in runs if not r.score_unknown and not r.copied_run]
        if len(known) < 2:
            continue
        scores = [r.score if r.valid and r.score is not None else 0.0 for r in known]
        mean = sum(scores) / len(scores)
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
        values.append((1.0 if std == 0 else 0.0) if mean == 0 else max(0.0, 1 - std / mean))
    return _mean(values), len(values)


def _weighted(scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    present = [(value, w) for k, w in weights.items() if (value := scores.get(k)) is not None]
    total = sum(w for _, w in present)
    if not total:
        return None
    return sum(value * w for value, w in present) / total


def gap_causes(gaps: Sequence[str], errored: Collection[str], no_output: Collection[str]
               ) -> tuple[list[str], list[str], list[str]]:
    """``gaps`` (incomplete tasks) split by what left them so: the judge, a test that errored
    (``errored``: the tasks with such a test), a case without an output (``no_output``)."""
    return ([t for t in gaps if t not in errored and t not in no_output],
            [t for t in gaps if t in errored], [t for t in gaps if t in no_output])


def build_scorecard(
    results: Iterable[TaskResult],
    *,
    registry: Registry | None = None,
    disqualify_tolerance: int = 0,
    errored: Iterable[tuple[str, str, str]] = (),
    no_output: Iterable[tuple[str, str, str]] = (),
) -> Scorecard:
    """Aggregate results of many models and cases (any order) into a scorecard.

    A model's figure for a metric is the mean over its cases (runs of one case are averaged
    first), except pooled rates. An invalid case counts 0.0 in the task score; a case whose
    score the judge left unknown (a judge error) is left out of it and counted apart. A task is
    disqualified when more than ``disqualify_tolerance`` of its cases are blocked, and its
    disqualification is unknown when the cases whose blocker could not be decided could tip
    it. A final score weighing a task (or benchmark criterion) with judge errors is unknown,
    not renormalised around them; a model whose rank rests on something unknown is not ranked.
    ``errored`` names the (model, task, case id) pairs whose test errored, which have no
    result: left out of the task score, they leave the final scores that weigh their task
    unknown, and their cases count as cases whose blocker could not be decided. ``no_output``
    names the pairs without an output, counted so too: a missing output is not a pass. A task,
    or a model, with nothing but such pairs is kept, its scores unknown.
    """
    registry = registry or default_registry()
    ordered = sorted(results, key=lambda r: (r.model or UNNAMED_MODEL, r.task, r.case_id, r.run))
    by_model: dict[str, list[TaskResult]] = defaultdict(list)
    for result in ordered:
        by_model[result.model or UNNAMED_MODEL].append(result)
    # Per model, the cases of each task whose test errored, and those without an output.
    lost: dict[str, tuple[Counter[str], Counter[str]]] = defaultdict(lambda: (Counter(), Counter()))
    for cause, pairs in enumerate((errored, no_output)):
        for model, task, _ in set(pairs):
            lost[model][cause][task] += 1
    # A task no result has is shown too when a pair of it was lost: its scores are unknown.
    run_tasks = {r.task for r in ordered} | {t for m in lost.values() for c in m for t in c}
    task_order = [t for t in registry.tasks if t in run_tasks]
    task_order += sorted(run_tasks - set(task_order))
    scored = {name: _model_card(name, by_model[name], registry, disqualify_tolerance,
                                *lost[name]) for name in by_model}
    # A model every pair of which errored or has no output has a card too: its column reads
    # unknown, where leaving it out would rank the others as if it had never run. Its call
    # tasks would have had the benchmarks the others' had.
    benchmarked = any(b["passed"] is not None for c in scored.values()
                      for b in c.benchmarks.values())
    models = {name: scored[name] if name in scored else _model_card(
        name, [], registry, disqualify_tolerance, *lost[name], benchmarked=benchmarked)
        for name in sorted(scored.keys() | lost.keys())}
    card = Scorecard(models=models, task_order=task_order, results=ordered, registry=registry)
    card.notes.extend(
        f"{c.model}: cost unknown: {c.uncosted_results} of its {len(by_model[c.model])} "
        "results have no cost (their outputs came without both token counts)"
        for c in models.values() if c.uncosted_results)
    rank(card)
    return card


def _model_card(name: str, results: list[TaskResult], registry: Registry, tolerance: int,
                errored: Counter[str], no_output: Counter[str], *,
                benchmarked: bool = False) -> ModelCard:
    """``benchmarked``: the cases lost would have had benchmarks, the results' having none."""
    # The cases with no result, whatever kept it away: each may have been blocked.
    lost = errored + no_output
    tasks: dict[str, TaskAggregate] = {}
    all_groups: dict[str, list[TaskResult]] = defaultdict(list)
    unknown_scores: set[str] = set()
    # A task every case of which errored or has no output is kept, its score unknown.
    for task in sorted({r.task for r in results} | lost.keys()):
        task_results = [r for r in results if r.task == task]
        groups: dict[str, list[TaskResult]] = defaultdict(list)
        for r in task_results:
            groups[r.case_id].append(r)
            all_groups[f"{task}/{r.case_id}"].append(r)
        # A run whose score is unknown (the judge could not score it, or none of its
        # metrics could be scored) counts neither 0 (a model failure) nor anything else: it
        # is left out, and counted apart.
        case_scores = [
            _mean(r.score if r.valid and r.score is not None else 0.0 for r in known) or 0.0
            for runs in groups.values()
            if (known := [r for r in runs if not r.score_unknown])
        ]
        metrics = {}
        specs = registry.metrics_for(task) if task in registry.tasks else []
        for spec in specs:
            agg = _aggregate_metric(spec, task_results, groups)
            if agg is not None:
                metrics[spec.id] = agg
        blocked = sum(1 for runs in groups.values() if any(r.blocked for r in runs))
        undecided = [ids for runs in groups.values() if not any(r.blocked for r in runs)
                     and (ids := {mid for r in runs for mid in _unknown_blockers(r)})]
        # A case without a result may have been blocked, and its score is not known.
        undecided_cases = len(undecided) + lost[task]
        if any(r.incomplete for r in task_results) or lost[task]:
            unknown_scores.add(task)
        tasks[task] = TaskAggregate(
            task=task,
            score=_mean(case_scores),
            cases=len(groups),
            invalid_cases=sum(1 for runs in groups.values() if any(not r.valid for r in runs)),
            blocked_cases=blocked,
            disqualified=blocked > tolerance,
            metrics=metrics,
            not_scored=sorted(k for k, v in metrics.items() if v.value is None),
            renormalised_cases=sum(1 for r in task_results if r.renormalised),
            # A judge error outside the task score (a benchmark, a supplementary metric)
            # leaves out nothing: it is counted on its metric.
            judge_error_cases=sum(1 for runs in groups.values()
                                  if any(r.incomplete for r in runs)),
            unscored_cases=sum(1 for runs in groups.values()
                               if not any(r.incomplete for r in runs)
                               and any(r.score_unknown for r in runs)),
            blocker_unknown_cases=undecided_cases,
            unknown_blockers=sorted({mid for ids in undecided for mid in ids}),
            errored_cases=errored[task], no_output_cases=no_output[task],
            disqualification_unknown=blocked <= tolerance < blocked + undecided_cases,
            interval=around(bootstrap_mean(case_scores), _mean(case_scores)),
            case_scores=case_scores,
        )

    benchmarks: dict[str, dict[str, Any]] = {}
    repeated = any(len(runs) > 1 for runs in all_groups.values())
    for metric_id in BENCHMARK_IDS:
        spec = BENCHMARK_SPECS[metric_id]
        if metric_id == "consistency":
            # Shown when benchmarks ran or cases were repeated; otherwise there is no Layer 2.
            if not benchmarks and not repeated:
                continue
            value, n = _consistency(all_groups)
            agg = MetricAggregate(value, spec.rate(value), False, n)
        else:
            # A criterion is shown by value and verdict alone: its interval, resampled over
            # all of a model's cases (tens of thousands in a large suite), would be thrown
            # away.
            found = _aggregate_metric(spec, results, all_groups, interval_wanted=False)
            if found is None:
                continue
            agg = found
        benchmarks[metric_id] = {
            "value": agg.value,
            "passed": None if agg.value is None or spec.bands is None
            else spec.bands.passes(agg.value),
            "scored_cases": agg.scored_cases,
            "judge_errors": agg.judge_errors,
        }
    evaluated = [b for b in benchmarks.values() if b["passed"] is not None]
    has_call_tasks = any(t in FINAL_WEIGHTS_B for t in tasks)
    # A criterion with judge errors leaves the benchmark score unknown: counting it on the
    # cases left, or leaving it out, would let a failure of the judge move the score.
    benchmarked = benchmarked or bool(evaluated)
    lost_call_task = benchmarked and any(t in FINAL_WEIGHTS_B for t in lost)
    benchmark_gap = has_call_tasks and (any(b["judge_errors"] for b in benchmarks.values())
                                        or lost_call_task)
    benchmark_score = (sum(1 for b in evaluated if b["passed"]) / len(evaluated)
                       if evaluated and has_call_tasks and not benchmark_gap else None)

    task_scores: dict[str, float | None] = {t: a.score for t, a in tasks.items()}
    task_scores["benchmarks"] = benchmark_score
    # A final score over a task the judge left partly unscored would present the other
    # tasks' (or cases') figure as the model's: it is unknown instead, not renormalised.
    gaps = [t for t in FINAL_WEIGHTS_B if t in unknown_scores]
    final_b = None if gaps else _weighted(task_scores, FINAL_WEIGHTS_B)
    final_a = (_weighted(task_scores, FINAL_WEIGHTS_A)
               if benchmark_score is not None and not gaps else None)
    interval_b = None if gaps else around(bootstrap_weighted(
        [(tasks[t].case_scores, w) for t, w in FINAL_WEIGHTS_B.items() if t in tasks]), final_b)
    interval_a = None if benchmark_score is None or gaps else around(bootstrap_weighted(
        [(tasks[t].case_scores, w) for t, w in FINAL_WEIGHTS_A.items() if t in tasks],
        fixed=[(benchmark_score, FINAL_WEIGHTS_A["benchmarks"])]), final_a)
    missing = [t for t in FINAL_WEIGHTS_B if t not in tasks]

    usage: dict[str, float] = defaultdict(float)
    costs = []
    for r in results:
        for key, amount in r.usage.items():
            usage[key] += amount
        if "cost_usd" in r.usage:
            costs.append(r.usage["cost_usd"])
    # The mean over the costed results alone would be shown, and ranked, as the model's cost.
    uncosted = len(results) - len(costs) if costs else 0
    cost_per_1000 = sum(costs) / len(costs) * 1000 if costs and not uncosted else None
    return ModelCard(
        model=name, tasks=tasks, benchmarks=benchmarks, benchmark_score=benchmark_score,
        final_score_a=final_a, final_score_b=final_b,
        missing_tasks=missing if has_call_tasks else [],
        cost_per_1000_calls=cost_per_1000,
        uncosted_results=uncosted,
        any_blocker=known_any((a.blocked_cases > 0, a.blocker_unknown_cases > 0)
                               for a in tasks.values()),
        disqualified=known_any((a.disqualified, a.disqualification_unknown)
                                for a in tasks.values()),
        usage=dict(usage),
        final_interval_a=interval_a, final_interval_b=interval_b,
        run_stats=_run_stats(all_groups),
        incomplete_tasks=gaps + (["benchmarks"] if benchmark_gap else []),
        errored_tasks=_cause_tasks(errored, has_call_tasks and benchmarked),
        no_output_tasks=_cause_tasks(no_output, has_call_tasks and benchmarked),
    )


def _cause_tasks(lost: Counter[str], benchmarks: bool) -> list[str]:
    """The tasks with a case ``lost`` counts, final-score tasks first, and "benchmarks"
    when ``benchmarks`` were evaluated and a final-score task is among them."""
    return (sorted(lost, key=lambda t: (t not in FINAL_WEIGHTS_B, t))
            + (["benchmarks"] if benchmarks and any(t in FINAL_WEIGHTS_B for t in lost) else []))


def _unknown_blockers(result: TaskResult) -> list[str]:
    """The blocker metrics of ``result`` that may or may not have fired, as
    ``assert_no_blockers`` reads them: the judge could not score them, their code raised, or
    no estimate of them was made (the evaluation marks a blocker's unknown result
    ``blocker_metric``)."""
    return [mid for mid, m in result.metrics.items()
            if m.details.get("blocker_metric") and not m.scored]


def known_any(facts: Iterable[tuple[bool, bool]]) -> bool | None:
    """Whether any of ``facts`` (each: known true, or unknown) holds: None when none is
    known to, but one is unknown."""
    found = list(facts)
    if any(known for known, _ in found):
        return True
    return None if any(unknown for _, unknown in found) else False


def _run_stats(groups: Mapping[str, list[TaskResult]]) -> dict[str, RunStats]:
    """The run outcomes of each case run more than once (results without an outcome are
    runs of a single-run session; a copy of run 1 samples nothing and counts for none)."""
    found = {}
    for key, runs in groups.items():
        outcomes = [r.passed for r in runs if r.passed is not None and not r.copied_run]
        if len(outcomes) > 1:
            found[key] = run_stats(outcomes)
    return found

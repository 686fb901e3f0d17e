"""The baseline gate's reading of a report (schema ``callqa-report/1``): its metric
definitions, as the gate compares them (direction, pooling, tolerance, and which of the
judge and the embedder their figures depend on), and its cases: each
(model, task, case) with its runs averaged as the scorecard averages them — the task score,
the metric values and pooled counts, the blockers that fired — and what a failure of the tool
left undecided in it: the metrics a judge error left unscored, the blocker metrics whose
verdict is unknown (the judge could not score them, a project's metric code raised, or no
estimate of them was made, as the scorecard counts them), and the pairs the report did not
evaluate because their test errored or they had no output.

Plain report dicts in, plain values out; no library loads (but the definitions of the
built-in metrics, for a report older than what the gate reads of them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engine.core.metrics import DISABLED_THRESHOLD, TASK_SCORE_ID
from ..engine.core.results import NOT_APPLICABLE
from .gaps import (
    CATALOGUE_CASES,
    SUITE_NARROWING,
    asked_selection,
    narrowed_selection,
    unread_case_files,
)

CaseKey = tuple[str, str, str]  # (model, task, case_id)

# The "task" under which the gate compares a model's Layer 2 criteria: each is scored on the
# cases of several tasks.
BENCHMARKS = "benchmarks"
# What a metric's figures may depend on beyond the outputs, as the report's run names them:
# with another one than the baseline's, a change of them is not the model's.
JUDGE, EMBEDDER = "judge", "embeddings"
# What a metric's definition (its ``source``) says it depends on; a definition that does not
# say (an older report, or a source the gate does not know) may depend on either.
_TOOLS = {"programmatic": frozenset(), "judge": frozenset({JUDGE}),
          "judge+programmatic": frozenset({JUDGE}), "embedding": frozenset({EMBEDDER})}
EITHER = frozenset({JUDGE, EMBEDDER})


@dataclass(frozen=True)
class Spec:
    """What the gate reads of a metric's definition."""

    higher_is_better: bool
    pooled: bool
    scale: str | None
    # The drop the run's policy allows the metric, in its own units (None: the default).
    tolerance: float | None
    blocker: bool = False
    # Weighted into the task score (a definition that does not say is taken to be).
    weighted: bool = True
    percent: bool = False  # shown in percent, as the scorecard shows it
    disabled: bool = False  # by the run's policy: no bands, so no direction; not gated
    # Which of the judge and the embedder its figures depend on (``_TOOLS``).
    tools: frozenset[str] = EITHER


def read_specs(report: Mapping[str, Any]) -> dict[tuple[str, str], Spec]:
    """Every metric definition of ``report``, by (task, metric id)."""
    found: dict[tuple[str, str], Spec] = {}
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
            found[(task, spec["id"])] = Spec(higher, pooled, spec.get("scale"),
                                             spec.get("regression_tolerance"),
                                             spec.get("blocker") is True,
                                             spec.get("weight", 1) is not None,
                                             spec.get("percent") is True,
                                             spec.get("threshold") == DISABLED_THRESHOLD,
                                             _TOOLS.get(str(spec.get("source")), EITHER))
    return found


def benchmark_specs() -> dict[tuple[str, str], Spec]:
    """The Layer 2 criteria as metrics of a task of their own, :data:`BENCHMARKS`."""
    # Definitions alone (no task family): loaded with the gate.
    from ..engine.tasks.benchmark_specs import BENCHMARK_SPECS

    return {(BENCHMARKS, bid): Spec(spec.bands.higher_is_better if spec.bands else True,
                                    spec.aggregate == "pooled", spec.scale, None,
                                    weighted=False, percent=spec.percent,
                                    tools=_TOOLS.get(spec.source, EITHER))
            for bid, spec in BENCHMARK_SPECS.items()}


def _builtin_pooled() -> dict[tuple[str, str], bool]:
    """Which built-in metrics are pooled, for a report whose metric definitions do not say."""
    # The registry loads the task families (pydantic): only for such older reports.
    from ..engine.registry import default_registry

    registry = default_registry()
    return {(task, spec.id): spec.aggregate == "pooled"
            for task in registry.tasks for spec in registry.metrics_for(task)}


# Why a comparison could not be made, in the gate's words (its "incomplete" entries' reason).
JUDGE_ERRORS = "judge errors"
CODE_ERRORS = "metric code errors"
NOT_ESTIMATED = "metrics not estimated"
# A metric the baseline scored on a case and this run has no value for.
NOT_SCORED_NOW = "metrics not scored"
TEST_ERRORS = "test errors"
# A Layer 2 benchmark the baseline scored, in a run with the benchmarks switched off.
BENCHMARKS_OFF = "benchmarks off"
NO_OUTPUT = "no output"
# Every case only the baseline has, in a run that could not read a case file: which cases the
# file held, no report says (the baseline records no case's file).
INVALID_CASE_FILES = "invalid case files"
# Every case only the baseline has, in a run that stopped early (-x, Ctrl-C, crashed workers):
# its tests may never have run.
STOPPED_EARLY = "run stopped early"
# A case only the baseline has that is still in the run's catalogue, or, in a report that
# lists no catalogue, every such case of a run narrowed to part of the suite (-k, --deselect,
# node ids, --lf, an -m narrower than eval): its tests were not selected.
NOT_SELECTED = "not selected"
# Every case only the baseline has, in a run configured with another cases directory than the
# baseline's (the ini file's callqa_cases): which of them lie outside it, no report says.
CASES_MOVED = "another cases directory"
# Every case only this run has, when the baseline was itself a partial run: which of them it
# evaluated no report says, so they are not evaluated, not added — its run could not read a
# case file, stopped early, was narrowed to part of the suite, or is one shard's.
BASELINE_INVALID_CASE_FILES = "invalid case files in the baseline"
BASELINE_STOPPED_EARLY = "baseline stopped early"
BASELINE_NOT_SELECTED = "not selected in the baseline"
BASELINE_SHARD = "baseline of one shard"
_IN_BASELINE = {INVALID_CASE_FILES: BASELINE_INVALID_CASE_FILES,
                STOPPED_EARLY: BASELINE_STOPPED_EARLY, NOT_SELECTED: BASELINE_NOT_SELECTED}
# A check whose figures depend on a judge or an embedder other than the baseline's: a change
# of them may be the tool's, not the model's.
OTHER_TOOL = {JUDGE: "another judge than the baseline's",
              EMBEDDER: "another embedder than the baseline's"}
# Those that leave a blocker verdict undecided, in the order the gate names them.
UNDECIDED_CAUSES = (JUDGE_ERRORS, CODE_ERRORS, NOT_ESTIMATED, TEST_ERRORS, NO_OUTPUT)
# The not_evaluated entries of pairs left without a result, by kind, and why in those words.
_UNEVALUATED = {"test_error": TEST_ERRORS, "missing_output": NO_OUTPUT}


@dataclass
class Case:
    """One (model, task, case) of a report, its runs averaged as the scorecard does."""

    score: float | None = None
    # Whether a judge error left a run's task score unknown (the scorecard leaves it out).
    score_unknown: bool = False
    metrics: dict[str, float] = field(default_factory=dict)
    counts: dict[str, tuple[float, float]] = field(default_factory=dict)
    blockers: set[str] = field(default_factory=set)
    # The metrics a judge error left unscored in any run, and those of them that could block.
    judge_errors: set[str] = field(default_factory=set)
    blocker_metrics: set[str] = field(default_factory=set)
    # The blocker metrics whose (custom) code raised in any run: no value, so whether they
    # fired is unknown. Not judge errors: the task score and the metric values stand.
    raised_blockers: set[str] = field(default_factory=set)
    # The blocker metrics left without an estimate in any run (the judge cannot make one, a
    # custom metric returned none): whether they fired is unknown too.
    unestimated_blockers: set[str] = field(default_factory=set)
    # The metrics that do not apply to the case in some run (no matched pair to compare, no
    # fact stated): no value, and none missing.
    not_applicable: set[str] = field(default_factory=set)
    # Whether a metric of it matched items by the run's embedder (an extraction case's
    # ``similarity: embedding``): its figures then depend on the embedder whatever their
    # definition's source says.
    embedded: bool = False

    def undecided_by(self, metric: str) -> set[str]:
        """What left ``metric`` unknown in this case (``JUDGE_ERRORS``, ``CODE_ERRORS``,
        ``NOT_ESTIMATED``)."""
        return ({JUDGE_ERRORS} if metric in self.judge_errors else set()) | (
            {CODE_ERRORS} if metric in self.raised_blockers else set()) | (
            {NOT_ESTIMATED} if metric in self.unestimated_blockers else set())


def per_case(cases: Mapping[CaseKey, Case], keys: list[CaseKey],
             metric: str) -> dict[CaseKey, float]:
    """The value of ``metric`` (``score``: the task score) in each case of ``keys`` that has
    one."""
    if metric == TASK_SCORE_ID:
        return {k: s for k in keys if (s := cases[k].score) is not None}
    return {k: cases[k].metrics[metric] for k in keys if metric in cases[k].metrics}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _judge_errors(entry: Mapping[str, Any], item: Case) -> set[str]:
    """The metrics of one run a judge error left unscored: those its entry lists and those
    marked so (the blocker metrics among them noted on ``item``)."""
    errors = {str(m) for m in entry.get("judge_errors") or ()}
    for mid, metric in entry["metrics"].items():
        if isinstance(metric, dict) and metric.get("judge_error") is True:
            errors.add(mid)
            if (metric.get("details") or {}).get("blocker_metric") is True:
                item.blocker_metrics.add(mid)
    return errors


def _raised_blockers(entry: Mapping[str, Any]) -> set[str]:
    """The blocker metrics of one run whose code raised: the evaluation marks the result of
    a custom metric that raised ``raised``, and ``blocker_metric`` when it could block."""
    found = set()
    for mid, metric in entry["metrics"].items():
        details = (metric.get("details") or {}) if isinstance(metric, dict) else {}
        if "raised" in details and details.get("blocker_metric") is True:
            found.add(mid)
    return found


def _unestimated_blockers(entry: Mapping[str, Any]) -> set[str]:
    """The blocker metrics of one run the evaluation marks ``blocker_metric`` for no judge
    error and no code error: no estimate of them was made."""
    found = set()
    for mid, metric in entry["metrics"].items():
        details = (metric.get("details") or {}) if isinstance(metric, dict) else {}
        if details.get("blocker_metric") is True and metric.get("scored") is False \
                and metric.get("judge_error") is not True and "raised" not in details:
            found.add(mid)
    return found


def read_cases(report: Mapping[str, Any]) -> dict[CaseKey, Case]:
    """Every (model, task, case) of ``report``'s case entries, its runs averaged."""
    runs: dict[CaseKey, list[dict[str, Any]]] = defaultdict(list)
    for case in report["cases"]:
        runs[(case["model"], case["task"], case["case_id"])].append(case)
    found: dict[CaseKey, Case] = {}
    for key, entries in runs.items():
        item = Case()
        scores = []
        for entry in entries:
            errors = _judge_errors(entry, item)
            item.judge_errors |= errors
            valid = entry.get("valid", True)
            if valid and entry.get("score") is None:
                # Unknown, left out of the task score as on the scorecard: the judge could
                # not score a metric of it, or none of its metrics could be scored.
                item.score_unknown = item.score_unknown or bool(errors)
                continue
            # An invalid output counts 0 in the task score, as on the scorecard.
            scores.append(float(entry["score"]) if valid and entry.get("score") is not None
                          else 0.0)
        item.score = _mean(scores)
        values: dict[str, list[float]] = defaultdict(list)
        counts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for entry in entries:
            item.blockers.update(str(b) for b in entry.get("blockers") or ())
            item.raised_blockers |= _raised_blockers(entry)
            item.unestimated_blockers |= _unestimated_blockers(entry)
            item.not_applicable |= {
                mid for mid, m in entry["metrics"].items() if isinstance(m, dict)
                and m.get("scored") is False and str(m.get("reason") or "").startswith(
                    NOT_APPLICABLE)}
            for mid, metric in entry["metrics"].items():
                value = metric.get("value") if isinstance(metric, dict) else None
                if value is None or not metric.get("scored", True):
                    continue
                values[mid].append(float(value))
                details = metric.get("details") or {}
                item.embedded = item.embedded or details.get("similarity") == "embedding"
                if "numerator" in details and "denominator" in details:
                    counts[mid][0] += float(details["numerator"])
                    counts[mid][1] += float(details["denominator"])
        item.metrics = {mid: v for mid, vs in values.items() if (v := _mean(vs)) is not None}
        item.counts = {mid: (num, den) for mid, (num, den) in counts.items()}
        found[key] = item
    return found


def unevaluated_pairs(report: Mapping[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """The (model, case) pairs the report lists as not evaluated for want of a result, each
    with its task (empty when an older entry does not name it) and why: ``TEST_ERRORS`` (a
    generation or a judge call that failed, an outputs file it could not use) or
    ``NO_OUTPUT`` (none recorded, or the budget stopped its generation). The scorecard counts
    either as a case of unknown result: the gate reads neither as a pass nor as a removal."""
    return {(e["model"], e["case_id"]): (str(e.get("task") or ""), _UNEVALUATED[e["kind"]])
            for e in report.get("not_evaluated") or ()
            if isinstance(e, Mapping) and e.get("kind") in _UNEVALUATED}


def unreached(report: Mapping[str, Any], baseline: Mapping[str, Any],
              only_baseline: set[CaseKey]) -> tuple[dict[CaseKey, str], dict[str, str]]:
    """Of ``only_baseline`` (cases ``baseline`` has and ``report`` has not), those that may
    never have been evaluated in it, each with why in the gate's words, and what names each
    cause (the case files it could not read, why it stopped early, what narrowed its
    selection): the others were removed. A run that could not read a case file or stopped
    early may have missed any of them; otherwise those still in its catalogue were not
    selected (:func:`not_selected`)."""
    causes = _blanket(report, baseline)
    if causes:
        return _all_of(only_baseline, causes)
    unselected, detail = not_selected(report, baseline, only_baseline)
    return dict.fromkeys(unselected, NOT_SELECTED), {NOT_SELECTED: detail}


def unreached_in_baseline(report: Mapping[str, Any], baseline: Mapping[str, Any],
                          only_run: set[CaseKey]) -> tuple[dict[CaseKey, str], dict[str, str]]:
    """Of ``only_run`` (cases ``report`` has and ``baseline`` has not), those the baseline
    may never have evaluated, read as :func:`unreached` reads the run's (the baseline could
    not read a case file, stopped early, or was narrowed to part of the suite), or all of
    them when the baseline is another shard's report than the run's: each with why and what
    names it. The others were added."""
    # A baseline with another cases directory ran another suite: a case only this run has
    # was added to the run's suite.
    causes = [(_IN_BASELINE[reason], detail)
              for reason, detail in _blanket(baseline, report, moved=False)]
    shard = (baseline.get("run") or {}).get("shard")
    if shard and shard != (report.get("run") or {}).get("shard"):
        causes.append((BASELINE_SHARD, f"shard {shard}"))
    if causes:
        return _all_of(only_run, causes)
    unselected, detail = not_selected(baseline, report, only_run, mirrored=True)
    return dict.fromkeys(unselected, BASELINE_NOT_SELECTED), {BASELINE_NOT_SELECTED: detail}


def _all_of(cases: set[CaseKey], causes: list[tuple[str, str]],
            ) -> tuple[dict[CaseKey, str], dict[str, str]]:
    """Every case of ``cases`` for the ``causes`` (each a reason and what names it), joined."""
    reason = " and ".join(c[0] for c in causes)
    return dict.fromkeys(cases, reason), {reason: "; ".join(c[1] for c in causes)}


def _blanket(report: Mapping[str, Any], baseline: Mapping[str, Any], *,
             moved: bool = True) -> list[tuple[str, str]]:
    """Why every case ``baseline`` has and ``report`` has not may never have been evaluated
    in it, each cause with what names it (the case files it could not read, why it stopped
    early, with ``moved`` another cases directory than the baseline's, what narrowed its
    selection that did not narrow the baseline's, when it lists no catalogue): none when
    nothing says so."""
    files = unread_case_files(report.get("not_evaluated") or ())
    run = report.get("run") or {}
    stopped = run.get("stopped_early")
    base = baseline.get("run") or {}
    # The command narrowed the ini file's models or cases, to others than the baseline's:
    # the run's catalogue and models are the narrowed ones, and cannot tell a case left out
    # from one deleted. Run with the baseline's own (a -o override repeating the ini file's
    # value is flagged too), it narrowed nothing the baseline ran.
    suite = _chosen(run) != _chosen(base)
    options = [o for o in narrowed_selection(run) if suite or o != SUITE_NARROWING]
    narrowed = ", ".join(options)
    if narrowed and not (suite and SUITE_NARROWING in options) and (
            _asked(run) == _asked(base) or catalogued(report) is not None):
        # The baseline was asked for the same tests: a case only it has was deleted since.
        # Or the run lists its catalogue, which tells each case it did not select from one
        # deleted (not_selected), where this cause would name both.
        narrowed = ""
    causes = [(INVALID_CASE_FILES, ", ".join(files))] if files else []
    causes += [(STOPPED_EARLY, str(stopped))] if stopped else []
    # The ini file's cases directory changed (the command's narrowing of it is named as
    # such): the run's catalogue cannot tell a case left outside it from one deleted.
    then_dir, now_dir = _chosen(base)[1], _chosen(run)[1]
    if moved and None not in (then_dir, now_dir) and then_dir != now_dir \
            and SUITE_NARROWING not in options:
        causes.append((CASES_MOVED, f"{then_dir} → {now_dir}"))
    causes += [(NOT_SELECTED, narrowed)] if narrowed else []
    return causes


def catalogued(report: Mapping[str, Any]) -> frozenset[tuple[str, str]] | None:
    """The (task, case id) of every good case of the run's catalogue, when its report lists
    them and it is no shard's (the cases of the other shards are in its catalogue, and their
    own shards evaluate them); None otherwise, as in reports made before the list."""
    run = report.get("run") or {}
    listed = run.get(CATALOGUE_CASES)
    if not isinstance(listed, list) or run.get("shard"):
        return None
    return frozenset((str(task), str(case_id)) for task, case_id in listed)


def not_selected(report: Mapping[str, Any], baseline: Mapping[str, Any],
                 only_baseline: set[CaseKey], *,
                 mirrored: bool = False) -> tuple[set[CaseKey], str]:
    """Of ``only_baseline`` (cases the baseline has and the run has not), those of a model the
    run was configured with that are still in its catalogue (:func:`catalogued`): no test of
    the run evaluated them, whatever left them out (``-k``, ``-m``, the paths given, a test
    since deleted), so they are not evaluated, not removed; and what narrowed the run, as
    its command gave it (the paths when they are not the baseline's). ``mirrored``: the
    ``report`` is the baseline's and ``baseline`` this run's, and the words say so."""
    listed = catalogued(report)
    if listed is None:
        return set(), ""
    run = report.get("run") or {}
    # The models it was configured with (a report that names none: those it scored).
    models = set(_chosen(run)[0]) or set(report["models"])
    # Reached only when the run has the baseline's models and cases (_blanket): a flag of
    # their narrowing came from a -o override that repeated them, and narrowed nothing.
    narrowed = [o for o in narrowed_selection(run) if o != SUITE_NARROWING]
    paths = _paths(run)
    if paths != _paths(baseline.get("run") or {}):
        other = "this run" if mirrored else "the baseline"
        narrowed += paths or [f"the paths {other} was given, left out"]
    detail = ", ".join(narrowed) or \
        f"no test of {'the baseline' if mirrored else 'the run'} asked for them"
    return {key for key in only_baseline if key[0] in models and key[1:] in listed}, detail


def _paths(run: Mapping[str, Any]) -> list[str]:
    """The paths a run's command gave pytest (node ids aside: they narrow by themselves)."""
    selection = run.get("selection")
    args = selection.get("args") if isinstance(selection, Mapping) else None
    return [str(a) for a in args or () if "::" not in str(a)]


def _chosen(run: Mapping[str, Any]) -> tuple[list[str], Any]:
    """The models (in any order) and the cases directory a run was configured with."""
    settings = run.get("settings")
    settings = settings if isinstance(settings, Mapping) else {}
    models = settings.get("models")
    return sorted(map(str, models)) if isinstance(models, list) else [], settings.get("cases")


def _asked(run: Mapping[str, Any]) -> dict[str, Any]:
    selection = run.get("selection")
    return asked_selection(selection) if isinstance(selection, Mapping) else {}


def unevaluated_in(pairs: Mapping[tuple[str, str], tuple[str, str]], model: str,
                   task: str) -> dict[CaseKey, str]:
    """The cases of ``model`` on ``task`` among ``unevaluated_pairs``, each with why."""
    return {(model, task, case_id): why for (m, case_id), (t, why) in pairs.items()
            if (m, t) == (model, task)}

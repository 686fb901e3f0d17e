"""What a run could not evaluate or could not show, in the scorecard's words: the header's
lines for the pairs and case files not evaluated, and the notes on pairs a test error or a
missing output left without a result and on metrics this process never registered, and why
a run the budget cut short is incomplete. Shared by a run's summary and the merge of shard
reports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..engine.core.metrics import DISABLED_THRESHOLD
from .settings import ERROR_PAYLOAD, UNPRODUCED_PAYLOAD, count

if TYPE_CHECKING:
    from ..engine.core.results import TaskResult
    from ..engine.registry import Registry
    from ..engine.scorecard import Scorecard


def not_evaluated_lines(entries: Iterable[Any]) -> list[str]:
    """The scorecard header's lines for a report's ``not_evaluated`` entries."""
    by_kind: dict[str, dict[str, list[str]]] = {"missing_output": {}, "test_error": {}}
    bad_files = []
    unproduced: dict[str, list[str]] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        kind = entry.get("kind")
        if kind in by_kind:
            by_kind[kind].setdefault(str(entry.get("model")), []).append(
                str(entry.get("case_id")))
        elif kind == "invalid_case_file":
            bad_files.append(str(entry.get("path")))
        elif kind == "unproduced_run":
            unproduced.setdefault(str(entry.get("model")), []).append(
                f"{entry.get('case_id')} run {entry.get('run')} of {entry.get('runs')}")
    lines = []
    for kind, words in (("missing_output", "no output"), ("test_error", "test errors")):
        for model, case_ids in sorted(by_kind[kind].items()):
            lines.append(f"{words}, not evaluated: {model}: {', '.join(sorted(case_ids))}")
    for model, runs in sorted(unproduced.items()):
        lines.append(f"runs not produced (the tool failed), not evaluated: {model}: "
                     f"{', '.join(runs)}")
    if bad_files:
        lines.append(f"invalid case files, not evaluated: {', '.join(bad_files)}")
    return lines



def judge_error_lines(results: Iterable[TaskResult]) -> list[str]:
    """The header's line on what the judge could not score, when anything: the verdicts it
    could not give, the outputs left out of task scores, and, in all, the metric results
    judge errors left unknown — which take in those no failed verdict stands behind (a
    combined verdict without one of its scores, a custom metric without a value), as the
    scorecard's footnotes count them."""
    results = list(results)
    errors = sum(1 for r in results for rec in r.judge_records if rec.get("judge_error"))
    unknown = sum(len(r.judge_errors) for r in results)
    if not (errors or unknown):
        return []
    incomplete = sum(1 for r in results if r.incomplete)
    line = (f"judge errors: {count(errors, 'verdict')} the judge could not give (shown as E); "
            f"{count(incomplete, 'output')} left out of task scores, and the tests that "
            "needed them reported as errors, not as model failures")
    if unknown:
        line += f"; in all, {count(unknown, 'metric result')} left unknown"
    return [line]

def report_judge_errors(report: Mapping[str, Any]) -> str | None:
    """A report's line saying how many verdicts the judge could not give (and how many of
    them the spent budget stopped), and how many metric results judge errors left unknown,
    when there are any — for the pull-request summary and the HTML report, which read the
    report, as :func:`judge_error_lines` is the terminal's from the results: without it the
    figures they leave out read as measured on every output.

    The report counts failed verdicts by their judge records, but a judge error may have
    none: a combined verdict that gave no score for one of its metrics, a custom metric that
    gave no value on an output the judge could not wholly score. The metric results each
    case lists as judge errors take them in, as the scorecard's footnotes count them."""
    errors = report.get("judge_errors") or {}
    verdicts = errors.get("verdicts") or 0
    left_out = errors.get("outputs_without_task_score") or 0
    per_output = [len(case.get("judge_errors") or ()) for case in report.get("cases") or ()
                  if isinstance(case, Mapping)]
    unknown = sum(per_output)
    if not (verdicts or left_out or unknown):
        return None
    usage = (report.get("run") or {}).get("judge_usage") or {}
    budget = usage.get("not_scored_budget") or 0
    spent = f" ({budget} of them stopped by the spent judge budget)" if budget else ""
    line = (f"Judge errors: {count(verdicts, 'verdict')} the judge could not give{spent}; "
            f"{count(left_out, 'output')} left out of task scores. A failure of the tool, not "
            "of the models: the figures they touch are marked E.")
    if unknown:
        line += (f" In all, judge errors left {count(unknown, 'metric result')} in "
                 f"{count(sum(1 for n in per_output if n), 'output')} unknown.")
    return line


def not_evaluated(payloads: Iterable[Mapping[str, Any]],
                  bad_files: Iterable[Mapping[str, Any]],
                  results: Sequence[TaskResult]) -> list[dict[str, Any]]:
    """A run's ``not_evaluated``, sorted, from the tests' payloads, the case files that could
    not be read, and the results: pairs with no result and why (no output, a test error),
    the runs of a repeated pair its test could not produce (``unproduced_run``, numbered
    from 1), the unreadable case files. A pair whose test errored, or a run, is listed only
    when no other test of it gave a result."""
    scored = {(r.model, r.case_id) for r in results}
    produced = {(r.model, r.case_id, r.run + 1) for r in results}
    entries: dict[tuple[str, ...], dict[str, Any]] = {}
    for payload in payloads:
        if "missing" in payload:
            m = payload["missing"]
            entries[("missing", m["model"], m["case_id"])] = {"kind": "missing_output", **m}
        if "case_file" in payload:
            f = payload["case_file"]
            entries[("case_file", f["path"])] = {"kind": "invalid_case_file", **f}
        if ERROR_PAYLOAD in payload:
            e = payload[ERROR_PAYLOAD]
            if (e["model"], e["case_id"]) not in scored:
                entries[("test_error", e["model"], e["case_id"])] = {"kind": "test_error", **e}
        if UNPRODUCED_PAYLOAD in payload:
            u = payload[UNPRODUCED_PAYLOAD]
            for run in u["missing"]:
                if (u["model"], u["case_id"], run) not in produced:
                    entries[("unproduced_run", u["model"], u["case_id"], f"{run:09d}")] = {
                        "kind": "unproduced_run", "model": u["model"], "case_id": u["case_id"],
                        "task": u["task"], "run": run, "runs": u["runs"],
                        "reason": u["reason"]}
    # Named even when -k, a node id or the shard deselected its test: it may hold cases the
    for bad in bad_files:  # run asked for.
        entries.setdefault(("case_file", bad["path"]), {"kind": "invalid_case_file", **bad})
    return [entries[k] for k in sorted(entries)]


def errored_pairs(entries: Iterable[Any]) -> list[tuple[str, str, str]]:
    """The (model, task, case id) of each pair a test error left without a result, from a
    report's ``not_evaluated`` entries: the scorecard counts them as not known."""
    return _pairs(entries, "test_error")


def no_output_pairs(entries: Iterable[Any]) -> list[tuple[str, str, str]]:
    """The (model, task, case id) of each pair without an output (none recorded, or the
    budget stopped its generation), from a report's ``not_evaluated`` entries: the scorecard
    counts them as not known, as it does pairs whose test errored — read as never asked, a
    model that did not answer its blocked case would take the rank of one that answered it."""
    return _pairs(entries, "missing_output")


def unread_case_files(entries: Iterable[Any]) -> list[str]:
    """The path of each case file the run could not read, from a report's ``not_evaluated``
    entries: which cases (and labels) it held, no report says."""
    return [str(e["path"]) for e in entries
            if isinstance(e, Mapping) and e.get("kind") == "invalid_case_file"]


def _pairs(entries: Iterable[Any], kind: str) -> list[tuple[str, str, str]]:
    return [(str(e.get("model")), str(e.get("task")), str(e.get("case_id"))) for e in entries
            if isinstance(e, Mapping) and e.get("kind") == kind]


def not_evaluated_notes(entries: Iterable[Any]) -> list[str]:
    """The scorecard's notes on pairs a test error or a missing output left without a
    result: without them a model's task score (or, when no case of a task has a result, its
    final score, renormalised without the task) would read as measured on every case."""
    unknown: dict[tuple[str, str, str], list[str]] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        if entry.get("kind") == "test_error":
            cause = "its test errored"
        elif entry.get("kind") == "missing_output":
            cause = ("the budget stopped its generation" if entry.get("budget_stopped")
                     else "no output")
        else:
            continue
        unknown.setdefault((str(entry.get("model")), str(entry.get("task")), cause),
                           []).append(str(entry.get("case_id")))
    return [f"E {model}: {task}: {count(len(ids), 'case')} not evaluated, {cause} "
            f"({', '.join(sorted(ids))}): left out of the task score"
            for (model, task, cause), ids in sorted(unknown.items())]


def unregistered_notes(card: Scorecard) -> list[str]:
    """A note per task whose results hold metrics this process never registered: the
    ``pytest_callqa_register_metrics`` that defines them sits in a ``conftest.py`` the xdist
    controller does not load (only a worker collecting its directory does). Their values
    are in the results, not in the scorecard: said here rather than dropped in silence."""
    # Loaded with the scorecard already.
    from ..engine.tasks.benchmark_specs import BENCHMARK_IDS

    known: dict[str, set[str]] = {}
    unknown: dict[str, set[str]] = {}
    for result in card.results:
        ids = known.get(result.task)
        if ids is None:
            registered = (card.specs(result.task) if result.task in card.registry.tasks
                          else [])
            ids = known[result.task] = {s.id for s in registered} | set(BENCHMARK_IDS)
        if not ids.issuperset(result.metrics):
            unknown.setdefault(result.task, set()).update(set(result.metrics) - ids)
    return [f"{task}: metric(s) {', '.join(sorted(ids))} were scored but are not registered "
            "in this process, so the scorecard leaves them out: register them in the "
            "rootdir's conftest.py (or a plugin), which every xdist process loads"
            for task, ids in sorted(unknown.items())]


def unscored_lines(card: Scorecard, *, benchmarks: bool) -> list[str]:
    """The header's line naming the metrics a run reached but could not score or decide for
    any model (the heuristic judge leaves what it cannot estimate unscored; a rate some
    cases know only from below is undecided unless that fails it), per task, so a column of
    dashes is read as "not measured", not overlooked. ``benchmarks`` is whether the run
    had the Layer 2 benchmarks switched on."""
    # The benchmark definitions load with the task families they read.
    from ..engine.tasks.benchmark_specs import BENCHMARK_METRICS

    models = card.models.values()
    unscored = []
    for task in card.task_order:
        names = [
            spec.name for spec in card.specs(task)
            if spec.shown and any(_has_metric(m.tasks.get(task), spec.id) for m in models)
            and all(_value(m.tasks.get(task), spec.id) is None for m in models)
        ]
        if names:
            unscored.append(f"{task}: {', '.join(names)}")
    dropped = [spec.name for spec in BENCHMARK_METRICS
               if all(m.benchmarks.get(spec.id, {}).get("value") is None for m in models)]
    if dropped and benchmarks and any(m.benchmarks for m in models):
        unscored.append(f"benchmarks: {', '.join(dropped)}")
    return ["not scored or undecided for any model: " + "; ".join(unscored)] if unscored else []


def _has_metric(agg: Any, metric_id: str) -> bool:
    return agg is not None and metric_id in agg.metrics


def _value(agg: Any, metric_id: str) -> float | None:
    if agg is None or metric_id not in agg.metrics:
        return None
    value: float | None = agg.metrics[metric_id].value
    return value


def partial_run_lines(run: Mapping[str, Any]) -> list[str]:
    """The header's lines for a run whose scorecard holds only part of its tests' results: it
    stopped early (``-x``, ``--maxfail``, Ctrl-C), or it was asked for part of the suite
    (``-k``, ``--deselect``, ``--lf``, node ids), or evaluation tests were deselected by
    something else (``--sw``, an ``-m`` narrower than ``eval``, another plugin). A scorecard
    that looks whole otherwise ranks models on what happened to run."""
    lines = []
    stopped = run.get("stopped_early")
    if stopped:
        lines.append(f"run stopped early ({stopped}): the scorecard holds only the results "
                     "of the tests that ran before it stopped")
    narrowed = narrowed_selection(run)
    if narrowed:
        lines.append(f"selection: {', '.join(narrowed)}: the scorecard holds only the "
                     "results of the selected tests")
    return lines


# The key of run.selection that counts the evaluation tests a run deselected (a merge of
# shards also keeps each shard's count, under this key with "_per_shard").
DESELECTED = "deselected_eval_tests"
# Whether --lf found failures on record: each job's own cache, like its count; "lf" (the
# option given) is the setting.
FOUND_FAILURES = "last_failed"
# The key of run.selection that says the command line narrowed the models or cases the ini
# file configures (--callqa-models, --callqa-cases, --callqa-outputs): present only then.
SUITE_NARROWED = "models_or_cases_narrowed"
# How the header and the gate name it.
SUITE_NARROWING = "models or cases narrower than the ini file's"
# The key of a report's run that lists the task and id of every good case of its catalogue
# (null when no test read it): the gate tells a case the run did not select from one deleted.
CATALOGUE_CASES = "catalogue_cases"


def asked_selection(selection: Mapping[str, Any]) -> dict[str, Any]:
    """A run's ``run.selection`` as the command gave it, without what its own run decided:
    how many evaluation tests it deselected (which moves with the cases), whether --lf found
    failures on record. A report older than "lf" said only whether --lf was given, in
    last_failed: a setting of the command then, kept."""
    own = {DESELECTED, f"{DESELECTED}_per_shard"}
    if "lf" in selection:
        own.add(FOUND_FAILURES)
    return {key: item for key, item in selection.items() if key not in own}


def narrowed_selection(run: Mapping[str, Any]) -> list[str]:
    """What narrowed a run to part of the suite, as the user wrote it (``-k 'qa'``,
    ``--deselect ...``, node ids, ``--lf``), or how many evaluation tests something else
    deselected: empty for a run of the whole suite."""
    selection = run.get("selection")
    if not isinstance(selection, Mapping):
        return []
    narrowed = [f"-k {selection['keyword']!r}"] if selection.get("keyword") else []
    narrowed += [f"--deselect {d}" for d in selection.get("deselect") or ()]
    narrowed += [str(a) for a in selection.get("args") or () if "::" in str(a)]
    narrowed += ["--lf"] if selection.get(FOUND_FAILURES) else []
    narrowed += [SUITE_NARROWING] if selection.get(SUITE_NARROWED) else []
    deselected = selection.get(DESELECTED)
    if not narrowed and isinstance(deselected, int) and deselected > 0:
        # Deselected by nothing the line can name (the options above deselect too).
        narrowed.append(f"{count(deselected, 'evaluation test')} deselected")
    return narrowed


def policy_lines(registry: Registry) -> list[str]:
    """The header's lines on the bars a team's policy set, one per file that set any: each
    metric it disabled or gave its own threshold. A disabled blocker left no trace but the
    JSON report's definitions: a model no longer disqualified read as one that had improved."""
    by_origin: dict[str, list[str]] = {}
    for (task, metric_id), spec in sorted(registry.overrides.items()):
        rule = "disabled" if spec.threshold == DISABLED_THRESHOLD else spec.threshold
        by_origin.setdefault(registry.origin(task, metric_id), []).append(
            f"{task}.{metric_id} {rule}")
    return [f"policy ({origin}): {'; '.join(rules)}" for origin, rules in by_origin.items()]


def budget_cut(report: Mapping[str, Any]) -> str | None:
    """Why the run is incomplete when the budget stopped what it needed — outputs of live
    models never generated, judgements never asked — from its report, with the budget and
    the cache its usage sections record (both record the same call limits); None when it
    stopped neither. A run whose tests passed without them measured less than it was asked
    to: exit 0 would read as a pass, and the budget is the tool's limit, not the model's
    failure. The terminal, the markdown summary, the HTML report and JUnit all say this."""
    outputs = sum(1 for e in report.get("not_evaluated") or ()
                  if isinstance(e, Mapping) and e.get("kind") == "missing_output"
                  and e.get("budget_stopped"))
    run = report.get("run")
    run = run if isinstance(run, Mapping) else {}
    judge = run.get("judge_usage")
    judgements = judge.get("not_scored_budget") if isinstance(judge, Mapping) else None
    judgements = judgements if isinstance(judgements, int) else 0
    stopped = [text for n, text in ((outputs, count(outputs, "output") + " not generated"),
                                    (judgements, count(judgements, "judgement") + " not asked"))
               if n]
    if not stopped:
        return None
    limits = next((u for key in ("judge_usage", "generation_usage")
                   if isinstance(u := run.get(key), Mapping)), {})
    budget = limits.get("budget_usd")
    spent = (f"the budget of ${budget:g}" if isinstance(budget, (int, float))
             else "the budget")
    # A run again gets further only when the cache kept what this one paid for.
    again = (", or run again: the cache keeps every reply paid for"
             if limits.get("cache") == "rw" else "")
    return (f"INCOMPLETE — {spent} was spent before the run was evaluated in full "
            f"({', '.join(stopped)}): not a pass, nor the model's failure; the run exits 4 "
            f"unless it failed (raise --callqa-budget{again})")


def renormalised_note(card: Mapping[str, Any], value: Any) -> str:
    """What the reports say beside a final score (``value``, of a model's ``card`` in the
    report) weighed without the tasks the model has no case of: not its full score."""
    missing = [str(t) for t in card.get("missing_tasks") or []]
    return f" (renormalised without {', '.join(missing)})" if value is not None and missing \
        else ""

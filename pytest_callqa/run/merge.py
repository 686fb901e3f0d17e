"""Merging the JSON reports of sharded runs (``--callqa-shard i/N``) into the report one run
over the whole suite would have written, timings aside.

Each case entry of a report is a whole result, so the merge rebuilds the scorecard from the
cases of every shard with the metric definitions the shards recorded, and derives every
other section from it the way ``Summary.report_data`` does. Shards that were not one run —
another judge, embedder, price of the judge, metric set, tolerance, plugin version, model
list, number of runs, judge repeats or selection of tests, or cases scored twice — are
refused with the files and the key that differ."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine.core.results import TaskResult, plain
from ..engine.judges.repeats import repeat_agreement
from ..engine.llm.counters import tokens_unknown
from ..engine.report import render_scorecard
from ..engine.scorecard import Scorecard, build_scorecard
from .gaps import (
    DESELECTED,
    FOUND_FAILURES,
    asked_selection,
    errored_pairs,
    judge_error_lines,
    no_output_pairs,
    not_evaluated_lines,
    partial_run_lines,
    unscored_lines,
)
from .recorded_specs import recorded_registry
from .repeated import judge_repeat_lines, run_notes, runs_lines
from .report_check import check_report
from .settings import count, display_path
from .shard import parse_shard
from .summary import REPORT_SCHEMA, models_section
from .usage import BUDGET_REASON, combined_cache_problems, judge_lines, money

# What makes two reports parts of one run: a shard that differs in one of these scored
# with other rules, and its figures cannot be pooled with the others'.
SAME_RUN: tuple[tuple[str, ...], ...] = (
    ("schema",),
    ("run", "judge", "name"),
    ("run", "judge", "model"),
    ("run", "judge_usage", "mode"),
    ("run", "judge_usage", "priced"),
    ("run", "embeddings"),
    ("run", "benchmarks"),
    ("run", "disqualify_tolerance"),
    ("run", "versions", "pytest_callqa"),
    # The configured models, runs, judge repeats and tolerances (summary.run_settings): a
    # shard of another model list or number of runs would leave pairs out, or mix results
    # unlike the others', in a scorecard that says nothing of it.
    ("run", "settings"),
    # The tests each job was asked for: a -k, -m or node id in one job only leaves its
    # share of the pairs unrun, which the merged report would not show. How many evaluation
    # tests a job deselected is no setting but its own count (_selection sums it).
    ("run", "selection"),
    # For reports older than run.settings.
    ("run", "judge_repeats", "repeats"),
    ("run", "judge_repeats", "tolerance"),
)
# Sections the merge derives from the pooled results, or checks and pools itself.
DERIVED = frozenset({"schema", "run", "models", "model_order", "metric_specs", "golden_cases",
                     "cases", "not_evaluated", "notes", "judge_errors"})
# A shard's gate compared its share of the cases with the baseline; the merged report gets a
# gate only from a baseline given to the merge, over all the cases.
PER_SHARD = frozenset({"gate"})
# Call counters of the run's usage sections, added up over the shards.
COUNTERS = frozenset({"requests", "retries", "reasks", "requests_without_usage", "processes",
                      "calls", "cache_hits", "damaged_cache_entries", "failures", "unusable",
                      "budget_stopped"})
# Token counts, null in a shard whose every reply came back without usage (run/usage.py).
TOKENS = ("prompt_tokens", "completion_tokens")
# MetricSpec fields a report describes under another name.
_MISSING = object()


@dataclass(frozen=True)
class _Shard:
    name: str
    report: Mapping[str, Any]
    results: list[TaskResult]


# --- reading the shards ----------------------------------------------------------------------

def _get(data: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return _MISSING
        data = data[key]
    return data


def _show(value: Any) -> str:
    return "(absent)" if value is _MISSING else json.dumps(value, sort_keys=True)[:120]


def _read(name: str, report: Any) -> _Shard:
    if not isinstance(report, Mapping):
        raise ValueError(f"{name}: not a JSON report (an object with schema {REPORT_SCHEMA})")
    if report.get("schema") != REPORT_SCHEMA:
        raise ValueError(f"{name}: schema is {_show(report.get('schema', _MISSING))}, "
                         f"expected {REPORT_SCHEMA!r}")
    kinds = {"run": Mapping, "cases": list, "metric_specs": Mapping, "model_order": list,
             "golden_cases": Mapping, "not_evaluated": list}
    for key, kind in kinds.items():
        if not isinstance(report.get(key), kind):
            raise ValueError(f"{name}: key {key!r} is missing or not a JSON "
                             f"{'object' if kind is Mapping else 'array'}")
    # What the gate reads of a report, each value of the type it reads (a NaN, a string of
    # blockers refused by file and key): the merged report is gated and rendered too.
    check_report(report, name)
    results = []
    for i, entry in enumerate(report["cases"]):
        try:
            results.append(TaskResult.from_dict(dict(entry)))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{name}: cases[{i}] is not a result entry ({exc!r})") from None
        if not all(isinstance(record, Mapping) for record in results[-1].judge_records):
            raise ValueError(f"{name}: cases[{i}]: key 'judge_records' should be an array of "
                             "objects")
    try:
        recorded_registry(report["metric_specs"])
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return _Shard(name, report, results)


def _setting(report: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` that every shard must share: the selection without what its
    job's own cache decided (how many evaluation tests it deselected, whether --lf found
    failures on record)."""
    value = _get(report, path)
    if path == ("run", "selection") and isinstance(value, Mapping):
        return asked_selection(value)
    return value


def _differences(path: tuple[str, ...], mine: Any, theirs: Any
                 ) -> list[tuple[tuple[str, ...], Any, Any]]:
    """Every key under ``path`` where two different values differ, with each value there:
    the settings to name, not the whole section."""
    if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
        found = []
        for key in sorted(set(mine) | set(theirs)):
            a, b = mine.get(key, _MISSING), theirs.get(key, _MISSING)
            if a != b:
                found += _differences((*path, key), a, b)
        return found
    return [(path, mine, theirs)]


def _check_same_run(shards: Sequence[_Shard]) -> None:
    first = shards[0]
    for shard in shards[1:]:
        for path in SAME_RUN:
            mine, theirs = _setting(first.report, path), _setting(shard.report, path)
            if mine != theirs:
                named = "; ".join(
                    f"{'.'.join(where)} differs ({_show(a)} in {first.name}, {_show(b)} in "
                    f"{shard.name})" for where, a, b in _differences(path, mine, theirs))
                raise ValueError(f"cannot merge {shard.name} with {first.name}: {named}; "
                                 "shards must come from one configuration")
        for key in sorted(set(first.report) | set(shard.report)):
            if key in DERIVED or key in PER_SHARD:
                continue
            mine, theirs = first.report.get(key, _MISSING), shard.report.get(key, _MISSING)
            if mine != theirs:
                raise ValueError(f"cannot merge {shard.name} with {first.name}: {key} differs "
                                 f"({_show(mine)} in {first.name}, {_show(theirs)} in "
                                 f"{shard.name})")


def _check_shard_set(shards: Sequence[_Shard]) -> None:
    """When the reports say which shard they are, the set must be one split, complete."""
    seen: dict[int, str] = {}
    unsplit: list[str] = []
    total = None
    for shard in shards:
        text = _get(shard.report, ("run", "shard"))
        if text is _MISSING or text is None:
            unsplit.append(shard.name)
            continue
        try:
            index, n = parse_shard(str(text))
        except ValueError as exc:
            raise ValueError(f"{shard.name}: run.shard: {exc}") from None
        if total is not None and n != total:
            raise ValueError(f"cannot merge {shard.name}: run.shard is {text!r}, the other "
                             f"reports are shards of {total}")
        total = n
        if index in seen:
            raise ValueError(f"{seen[index]} and {shard.name} are both shard {index}/{n}")
        seen[index] = shard.name
    if total is not None:
        # Named first: such a report (a whole run's, or a merge's) holds pairs of the shards,
        # and "shard 2/2 missing" sent the user looking for a shard.
        if unsplit:
            says = ("does not say which shard it is" if len(unsplit) == 1
                    else "do not say which shard they are")
            raise ValueError(f"the reports are not one split: {', '.join(unsplit)} {says} "
                             f"(a whole run's report, or a merged one), the others are "
                             f"shards of {total}")
        missing = [f"{i}/{total}" for i in range(1, total + 1) if i not in seen]
        if missing:
            raise ValueError(f"the reports are not one complete split: shard "
                             f"{', '.join(missing)} missing")


def _pooled_specs(shards: Sequence[_Shard]) -> dict[str, list[dict[str, Any]]]:
    pooled: dict[str, list[dict[str, Any]]] = {}
    origin: dict[str, str] = {}
    for shard in shards:
        for task, specs in shard.report["metric_specs"].items():
            if task not in pooled:
                pooled[task], origin[task] = list(specs), shard.name
            elif list(specs) != pooled[task]:
                raise ValueError(f"cannot merge {shard.name} with {origin[task]}: "
                                 f"metric_specs.{task} differs (the metrics, their "
                                 "definitions or their regression tolerances changed between "
                                 "the runs)")
    return pooled


# --- the merged sections ---------------------------------------------------------------------

def _pooled_cases(shards: Sequence[_Shard]) -> tuple[list[TaskResult],
                                                     dict[tuple[Any, ...], dict[str, Any]]]:
    results: list[TaskResult] = []
    entries: dict[tuple[Any, ...], dict[str, Any]] = {}
    holder: dict[tuple[Any, ...], str] = {}
    for shard in shards:
        for result, entry in zip(shard.results, shard.report["cases"], strict=True):
            key = (result.model, result.case_id, result.run)
            if key in holder:
                raise ValueError(
                    f"{holder[key]} and {shard.name} both hold model {result.model!r}, case "
                    f"{result.case_id!r}, run {result.run}: shards must not overlap (was each "
                    "job given its own --callqa-shard i/N, with the same N?)")
            holder[key] = shard.name
            entries[key] = dict(entry)
            results.append(result)
    return results, entries


def _pooled_golden(shards: Sequence[_Shard]) -> dict[str, Any]:
    pooled: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for shard in shards:
        for case_id, case in shard.report["golden_cases"].items():
            if case_id not in pooled:
                pooled[case_id], origin[case_id] = case, shard.name
            elif case != pooled[case_id]:
                raise ValueError(f"cannot merge {shard.name} with {origin[case_id]}: "
                                 f"golden_cases.{case_id} differs (the case files changed "
                                 "between the runs)")
    # By task, then id: the order a single run's catalogue has when each task's cases sit in
    # a folder of their own, named by id; in the order first seen, it followed the order the
    # shards were given in.
    return dict(sorted(pooled.items(), key=lambda item: (str(item[1].get("task")), item[0])))


def _not_evaluated_key(entry: Mapping[str, Any]) -> tuple[str, ...]:
    # The keys Summary.not_evaluated sorts by, so the union reads as one run's list.
    if entry.get("kind") == "missing_output":
        return ("missing", str(entry.get("model")), str(entry.get("case_id")))
    if entry.get("kind") == "invalid_case_file":
        return ("case_file", str(entry.get("path")))
    if entry.get("kind") == "test_error":
        return ("test_error", str(entry.get("model")), str(entry.get("case_id")))
    if entry.get("kind") == "unproduced_run" and isinstance(entry.get("run"), int):
        return ("unproduced_run", str(entry.get("model")), str(entry.get("case_id")),
                f"{entry['run']:09d}")
    return (str(entry.get("kind")), json.dumps(entry, sort_keys=True))


def _with_task(shard: _Shard, i: int, entry: Mapping[str, Any],
               tasks: Mapping[str, str]) -> dict[str, Any]:
    """A pair's ``not_evaluated`` entry with its task: an older report's test errors and
    missing outputs do not name it, and the scorecard counts them by task. It is taken from
    the case's golden case or a result of it; with neither, the report is refused."""
    entry = dict(entry)
    if entry.get("kind") in ("test_error", "missing_output") and not entry.get("task"):
        task = tasks.get(str(entry.get("case_id")))
        if task is None:
            raise ValueError(f"{shard.name}: not_evaluated[{i}]: missing key 'task' (an older "
                             f"report), and case {entry.get('case_id')!r} has no golden case "
                             "or result to take it from")
        entry["task"] = task
    return entry


def _case_tasks(shards: Sequence[_Shard]) -> dict[str, str]:
    """Each case's task, from the shards' golden cases and results."""
    tasks = {r.case_id: r.task for shard in shards for r in shard.results}
    for shard in shards:
        tasks.update((case_id, str(case["task"]))
                     for case_id, case in shard.report["golden_cases"].items()
                     if isinstance(case, Mapping) and isinstance(case.get("task"), str))
    return tasks


def _pooled_not_evaluated(shards: Sequence[_Shard]) -> list[dict[str, Any]]:
    entries: dict[tuple[str, ...], dict[str, Any]] = {}
    tasks = _case_tasks(shards)
    for shard in shards:
        for i, entry in enumerate(shard.report["not_evaluated"]):
            if not isinstance(entry, Mapping):
                raise ValueError(f"{shard.name}: not_evaluated[{i}] is not an object")
            entries.setdefault(_not_evaluated_key(entry), _with_task(shard, i, entry, tasks))
    return [entries[k] for k in sorted(entries)]


def _model_order(shards: Sequence[_Shard], card: Scorecard) -> list[str]:
    """The configured order (``run.settings.models``, which the shards share); for a
    report older than it, pieced together from the shards' (each lists only the models it
    scored): a model one shard lacks goes before the next model its own shard lists — which
    depended on the order the shards were given in."""
    configured = _get(shards[0].report, ("run", "settings", "models"))
    if isinstance(configured, list):
        listed = [m for m in configured if isinstance(m, str) and m in card.models]
        return listed + sorted(m for m in card.models if m not in listed)
    order: list[str] = []
    for shard in shards:
        names = [str(n) for n in shard.report["model_order"]]
        for i, name in enumerate(names):
            if name in order:
                continue
            after = [n for n in names[i + 1:] if n in order]
            order.insert(order.index(after[0]) if after else len(order), name)
    return [m for m in order if m in card.models] + [m for m in card.models if m not in order]


def _started_at(shards: Sequence[_Shard]) -> Any:
    """The earliest start of a shard (the shards of one CI run start about together); the
    first shard's when one cannot be read."""
    stamps = []
    for shard in shards:
        text = shard.report["run"].get("started_at")
        try:
            stamps.append((datetime.fromisoformat(str(text)), text))
        except ValueError:
            return shards[0].report["run"].get("started_at")
    return min(stamps, key=lambda s: s[0])[1]


def _deselected(shard: _Shard) -> int:
    """How many evaluation tests the shard's job deselected (0 when its report says none)."""
    value = _get(shard.report, ("run", "selection", DESELECTED))
    if value is _MISSING:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{shard.name}: run.selection.{DESELECTED} is {_show(value)}, "
                         "expected a whole number")
    return value


def _found_failures(shard: _Shard) -> bool:
    """Whether the shard's --lf found failures on record (false when its report says
    nothing of it)."""
    value = _get(shard.report, ("run", "selection", FOUND_FAILURES))
    given = _get(shard.report, ("run", "selection", "lf"))
    for key, found in ((FOUND_FAILURES, value), ("lf", given)):
        if found is not _MISSING and not isinstance(found, bool):
            raise ValueError(f"{shard.name}: run.selection.{key} is {_show(found)}, "
                             "expected true or false")
    if value is True and given is False:
        raise ValueError(f"{shard.name}: run.selection.{FOUND_FAILURES} is true but "
                         "run.selection.lf is false: failures on record rerun without --lf")
    return value is True


def _selection(shards: Sequence[_Shard]) -> Any:
    """The shards' selection (the same in each but for what each job's own cache decided),
    with the count of deselected evaluation tests as one run over the suite would give it,
    and ``last_failed`` true when any job's --lf found failures on record.

    -k, -m, --deselect and a plugin's own hook deselect before --callqa-shard splits the
    tests, so every shard counts the whole suite's deselections: the same count, kept as it
    is. --lf deselects after the split, by the failures the job's own cache recorded: each
    shard's count is its own. Those, and counts that differ (a job's own --sw cache), are
    summed, each shard's kept beside the sum."""
    selection = shards[0].report["run"].get("selection")
    if not isinstance(selection, Mapping):
        return selection
    counts = [_deselected(shard) for shard in shards]
    found = [_found_failures(shard) for shard in shards]
    merged = {key: value for key, value in selection.items() if key != DESELECTED}
    if FOUND_FAILURES in selection:
        # A job whose cache held no failures ran its whole shard; the others reran theirs.
        merged[FOUND_FAILURES] = any(found)
    if not any(counts):
        return merged
    if len(set(counts)) == 1 and not merged.get(FOUND_FAILURES):
        merged[DESELECTED] = counts[0]
        return merged
    merged[DESELECTED] = sum(counts)
    merged[f"{DESELECTED}_per_shard"] = {_label(shard): n
                                         for shard, n in zip(shards, counts, strict=True)}
    return merged


def _label(shard: _Shard) -> str:
    """The shard as its report names it (``i/N``), else its file's name."""
    recorded = _get(shard.report, ("run", "shard"))
    return shard.name if recorded is _MISSING or recorded is None else str(recorded)


def _sum_counters(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Usage sections of the shards as one: counters added up (one only some shards have,
    like damaged cache entries, too), the tokens replies reported added up (unknown when no
    reply reported any), spend added up (unknown if one shard's is), a budget
    exhausted if it was in any shard, the longest wait, and the settings (limits, model,
    base URL) of the first shard that has them."""
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            merged.setdefault(key, value)
    for key in merged:
        values = [p[key] for p in parts if key in p]
        if key in COUNTERS or key in TOKENS:
            merged[key] = sum(v or 0 for v in values)
        elif key == "spent_usd":
            known = [float(v) for v in values if v is not None]
            merged[key] = None if len(known) < len(parts) else money(sum(known))
        elif key == "budget_exhausted":
            merged[key] = any(values)
        elif key == "resolve_s":
            merged[key] = max((float(v) for v in values if v is not None), default=0.0)
        elif key == "cache_problems":
            merged[key] = combined_cache_problems([v for v in values if isinstance(v, Mapping)])
    # As a single run's: unknown when no reply of any shard reported its tokens.
    if tokens_unknown(merged.get("requests") or 0, merged.get("requests_without_usage") or 0):
        merged.update((key, None) for key in TOKENS if key in merged)
    return merged


def _judge_usage(parts: Sequence[Mapping[str, Any]], card: Scorecard) -> dict[str, Any]:
    merged = _sum_counters(parts)
    merged["per_process"] = _sum_counters([p.get("per_process") or {} for p in parts])
    # What the scored results used is read from them, as one run does (run/usage.py).
    records = [rec for r in card.results for rec in r.judge_records]
    used = [r for r in card.results if r.usage.get("judge_calls")]
    calls = sum(r.usage["judge_calls"] for r in used)
    costed = [r.usage["judge_cost_usd"] for r in used if "judge_cost_usd" in r.usage]
    merged["calls"] = round(calls, 6)
    merged["cost_per_1000_calls"] = (money(sum(costed) / calls * 1000)
                                     if calls and len(costed) == len(used) else None)
    merged["flagged_verdicts"] = sum(1 for rec in records if rec.get("flagged"))
    merged["not_scored_budget"] = sum(
        1 for rec in records if rec.get("score") is None
        and str(rec.get("reason", "")).startswith(BUDGET_REASON))
    return merged


def _generation_usage(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    merged = _sum_counters(parts)
    merged["per_process"] = _sum_counters([p.get("per_process") or {} for p in parts])
    models: dict[str, Any] = {}
    for name in [n for p in parts for n in p.get("models") or {}]:
        if name not in models:
            models[name] = _sum_counters([p["models"][name] for p in parts
                                          if name in (p.get("models") or {})])
    merged["models"] = models
    return merged


def _run(shards: Sequence[_Shard], card: Scorecard) -> dict[str, Any]:
    run = dict(shards[0].report["run"])
    # The merged report is the whole run's, not any one shard's.
    run.pop("shard", None)
    run["rank_basis"] = card.rank_basis
    if "started_at" in run:
        run["started_at"] = _started_at(shards)
    # The shards are CI jobs running side by side: the run took as long as the longest.
    durations = [_get(s.report, ("run", "duration_s")) for s in shards]
    numbers = [float(d) for d in durations if isinstance(d, (int, float))]
    if numbers:
        run["duration_s"] = max(numbers)
    for key in ("judge_usage", "generation_usage"):
        parts = [s.report["run"].get(key) for s in shards]
        present = [p for p in parts if isinstance(p, Mapping)]
        if not present:
            continue
        run[key] = (_judge_usage(present, card) if key == "judge_usage"
                    else _generation_usage(present))
    # Each shard as a run names a file: relative to where it ran when below it.
    stopped = [f"{display_path(Path(s.name), Path.cwd())}: {s.report['run']['stopped_early']}"
               for s in shards if s.report["run"].get("stopped_early")]
    run["stopped_early"] = "; ".join(stopped) or None
    if "selection" in run:
        run["selection"] = _selection(shards)
    repeats = run.get("judge_repeats")
    if isinstance(repeats, Mapping):
        # The judge's agreement with itself over every shard's verdicts, read from the
        # pooled results as a run reads it from its own (the shards agree on the repeats).
        run["judge_repeats"] = {**repeats, "metrics": repeat_agreement(card.results)}
    return run


def scorecard_of(report: Mapping[str, Any], name: str = "report") -> Scorecard:
    """The scorecard behind a report, rebuilt from its cases and metric definitions."""
    shard = _read(name, report)
    registry = recorded_registry(_pooled_specs([shard]))
    entries = _pooled_not_evaluated([shard])
    return build_scorecard(shard.results, registry=registry,
                           disqualify_tolerance=int(report["run"]["disqualify_tolerance"]),
                           errored=errored_pairs(entries), no_output=no_output_pairs(entries))


def merge_reports(reports: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """One report (schema ``callqa-report/1``) from the reports of a run's shards, as one
    run over all of them would have written it, timings aside.

    ``names`` name the reports (their files) in error messages. Raises ValueError when a
    report is not one, when the reports come from different configurations (``SAME_RUN``,
    ``metric_specs``, a golden case, any other section) or when two hold the same (model,
    case, run).
    """
    if len(reports) != len(names):
        raise ValueError(f"{len(reports)} reports but {len(names)} names")
    if not reports:
        raise ValueError("no report to merge")
    shards = [_read(name, report) for name, report in zip(names, reports, strict=True)]
    _check_same_run(shards)
    _check_shard_set(shards)
    specs = _pooled_specs(shards)
    golden = _pooled_golden(shards)
    results, entries = _pooled_cases(shards)
    tolerance = shards[0].report["run"].get("disqualify_tolerance")
    if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
        # A run refuses a negative one (every task would read newly disqualified).
        raise ValueError(f"{shards[0].name}: run.disqualify_tolerance is {_show(tolerance)}, "
                         "expected a whole number from 0")
    not_evaluated = _pooled_not_evaluated(shards)
    card = build_scorecard(results, registry=recorded_registry(specs),
                           disqualify_tolerance=tolerance,
                           errored=errored_pairs(not_evaluated),
                           no_output=no_output_pairs(not_evaluated))
    card.notes.extend(run_notes(card, not_evaluated))
    merged: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "run": _run(shards, card),
        "models": models_section(card, not_evaluated),
        "model_order": _model_order(shards, card),
        "metric_specs": {task: specs[task] for task in card.task_order if task in specs},
        "golden_cases": golden,
        "cases": [entries[(r.model, r.case_id, r.run)] for r in card.results],
        "not_evaluated": not_evaluated,
        "notes": list(card.notes),
        "judge_errors": {
            "verdicts": sum(1 for r in card.results for rec in r.judge_records
                            if rec.get("judge_error")),
            "outputs_without_task_score": sum(1 for r in card.results if r.incomplete),
        },
    }
    # Sections the merge does not know are the same in every shard (checked above).
    for key, value in shards[0].report.items():
        if key not in DERIVED and key not in PER_SHARD:
            merged[key] = value
    return plain(merged)  # type: ignore[no-any-return]


def merged_scorecard_text(report: Mapping[str, Any], *, width: int | None = None,
                          color: bool = False) -> str:
    """The scorecard table of a (merged) report for the terminal, under a short header."""
    card = scorecard_of(report)
    run = report["run"]
    cases = {(r.task, r.case_id) for r in card.results}
    header = [
        f"judge: {_get(run, ('judge', 'description'))}",
        f"embeddings: {_get(run, ('embeddings', 'description'))}",
        f"results: {count(len(card.results), 'output')} scored "
        f"({count(len(card.models), 'model')}, {count(len(cases), 'case')})",
    ]
    # What the judge could not score, was not scored or not evaluated, as a run words it.
    if isinstance(judge := run.get("judge_usage"), Mapping):
        # Whether the run had the judge model's price (a report without `priced`: an unknown
        # spend with every usage reported lacked one).
        header += judge_lines(judge, priced=bool(judge.get("priced", judge.get(
            "spent_usd") is not None or bool(judge.get("requests_without_usage")))))
    header += judge_error_lines(card.results)
    header += runs_lines(card, _get(run, ("settings", "pass_rule")),
                         report.get("not_evaluated", []))
    if isinstance(repeats := run.get("judge_repeats"), Mapping):
        header += judge_repeat_lines(repeats)
    header += unscored_lines(card, benchmarks=_get(run, ("benchmarks",)) is not False)
    header += partial_run_lines(run)
    header += not_evaluated_lines(report.get("not_evaluated", []))
    card.notes.extend(run_notes(card, report.get("not_evaluated", [])))
    return render_scorecard(card, color=color, header=header,
                            title="callqa scorecard (merged report)",
                            order=[str(m) for m in report.get("model_order", [])], width=width)

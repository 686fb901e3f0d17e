"""The baseline gate in words: the warnings that name how two reports differ (versions,
judge, embedder, metric sets, the Layer 2 benchmarks on or off), the terminal's lines for a
gate (``compare_reports``'s dict), one line per regression and per comparison the gate
could not make, and the counts the markdown summary shares with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .gate_cases import (
    BASELINE_INVALID_CASE_FILES,
    BASELINE_NOT_SELECTED,
    BASELINE_SHARD,
    BASELINE_STOPPED_EARLY,
    BENCHMARKS_OFF,
    CASES_MOVED,
    EMBEDDER,
    INVALID_CASE_FILES,
    JUDGE,
    NO_OUTPUT,
    NOT_SELECTED,
    OTHER_TOOL,
    STOPPED_EARLY,
    TEST_ERRORS,
    UNDECIDED_CAUSES,
)
from .settings import count

# How many case ids a line names before it counts the rest.
NAMED_CASES = 3
# How many comparisons the gate could not make the terminal lists; the report has them all.
MAX_INCOMPLETE_LINES = 10
# Why a pair was not evaluated, in a line of its own and in the verdict's count of them.
_NOT_EVALUATED = {TEST_ERRORS: ("test errors: a failure of the tool, not of the model",
                                " for test errors"),
                  NO_OUTPUT: ("no output: of unknown result, not a pass", ", no output")}
# Why the cases only the baseline has were not evaluated in this run: the count's words for
# each cause. Several may hold at once ("invalid case files and run stopped early").
_UNREACHED = {INVALID_CASE_FILES: "for invalid case files",
              STOPPED_EARLY: "in a run stopped early",
              NOT_SELECTED: "outside the run's selection",
              CASES_MOVED: "outside the run's cases directory"}
_UNREACHED_WHY = "each case only the baseline has counts here, not as removed nor as a pass"
# Why the cases only this run has were not evaluated in the baseline, a partial run.
_UNREACHED_THEN = {BASELINE_INVALID_CASE_FILES: "for the baseline's invalid case files",
                   BASELINE_STOPPED_EARLY: "in a baseline stopped early",
                   BASELINE_NOT_SELECTED: "outside the baseline's selection",
                   BASELINE_SHARD: "outside the baseline's shard"}
_UNREACHED_THEN_WHY = "each case only this run has counts here, not as added nor as a pass"
# What may hold a gate open with no failure of the tool: the inputs or settings of the run,
# or of the baseline (another judge or embedder included).
_NOT_TOOL_FAILURES = {NO_OUTPUT: "missing outputs",
                      INVALID_CASE_FILES: "case files that could not be read",
                      STOPPED_EARLY: "a run that stopped early",
                      NOT_SELECTED: "a run narrowed to part of the suite",
                      CASES_MOVED: "another cases directory than the baseline's",
                      BENCHMARKS_OFF: "Layer 2 benchmarks the baseline scored, off in this run",
                      BASELINE_INVALID_CASE_FILES: "case files the baseline could not read",
                      BASELINE_STOPPED_EARLY: "a baseline that stopped early",
                      BASELINE_NOT_SELECTED: "a baseline narrowed to part of the suite",
                      BASELINE_SHARD: "a baseline of one shard",
                      **{why: why for why in OTHER_TOOL.values()}}
# The run settings that move figures with the outputs unchanged: where the report's run
# keeps each, and its words.
_FIGURE_SETTINGS = (("judge_usage", "mode", "judge mode"), ("settings", "runs", "runs per pair"),
                    ("settings", "judge_repeats", "judge repeats"))


def _identity(section: Any) -> tuple[Any, Any]:
    section = section if isinstance(section, Mapping) else {}
    # The heuristic judge reads no model: a judge model configured for a later switch to
    # the LLM judge is no other judge.
    if section.get("name") == "heuristic":
        return "heuristic", None
    return section.get("name"), section.get("model")


def changed_tools(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """Which of the judge and the embedder (``JUDGE``, ``EMBEDDER``) the two reports' runs
    name differently (by name and model)."""
    now, then = current.get("run") or {}, baseline.get("run") or {}
    return [key for key in (JUDGE, EMBEDDER) if _identity(then.get(key)) != _identity(now.get(key))]


def _setting(run: Mapping[str, Any], where: str, key: str) -> Any:
    section = run.get(where)
    return section.get(key) if isinstance(section, Mapping) else None


def difference_warnings(current: Mapping[str, Any], baseline: Mapping[str, Any],
                        name: str) -> list[str]:
    """How the two reports differ beyond their cases, each in a warning: other versions,
    another judge or embedder (whose figures are not compared), another cases directory,
    judge mode, number of runs or judge repeats, another metric set for a task, the Layer 2
    benchmarks switched on in one run and off in the other."""
    warnings = []
    now, then = current.get("run") or {}, baseline.get("run") or {}
    versions_now, versions_then = now.get("versions") or {}, then.get("versions") or {}
    for key in sorted(set(versions_now) | set(versions_then)):
        if key in ("python", "pytest"):
            continue
        if versions_now.get(key) != versions_then.get(key):
            warnings.append(f"{name} has {key} {versions_then.get(key)!r}, this run "
                            f"{versions_now.get(key)!r}: compared on what they share")
    for key in changed_tools(current, baseline):
        a, b = (then.get(key) or {}), (now.get(key) or {})
        before = a.get("description") or a.get("name")
        after = b.get("description") or b.get("name")
        warnings.append(f"{name} was scored with {key} {before!r}, this run with {after!r}: "
                        "the figures that depend on it are not compared")
    cases_then, cases_now = _setting(then, "settings", "cases"), _setting(now, "settings", "cases")
    if cases_then is not None and cases_now is not None and cases_then != cases_now:
        warnings.append(f"{name} was run with the cases directory {cases_then!r}, this run with "
                        f"{cases_now!r}: a case only {name} has is not evaluated, not removed")
    for where, key, words in _FIGURE_SETTINGS:
        before, after = _setting(then, where, key), _setting(now, where, key)
        if before is not None and after is not None and before != after:
            warnings.append(f"{name} was run with {words} {before!r}, this run with "
                            f"{after!r}: a change may come from that, not from the model")
    benchmarks_then, benchmarks_now = then.get("benchmarks"), now.get("benchmarks")
    if isinstance(benchmarks_then, bool) and isinstance(benchmarks_now, bool) \
            and benchmarks_then != benchmarks_now:
        warnings.append(f"{name} was run with the Layer 2 benchmarks, this run without them "
                        f"(--no-callqa-benchmarks): those {name} scored are not compared"
                        if benchmarks_then else
                        f"{name} was run without the Layer 2 benchmarks, this run with them: "
                        "they are not compared")
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


def fmt(value: Any) -> str:
    """A figure as the gate's lines show it: three decimals (three digits from 100 up)."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) >= 100 else f"{value:.3f}"
    return str(value)


def figure(value: Any, percent: bool = False) -> str:
    """:func:`fmt`, or for a metric shown in percent (a rate) the percentage the scorecard
    shows beside it."""
    if percent and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value * 100:.1f}%"
    return fmt(value)


def change(delta: Any, percent: bool = False) -> str:
    """A change, in percentage points for a metric shown in percent ("+9.3 pts": "+0.093"
    beside "9.3%" read as a rise of a tenth of a point)."""
    if not isinstance(delta, (int, float)) or isinstance(delta, bool):
        return "–"
    return f"{delta * 100:+.1f} pts" if percent else f"{delta:+.3f}"


def bounds(interval: Any, percent: bool = False) -> str:
    """An interval of a change, in the change's units; empty when there is none."""
    if not (isinstance(interval, (list, tuple)) and len(interval) == 2
            and all(isinstance(v, (int, float)) for v in interval)):
        return ""
    if percent:
        return f"[{interval[0] * 100:+.1f}, {interval[1] * 100:+.1f}] pts"
    return f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


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
        return (f"{head}: newly disqualified ({fmt(reg.get('old'))} → "
                f"{fmt(reg.get('new'))} blocked cases)")
    pct = reg.get("percent") is True
    cases = "; ".join(f"{m['case_id']} {figure(m['old'], pct)} → {figure(m['new'], pct)}"
                      for m in moved)
    # A figure a judge error left unknown has no delta: the shared cases' change stands in.
    delta = reg.get("delta")
    delta = reg.get("shared_delta") if delta is None else delta
    interval = bounds(reg.get("interval"), pct)
    return (f"{head}: {figure(reg['old'], pct)} → {figure(reg['new'], pct)} (Δ "
            + change(delta, pct)
            + (f", {confidence} interval {interval}" if interval else "")
            + f", {reg['shared_cases']} shared cases)"
            + (f"; moved most: {cases}" if cases else ""))


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:NAMED_CASES])
    return shown + (f" and {len(ids) - NAMED_CASES} more" if len(ids) > NAMED_CASES else "")


def _not_evaluated(reason: str) -> tuple[str, str]:
    """Why cases were not evaluated, for their own line and for the verdict's count."""
    if reason in _NOT_EVALUATED:
        return _NOT_EVALUATED[reason]
    causes = reason.split(" and ")
    if set(causes) <= set(_UNREACHED_THEN):
        return (f"{reason}: {_UNREACHED_THEN_WHY}",
                " " + ", ".join(_UNREACHED_THEN[c] for c in causes))
    if not set(causes) <= set(_UNREACHED):
        return reason, f" for {reason}"
    if causes == [INVALID_CASE_FILES]:
        why = ("the baseline does not say which cases they held, so each case only it has "
               "counts here, not as removed nor as a pass")
    else:
        why = _UNREACHED_WHY
    return f"{reason}: {why}", " " + ", ".join(_UNREACHED[c] for c in causes)


def incomplete_line(entry: Mapping[str, Any]) -> str:
    """One comparison the gate could not make, in words: what, why, on which cases."""
    head = " · ".join(str(entry[k]) for k in ("model", "task", "metric") if entry.get(k))
    if entry.get("kind") in ("new blocker", "new disqualification"):
        head += f" ({entry['kind']} check)"
    # The run side of the cases the run never reached holds cases only the baseline has;
    # the baseline side of those the baseline never reached, cases only this run has.
    causes = set(str(entry.get("reason")).split(" and "))
    unreached = entry.get("kind") == "not evaluated" and causes <= set(_UNREACHED)
    unreached_then = entry.get("kind") == "not evaluated" and causes <= set(_UNREACHED_THEN)
    sides = " and ".join(f"{count(len(ids), 'case')} {where} ({_named(ids)})"
                         for side, where in (("run", "only in the baseline" if unreached
                                              else "in this run"),
                                             ("baseline", "only in this run" if unreached_then
                                              else "in the baseline"))
                         if (ids := list(entry.get(side) or [])))
    if entry.get("kind") == "not evaluated":
        why = _not_evaluated(str(entry.get("reason")))[0]
        if entry.get("detail"):
            # Named before the explanation, which a markdown cell may cut short.
            label, _, rest = why.partition(": ")
            why = f"{label} ({entry['detail']})" + (f": {rest}" if rest else "")
        return f"{head}: {sides} not evaluated ({why})"
    return f"{head}: {entry.get('reason')}" + (f" on {sides}" if sides else "")


def incomplete_cause(gate: Mapping[str, Any]) -> str:
    """What held the gate open, in a word: the tool's failure (a judge error, raised code, a
    test error), or only what no tool failed at: outputs the run did not have, benchmarks
    the baseline scored and the run had switched off."""
    entries = [e for e in gate.get("incomplete") or [] if isinstance(e, Mapping)]
    # A reason may join several ("invalid case files and run stopped early").
    reasons = {r for e in entries for r in str(e.get("reason")).split(" and ")}
    if entries and reasons <= set(_NOT_TOOL_FAILURES):
        causes = [why for reason, why in _NOT_TOOL_FAILURES.items() if reason in reasons]
        return " and ".join(causes) + ": not a pass, nor the model's failure"
    return "a failure of the tool, not of the model"


def incomplete_summary(gate: Mapping[str, Any]) -> str:
    """The comparisons the gate could not make, counted, and why:
    ``2 comparisons could not be made for judge errors on 5 cases``."""
    entries = [e for e in gate.get("incomplete") or [] if isinstance(e, Mapping)]
    parts = []

    def group(entry: Mapping[str, Any]) -> tuple[bool, str]:
        return entry.get("kind") == "not evaluated", str(entry.get("reason"))

    # The comparisons not made come first, by their reason (a judge error, a custom blocker
    # metric whose code raised, a blocker no estimate was made of: gate_cases.py, or several
    # of them in one comparison); the pairs not evaluated (a test error, no output) last.
    groups = sorted({group(e) for e in entries}, key=lambda g: (
        g[0], UNDECIDED_CAUSES.index(g[1]) if g[1] in UNDECIDED_CAUSES
        else len(UNDECIDED_CAUSES), g[1]))
    for unevaluated, reason in groups:
        found = [e for e in entries if group(e) == (unevaluated, reason)]
        # A case compared under its task and, for its Layer 2 criteria, under "benchmarks"
        # is one case.
        cases = {(e.get("model"), c) for e in found
                 for c in [*(e.get("run") or []), *(e.get("baseline") or [])]}
        if unevaluated:
            why = _not_evaluated(reason)[1]
            parts.append(f"{count(len(cases), 'case')} not evaluated{why}")
        else:
            parts.append(f"{count(len(found), 'comparison')} could not be made for {reason} "
                         f"on {count(len(cases), 'case')}")
    return "; ".join(parts)


def change_counts(gate: Mapping[str, Any]) -> list[str]:
    """What the two runs do not share, counted: ``["2 cases added", "1 model removed"]``."""
    changes = []
    for key, noun, change in (("added_cases", "case", "added"),
                              ("removed_cases", "case", "removed"),
                              ("added_models", "model", "added"),
                              ("removed_models", "model", "removed")):
        items = gate.get(key) or []
        if items:
            changes.append(f"{count(len(items), noun)} {change}")
    return changes


def nothing_compared(gate: Mapping[str, Any]) -> str:
    """For a pass: what says it compared nothing — every check with too few shared cases, or
    no check at all (no model and task in both reports: a model renamed, say) — else
    nothing. "No regression" alone would read as "nothing got worse"."""
    checks = [c for c in gate.get("checks") or [] if isinstance(c, Mapping)]
    if any(c.get("status") != "too few cases" for c in checks):
        return ""
    if checks:
        return " found, but no comparison could be made"
    changes = change_counts(gate)
    return (" found, but no comparison could be made: no model and task shared with the "
            "baseline" + (f" ({', '.join(changes)})" if changes else ""))


def _verdict_line(gate: Mapping[str, Any]) -> str:
    where = f" against {gate['baseline']}" if gate.get("baseline") else ""
    verdict = str(gate.get("verdict", "pass"))
    regressions = len(gate.get("regressions") or [])
    line = f"callqa gate{where}: {verdict.upper()}"
    if regressions:
        line += f" — {count(regressions, 'regression')}"
    elif verdict == "incomplete":
        line += (" — no regression in what could be compared, but "
                 + incomplete_summary(gate))
    else:
        line += " — no regression" + nothing_compared(gate)
    if gate.get("mode") == "report" and verdict != "pass":
        line += " (report mode: the run's exit status is not changed)"
    elif verdict == "incomplete":
        # Not a pass, and not a failure of the model either: exit 4 (see gather.py).
        line += f" — {incomplete_cause(gate)}: the run exits 4 unless it failed"
    return line


def gate_lines(gate: Mapping[str, Any]) -> list[str]:
    """The gate in a few terminal lines: the verdict, one line per regression and per
    comparison it could not make, what was added or removed, and the warnings."""
    lines = [_verdict_line(gate)]
    label = confidence_label(gate)
    lines += [f"  regression: {regression_line(reg, label)}"
              for reg in gate.get("regressions") or []]
    unmade = [e for e in gate.get("incomplete") or [] if isinstance(e, Mapping)]
    lines += [f"  incomplete: {incomplete_line(e)}" for e in unmade[:MAX_INCOMPLETE_LINES]]
    if len(unmade) > MAX_INCOMPLETE_LINES:
        lines.append(f"  … and {len(unmade) - MAX_INCOMPLETE_LINES} more comparisons not "
                     "made (the JSON report's gate lists them under \"incomplete\")")
    checks = gate.get("checks") or []
    statuses = [c.get("status") for c in checks]
    lines.append(f"  {len(checks)} comparisons: {statuses.count('improvement')} improved, "
                 f"{statuses.count('too few cases')} with too few shared cases to tell"
                 + (f", {n} incomplete (listed above)"
                    if (n := statuses.count("incomplete")) else ""))
    changes = change_counts(gate)
    if changes:
        lines.append("  " + ", ".join(changes))
    lines += [f"  warning: {w}" for w in gate.get("warnings") or []]
    return lines

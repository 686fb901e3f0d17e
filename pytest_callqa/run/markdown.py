"""A short markdown summary of a run, for a pull-request comment or ``$GITHUB_STEP_SUMMARY``:
the gate's verdict and regressions, the judge calibration's verdict and table (of a
calibrating run), one row per model, and the few worst cases.

GitHub refuses a comment longer than 65,536 characters, so the text is kept under
``MAX_CHARS``: long lists are cut to their first rows, and whatever still does not fit is
dropped at a line boundary with a note saying so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..engine.report import missing_cases
from ..engine.scorecard import gap_causes
from .calibration_view import HEADER, calibration_view
from .gaps import budget_cut, partial_run_lines, renormalised_note, report_judge_errors
from .gate_text import (
    bounds,
    change_counts,
    confidence_label,
    figure,
    incomplete_cause,
    incomplete_line,
    incomplete_summary,
    nothing_compared,
    regression_line,
)
from .settings import count

MAX_CHARS = 65_000
MAX_CELL = 200
MAX_REGRESSIONS = 30
MAX_WARNINGS = 10
MAX_INCOMPLETE = 10
WORST_CASES = 8
_TRUNCATED = "\n\n> … truncated: {n} more lines. The JSON report has everything."
_CLOSE = "\n\n</details>"


def _number(value: float) -> str:
    """A figure as the tables show it: three decimals, or three digits from 100 up."""
    return f"{value:.3g}" if abs(value) >= 100 else f"{value:.3f}"


# What would make a model name, case id or reason act in the pull request's comment rather
# than be shown: an HTML tag or autolink (< >), a code span (`), a link or image ("](" after
# its text), a table cell's end (|), a character reference (&#x202E; is a bidi override, which
# names may not hold), emphasis and strike-through (* ~, and _ at a word's edge: inside a word,
# as in metric ids, it is no emphasis). Escaped, they show as written.
_ACTIVE = re.compile(r"([\\`<>|&*~]|(?<=\])\(|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def _cell(value: Any) -> str:
    """Text that stays inside one table cell, shown as written: no tag, code span, link or
    image of its own, and an ``@`` kept from mentioning (notifying) a GitHub user or team."""
    if value is None:
        return "–"
    return _cut(_inert(_number(value) if isinstance(value, float) else str(value)))


def _inert(text: str) -> str:
    """``text`` on one line, shown as written (see :func:`_cell`), whatever its length."""
    # A lone carriage return ends a table row in GitHub's markdown as a newline does.
    text = _ACTIVE.sub(r"\\\1", text.replace("\r", " ").replace("\n", " "))
    return text.replace("@", "@\u2060")


def _code(value: Any) -> str:
    """Text as a code span (shown as written; markdown inside it is not read)."""
    text = str(value).replace("`", "'").replace("\r", " ").replace("\n", " ")
    return f"`{_cut(text)}`"


def _cut(text: str) -> str:
    """``text`` at most :data:`MAX_CELL` characters long, an ellipsis marking a cut."""
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(list(header)), "|" + "---|" * len(header), *(_row(r) for r in rows)]


def _more(shown: int, total: int, what: str) -> list[str]:
    # The blank line ends a table above: GitHub would read the note as one more row.
    return ["", f"_… and {total - shown} more {what}._"] if total > shown else []


def _gate_section(gate: Mapping[str, Any]) -> list[str]:
    regressions = list(gate.get("regressions") or [])
    failed = gate.get("verdict") == "fail"
    incomplete = gate.get("verdict") == "incomplete"
    where = f" against {_code(gate['baseline'])}" if gate.get("baseline") else ""
    count = len(regressions)
    checks = list(gate.get("checks") or [])
    few = sum(1 for c in checks if c.get("status") == "too few cases")
    unmade = [e for e in gate.get("incomplete") or [] if isinstance(e, Mapping)]
    if gate.get("problem"):
        # The baseline could not be read at the end, or the comparison broke: no verdict.
        return [f"**⚠️ Gate not run**{where}: {_cell(str(gate['problem']))}", ""]
    if failed:
        verdict = f"**Gate: ❌ fail**{where} — {count} regression{'s' if count != 1 else ''}"
    elif incomplete:
        # Neither a pass nor the model's failure: the tool could not make every comparison.
        verdict = (f"**Gate: ⚠️ incomplete**{where} — no regression in what could be "
                   f"compared, but {_cell(incomplete_summary(gate))}: "
                   f"{incomplete_cause(gate)}")
    else:
        verdict = f"**Gate: ✅ pass**{where} — no regression{_cell(nothing_compared(gate))}"
    if gate.get("mode") == "report" and (failed or incomplete):
        verdict += " (report mode: the run does not fail on it)"
    lines = [verdict, ""]
    if unmade:
        lines += [f"- not compared: {_cell(incomplete_line(e))}"
                  for e in unmade[:MAX_INCOMPLETE]]
        lines += _more(min(len(unmade), MAX_INCOMPLETE), len(unmade), "comparisons not made")
        lines.append("")
    if few:
        # The terminal counts them; a reviewer reading only the comment must see them too
        # (renamed case ids leave a pass that compared next to nothing).
        min_cases = (gate.get("bootstrap") or {}).get("min_cases", 5)
        lines += [f"⚠️ {few} of {len(checks)} comparisons could not be made: fewer than "
                  f"{min_cases} cases shared with the baseline, too few to tell a change "
                  "from noise.", ""]
    metric_rows, other = [], []
    for reg in regressions[:MAX_REGRESSIONS]:
        if reg.get("kind", "metric") == "metric":
            pct = reg.get("percent") is True
            moved = ", ".join(f"{m['case_id']} ({figure(m.get('old'), pct)} → "
                              f"{figure(m.get('new'), pct)})"
                              for m in reg.get("moved_cases") or [])
            metric_rows.append([
                reg["model"], reg["task"], reg["metric"],
                f"{figure(reg.get('old'), pct)} → {figure(reg.get('new'), pct)}",
                bounds(reg.get("interval"), pct) or None,
                reg.get("shared_cases"), moved,
            ])
        else:
            # Model names and case ids, as in the table: a new blocker's line rendered a
            # model's "@team" as a mention and its "<details>" as a tag.
            other.append(f"- {_inert(regression_line(reg, confidence_label(gate)))}")
    if metric_rows:
        lines += _table(["model", "task", "metric", "baseline → now",
                         f"{confidence_label(gate)} interval of Δ",
                         "shared cases", "moved most"], metric_rows)
        lines.append("")
    lines += other
    lines += _more(min(count, MAX_REGRESSIONS), count, "regressions")
    changes = change_counts(gate)
    if changes:
        lines += ["", "Compared with the baseline: " + ", ".join(changes) + "."]
    warnings = list(gate.get("warnings") or [])
    if warnings:
        lines += ["", "<details><summary>Gate warnings</summary>", ""]
        lines += [f"- {_cell(w)}" for w in warnings[:MAX_WARNINGS]]
        lines += _more(min(len(warnings), MAX_WARNINGS), len(warnings), "warnings")
        lines += ["", "</details>"]
    return [*lines, ""]


# The calibration's verdict as the gate's is marked.
_CALIBRATION_MARKS = {"pass": "✅ pass", "fail": "❌ fail", "incomplete": "⚠️ incomplete"}


def _calibration_section(report: Mapping[str, Any]) -> list[str]:
    """The judge calibration of a calibrating run: its verdict and the terminal's lines
    saying why, then a row per labelled metric; nothing for a run that did not calibrate."""
    view = calibration_view(report)
    if view is None:
        return []
    mark = _CALIBRATION_MARKS.get(view.verdict, _cell(view.verdict))
    # The judge's description and the labelled model's name are the user's text: shown as
    # written, and whole (the verdict lines too: a cut reason would hide why the run failed).
    return [f"**Judge calibration: {mark}** — {_inert(view.against)}", "",
            *(f"- {_inert(line)}" for line in view.lines), "",
            *_table(list(HEADER), view.rows), ""]


def _model_order(report: Mapping[str, Any]) -> list[str]:
    models = report.get("models") or {}
    order = [m for m in report.get("model_order") or [] if m in models]
    return order + [m for m in models if m not in order]


def _models_section(report: Mapping[str, Any]) -> list[str]:
    models = report.get("models") or {}
    order = _model_order(report)
    tasks: list[str] = []
    for name in order:
        tasks += [t for t in models[name].get("tasks") or {} if t not in tasks]
    rows = []
    for name in order:
        card = models[name]
        row: list[Any] = [name]
        for task in tasks:
            agg = (card.get("tasks") or {}).get(task)
            if agg is None:
                row.append(None)
                continue
            row.append(_task_cell(agg))
        aggs = (card.get("tasks") or {}).values()
        blocked = sum(int(a.get("blocked_cases") or 0) for a in aggs)
        undecided = sum(int(a.get("blocker_unknown_cases") or 0) for a in aggs)
        cost = card.get("cost_per_1000_calls")
        gaps = [str(t) for t in card.get("incomplete_tasks") or []]
        row += [_final_cell(card, "a", gaps),
                _final_cell(card, "b", [t for t in gaps if t != "benchmarks"]),
                f"{blocked} (+{undecided} undecided)" if undecided else blocked,
                None if cost is None else f"${cost:.4f}"]
        rows.append(row)
    return ["### Scorecard", "",
            *_table(["model", *tasks, "final A", "final B", "blocked cases",
                     "cost / 1,000 calls"], rows),
            "", "Task scores 0–1 [95% bootstrap interval over cases]; ⛔ marks a task "
            "disqualified by blockers, ⛔? one whose disqualification is unknown (a blocker "
            "could not be decided); E a figure unknown or missing cases because the judge "
            "could not score them or their test errored (a failure of the tool, not of the "
            "model), or they have no output (not evaluated, not a pass).", ""]


def _task_cell(agg: Mapping[str, Any]) -> str:
    text = _cell(agg.get("score")) + _interval(agg.get("interval"))
    # As the terminal and the HTML report: an invalid output scores 0 in the task score.
    if agg.get("invalid_cases"):
        text += f" ({agg['invalid_cases']}/{agg.get('cases')} invalid)"
    text += missing_cases(
        agg.get("cases"), int(agg.get("judge_error_cases") or 0),
        int(agg.get("errored_cases") or 0), int(agg.get("no_output_cases") or 0))
    unscored = agg.get("unscored_cases")
    if unscored:
        text += f" ({unscored}/{agg.get('cases')} not scored)"
    if agg.get("disqualified"):
        return f"{text} ⛔"
    return f"{text} ⛔?" if agg.get("disqualification_unknown") else text


def _final_cell(card: Mapping[str, Any], option: str, gaps: list[str]) -> str:
    """A final score with its interval; without one, E and the tasks whose judge errors,
    errored tests or missing outputs leave it unknown."""
    value = card.get(f"final_score_{option}")
    if value is None and gaps:
        split = gap_causes(gaps, set(card.get("errored_tasks") or []),
                           set(card.get("no_output_tasks") or []))
        causes = [f"{what} in {', '.join(tasks)}" for what, tasks in zip(
            ("judge errors", "test errors", "missing outputs"), split, strict=True) if tasks]
        return f"E ({'; '.join(causes)})"
    return (_cell(value) + _interval(card.get(f"final_interval_{option}"))
            + renormalised_note(card, value))


def _interval(interval: Any) -> str:
    """`` [low, high]`` of a 95 % interval at its value's precision, or nothing."""
    if isinstance(interval, Sequence) and len(interval) == 2 and all(
            isinstance(v, (int, float)) for v in interval):
        return f" [{_number(interval[0])}, {_number(interval[1])}]"
    return ""


def _why(case: Mapping[str, Any]) -> str:
    reasons = []
    if case.get("judge_errors"):
        reasons.append("judge error: " + ", ".join(map(str, case["judge_errors"])))
    if case.get("blockers"):
        reasons.append("blocker: " + ", ".join(map(str, case["blockers"])))
    if not case.get("valid", True):
        reasons.append("invalid output")
    return "; ".join(reasons) or "lowest score"


def _worst_section(report: Mapping[str, Any]) -> list[str]:
    cases = [c for c in report.get("cases") or [] if isinstance(c, dict)]

    def score(case: Mapping[str, Any]) -> float:
        value = case.get("score")
        return float(value) if isinstance(value, (int, float)) else 0.0

    # A few blocked cases and judge errors first (each worth a look), then the lowest scores.
    blocked = sorted((c for c in cases if c.get("blockers")), key=score)[:WORST_CASES // 2]
    errors = [c for c in cases if c.get("judge_errors") and not c.get("blockers")][:2]
    listed = {id(c) for c in blocked + errors}
    # A score nobody measured (the judge could not give it, or none of its metrics could be
    # scored) is no low score: an invalid output's counts 0, an unknown one is left out.
    lowest = sorted((c for c in cases if id(c) not in listed
                     and (c.get("score") is not None or not c.get("valid", True))), key=score)
    worst = (blocked + errors + lowest)[:WORST_CASES]
    if not worst:
        return []
    rows = [[c.get("model"), c.get("task"), c.get("case_id"), c.get("score"), _why(c)]
            for c in worst]
    return ["### Worst cases", "", *_table(["model", "task", "case", "score", "why"], rows),
            *_more(len(worst), len(cases), "cases in the JSON report"), ""]


def _judge_error_lines(report: Mapping[str, Any]) -> list[str]:
    """The judge-errors line (:func:`gaps.report_judge_errors`), marked for the comment."""
    line = report_judge_errors(report)
    return [] if line is None else [f"⚠️ {line}", ""]


def _budget_lines(report: Mapping[str, Any]) -> list[str]:
    """What the spent budget kept the run from evaluating (:func:`gaps.budget_cut`),
    marked for the comment: the job exits 4, and the comment says why."""
    line = budget_cut(report)
    return [] if line is None else [f"⚠️ {line}", ""]


def _partial_run_lines(run: Mapping[str, Any]) -> list[str]:
    """The lines saying the run holds only part of its tests' results
    (:func:`gaps.partial_run_lines`), marked for the comment: without them a partial run's
    table reads as complete, and a model none of whose tests ran as one never configured."""
    lines = []
    for line in partial_run_lines(run):
        # A -k expression and node ids are the user's text: shown as written.
        lines += [f"⚠️ {_inert(line)}", ""]
    return lines


def _fit(lines: list[str], limit: int) -> str:
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    # Room for the note, and to close a collapsed block the cut falls in: left open, the
    # note (and the rest of the comment) was hidden inside the gate's warnings.
    note_room = len(_TRUNCATED.format(n=len(lines))) + len(_CLOSE)
    kept: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 + note_room > limit:
            break
        kept.append(line)
        size += len(line) + 1
    still_open = sum(line.startswith("<details>") for line in kept) - kept.count("</details>")
    return ("\n".join(kept) + _CLOSE * (still_open > 0)
            + _TRUNCATED.format(n=len(lines) - len(kept)))


def render_markdown(report: Mapping[str, Any], gate: Mapping[str, Any] | None = None, *,
                    limit: int = MAX_CHARS) -> str:
    """The run's summary as GitHub-flavoured markdown, at most ``limit`` characters: the
    part of the suite a partial run holds, the gate (when given), the judge calibration
    (when the run calibrated), a row per model with its task scores, final scores, blocked
    cases and cost, and the worst cases."""
    run = report.get("run") or {}
    judge = (run.get("judge") or {}).get("description") or (run.get("judge") or {}).get("name")
    cases = report.get("cases") or []
    models = report.get("models") or {}
    lines = ["## callqa evaluation", "",
             f"{count(len(cases), 'output')} scored, {count(len(models), 'model')}"
             + (f"; judge: {_cell(judge)}" if judge else ""), "", *_partial_run_lines(run),
             *_judge_error_lines(report), *_budget_lines(report)]
    if gate is not None:
        lines += _gate_section(gate)
    lines += _calibration_section(report)
    if models:
        lines += _models_section(report)
    lines += _worst_section(report)
    missing = report.get("not_evaluated") or []
    if missing:
        lines.append(f"{len(missing)} not evaluated (missing outputs, test errors, runs not "
                     "produced or invalid case files).")
    return _fit(lines, limit)

"""The HTML report: one self-contained file a CI job keeps as an artifact and anyone opens
offline — the scorecard (ratings coloured, the blockers fired listed first, baseline deltas
when a gate ran), the judge calibration of a calibrating run, a bar chart per metric across
models, and every case's drill-down.

Nothing is fetched: CSS and script are inline, charts are inline SVG, and the page's
Content-Security-Policy allows only its own style and script (by hash), so even a stray URL
in a model's output cannot load anything. Every text of the report is escaped.

Opening fast with thousands of cases: each case is a collapsed ``<details>`` whose summary
line is static markup; its body is built from JSON the first time it is opened
(``html_cases``), so the page starts with a few elements per case. Golden-case data is
stored once per case, not once per model.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .calibration_view import calibration_html
from .gaps import budget_cut, partial_run_lines, renormalised_note, report_judge_errors
from .gate_text import bounds, change, figure, incomplete_line, nothing_compared
from .html_cases import (
    NOT_SCORED,
    SCRIPT,
    HtmlReportError,
    cases_section,
    check_report,
    edges,
    esc,
    fmt,
    rating_of,
    unit,
)

__all__ = ["HtmlReportError", "fmt", "render_html", "scale_top"]

# Rating marks beside the colour, so a rating stays readable in print or to colour-blind eyes.
MARKS = {"good": "", "acceptable": " ~", "fail": " x", "blocker": " !!"}
# Chart geometry (px): label column, bar track, value column, bar height.
LABEL_W, TRACK_W, VALUE_W, BAR_H = 120, 150, 64, 14

CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;padding:16px;
max-width:1400px;color:#1b1b1b;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:16px 0 6px}.meta{color:#555;margin:2px 0}nav a{margin-right:12px}
table{border-collapse:collapse;margin:6px 0}th,td{padding:3px 8px;border:1px solid #ddd;
text-align:left;vertical-align:top}thead th{background:#f3f3f3;position:sticky;top:0}
#scorecard-table td.cell{text-align:right;white-space:nowrap}
tr.section th{background:#e8eef7;text-transform:uppercase;font-size:12px;letter-spacing:.04em}
tr.score th,tr.score td{font-weight:600}.thr{color:#555;font-size:12px}
.ci{display:block;color:#666;font-size:11px;font-weight:400}
.r-good{background:#e3f4e4}.r-acceptable{background:#fff4d6}.r-fail{background:#fde0dc}
.r-blocker{background:#b71c1c;color:#fff;font-weight:700}
.rule{color:#b71c1c;font-weight:700}small.d{display:block;font-size:11px;color:#555}
small.d-regression{color:#b71c1c;font-weight:700}small.d-improvement{color:#2e7d32}
.r-blocker small.d{color:#fff}
.verdict{padding:8px 12px;border-radius:4px;font-weight:600;margin:8px 0}
.v-pass{background:#e3f4e4}.v-fail{background:#fde0dc}.v-incomplete{background:#fff4d6}
.v-none{background:#eee}.partial{background:#fff4d6;padding:4px 8px;margin:4px 0;font-weight:600}
.panel{border:1px solid #e0b4b4;background:#fff7f6;padding:6px 12px;margin:8px 0}
.charts{display:flex;flex-wrap:wrap;gap:10px}figure{margin:0;border:1px solid #eee;padding:4px}
figcaption{font-size:12px;font-weight:600;max-width:340px}svg text{font-size:11px}
.b-good{fill:#2e7d32}.b-acceptable{fill:#f0a800}.b-fail{fill:#d84315}.b-blocker{fill:#7f0000}
.b-none{fill:#8d99a6}.track{fill:#f1f1f1}.bar-thr{stroke:#1b1b1b;stroke-dasharray:3 2}
#filter{margin:6px 0 10px}#filter select,#filter input{margin-right:8px}
details.case{border-bottom:1px solid #eee}details.case summary{cursor:pointer;padding:2px 0}
details.case[open]{background:#fafafa;padding-bottom:8px}
.s{display:inline-block;min-width:78px;font-size:12px;font-weight:600}.s-blocked{color:#b71c1c}
.s-invalid{color:#d84315}.s-judge-error,.s-unscored{color:#6a1b9a}.s-scored{color:#2e7d32}
.pair{display:flex;gap:12px}.pair>div{flex:1;min-width:0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px;margin:4px 0;
max-height:420px;overflow:auto;font-size:12px}.rs{color:#555;font-size:12px}
"""


def _ci(interval: Any, scale: str = "") -> str:
    """A 95 % bootstrap interval under a value (nothing when there is none)."""
    if not isinstance(interval, Sequence) or len(interval) != 2 or not all(
            isinstance(v, (int, float)) for v in interval):
        return ""
    return (f'<span class="ci" title="95% bootstrap interval over cases">'
            f"[{esc(fmt(interval[0], scale))}, {esc(fmt(interval[1], scale))}]</span>")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# Only the page's own style and script run: no network source of any kind is allowed.
CSP = (f"default-src 'none'; style-src {_sha256(CSS)}; script-src {_sha256(SCRIPT)}; "
       "img-src data:")


def render_html(report: Mapping[str, Any], gate: Mapping[str, Any] | None = None) -> str:
    """The whole HTML page for a JSON report (schema ``callqa-report/1``).

    ``gate`` is the baseline comparison (``verdict``, ``mode``, ``baseline``, ``regressions``
    and ``checks`` — one per model, task and metric with ``old``, ``new``, ``delta`` and
    ``status``); without it the report's own ``"gate"`` is used when it has one. Raises
    :class:`HtmlReportError` naming the key when the report is not one this page can show.
    """
    check_report(report, gate)
    if gate is None and isinstance(report.get("gate"), Mapping):
        gate = report["gate"]
    page = _Page(report, gate)
    return page.render()


def _item(value: Any) -> str:
    if isinstance(value, Mapping):
        return " · ".join(str(v) for v in value.values())
    return str(value)


def _regression_row(reg: Mapping[str, Any]) -> str:
    pct = reg.get("percent") is True
    delta = reg.get("delta")
    moved = "; ".join(
        f"{m.get('case_id')} {figure(m.get('old'), pct)} → {figure(m.get('new'), pct)}"
        for m in reg.get("moved_cases") or [] if isinstance(m, Mapping))
    cells = [reg.get("kind", "metric"), reg.get("model"), reg.get("task"), reg.get("metric"),
             f"{figure(reg.get('old'), pct)} → {figure(reg.get('new'), pct)}",
             change(delta, pct) if isinstance(delta, (int, float)) else "",
             bounds(reg.get("interval"), pct), reg.get("shared_cases", ""), moved]
    return "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>"


def scale_top(scale: str, values: Sequence[float], bands: Mapping[str, Any] | None) -> float:
    """The bar chart's full length for a metric: the top of its scale (after the ``→`` of a
    normalised one), or for an open scale (counts) the largest value or band, at least 1."""
    numbers = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", scale.split("→")[-1])]
    if numbers:
        return max(numbers)
    if scale == "rate":
        return 1.0
    marks = [float(v) for v in (bands or {}).values()
             if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return max([1.0, *values, *marks])


def _not_evaluated(item: Any) -> str:
    """What a report's ``not_evaluated`` entry says was left out, and why."""
    if not isinstance(item, Mapping):
        return str(item)
    kind, reason = item.get("kind"), item.get("reason")
    if kind == "test_error":
        # Its reason is the error's alone; a missing output's names the pair.
        return f"{item.get('model')}, {item.get('case_id')}: the test errored: {reason}"
    if kind == "unproduced_run":
        return (f"{item.get('model')}, {item.get('case_id')}: run {item.get('run')} of "
                f"{item.get('runs')} could not be produced: {reason}")
    if kind == "invalid_case_file":
        problems = item.get("problems")
        shown = "; ".join(map(str, problems)) if isinstance(problems, list) else problems
        return f"invalid case file {item.get('path')}" + (f": {shown}" if shown else "")
    return str(reason if reason is not None else kind)


class _Page:
    def __init__(self, report: Mapping[str, Any], gate: Mapping[str, Any] | None) -> None:
        self.report = report
        self.gate = gate
        self.cards: Mapping[str, Any] = report["models"]
        order = [m for m in report["model_order"] if m in self.cards]
        self.models = order + sorted(m for m in self.cards if m not in order)
        specs: Mapping[str, Any] = report["metric_specs"]
        self.tasks = list(specs) + sorted(
            {t for c in self.cards.values() for t in c["tasks"]} - set(specs))
        self.specs: dict[str, dict[str, Mapping[str, Any]]] = {
            task: {s["id"]: s for s in specs.get(task, []) if isinstance(s, Mapping)}
            for task in self.tasks}
        self.checks: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for entry in (gate or {}).get("checks") or []:
            key = (str(entry.get("model")), str(entry.get("task")), str(entry.get("metric")))
            self.checks[key] = entry

    def render(self) -> str:
        run = self.report.get("run") or {}
        parts = [
            "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
            '<meta name="viewport" content="width=device-width,initial-scale=1">',
            f"<title>callqa report — {esc(', '.join(self.models))}</title>",
            f"<style>{CSS}</style></head><body>",
            "<h1>callqa report</h1>", *self._run_lines(run),
            '<nav><a href="#scorecard">Scorecard</a><a href="#charts">Charts</a>'
            '<a href="#cases">Cases</a></nav>',
            # Beside the gate: a calibration that failed or was incomplete set the exit code.
            self._gate(), calibration_html(self.report), self._blockers(), self._scorecard(),
            self._charts(),
            cases_section(self.report, self.models, self.tasks, self.specs),
            f"<script>{SCRIPT}</script></body></html>",
        ]
        return "\n".join(p for p in parts if p) + "\n"

    def metric_rows(self, task: str) -> list[tuple[str, Mapping[str, Any]]]:
        """The metrics a task shows: its specs in order (those marked ``shown: false`` left
        out) that some model has a value or entry for, then metrics without a spec."""
        present = {mid for m in self.models
                   for mid in (self.cards[m]["tasks"].get(task) or {}).get("metrics", {})}
        rows = [(mid, spec) for mid, spec in self.specs[task].items()
                if mid in present and spec.get("shown", True)]
        extra = sorted(present - set(self.specs[task]))
        return rows + [(mid, {"id": mid, "name": mid, "threshold": ""}) for mid in extra]

    def _run_lines(self, run: Mapping[str, Any]) -> list[str]:
        judge = (run.get("judge") or {}).get("description") or (run.get("judge") or {}).get(
            "name")
        embed = (run.get("embeddings") or {}).get("description")
        versions = ", ".join(f"{k} {v}" for k, v in (run.get("versions") or {}).items() if v)
        facts = [("started", run.get("started_at")), ("duration",
                  f"{run['duration_s']:.1f} s" if isinstance(run.get("duration_s"),
                                                              (int, float)) else None),
                 ("judge", judge), ("embeddings", embed), ("versions", versions),
                 ("models", len(self.models)), ("scored outputs", len(self.report["cases"]))]
        lines = ['<p class="meta">' + " · ".join(f"{esc(k)}: {esc(v)}" for k, v in facts
                                                  if v not in (None, "")) + "</p>"]
        # Set apart from the grey facts: a partial run's scorecard otherwise reads as whole.
        lines.extend(f'<p class="partial">{esc(line)}</p>' for line in partial_run_lines(run))
        cut = budget_cut(self.report)
        if cut is not None:
            lines.append(f'<p class="partial">{esc(cut)}</p>')
        judge_errors = report_judge_errors(self.report)
        if judge_errors is not None:
            lines.append(f'<p class="meta">{esc(judge_errors)}</p>')
        for item in self.report.get("not_evaluated") or []:
            lines.append(f'<p class="meta">not evaluated: {esc(_not_evaluated(item))}</p>')
        lines.extend(f'<p class="meta">{esc(n)}</p>' for n in self.report.get("notes") or [])
        return lines

    def _gate(self) -> str:
        if self.gate is None:
            return ""
        verdict = str(self.gate.get("verdict") or "none")
        css = verdict if verdict in ("pass", "fail", "incomplete") else "none"
        # A pass that compared nothing says so, as the terminal and the markdown do: "no
        # regression" alone reads as "nothing got worse".
        empty = nothing_compared(self.gate) if verdict == "pass" else ""
        problem = self.gate.get("problem")
        title = (f"Baseline gate not run: {esc(problem)}" if problem
                 else f"Baseline gate: {esc(verdict.upper())}")
        out = [f'<div class="verdict v-{css}" id="gate">{title}'
               f" — baseline {esc(self.gate.get('baseline', '?'))}, mode "
               f"{esc(self.gate.get('mode', '?'))}"
               + (f" — no regression{esc(empty)}" if empty else "") + "</div>"]
        regressions = self.gate.get("regressions")
        if regressions is None:
            regressions = [c for c in self.checks.values() if c.get("status") == "regression"]
        if regressions:
            out.append("<h3>Regressions</h3><table><tr><th>kind</th><th>model</th><th>task</th>"
                       "<th>metric</th><th>old → new</th><th>Δ</th><th>95 % interval</th>"
                       "<th>shared cases</th><th>cases that moved most</th></tr>")
            out.extend(_regression_row(r) for r in regressions if isinstance(r, Mapping))
            out.append("</table>")
        unmade = [e for e in self.gate.get("incomplete") or [] if isinstance(e, Mapping)]
        if unmade:
            # What a failure of the tool kept the gate from comparing, in words.
            out.append(f"<h3>Not compared ({len(unmade)})</h3><ul>"
                       + "".join(f"<li>{esc(incomplete_line(e))}</li>" for e in unmade)
                       + "</ul>")
        for key, value in self.gate.items():
            if key not in ("regressions", "checks", "incomplete") and isinstance(value, list) \
                    and value:
                items = "".join(f"<li>{esc(_item(v))}</li>" for v in value)
                out.append(f"<h3>{esc(key.replace('_', ' ').capitalize())} ({len(value)})</h3>"
                           f"<ul>{items}</ul>")
        return "\n".join(out)

    def _blockers(self) -> str:
        rows = []
        for model in self.models:
            for task in self.tasks:
                agg = self.cards[model]["tasks"].get(task)
                if not agg:
                    continue
                counts = (f"{esc(agg.get('blocked_cases'))} of {esc(agg.get('cases'))} cases "
                          "blocked")
                if agg.get("disqualified"):
                    rows.append(f"<li><b>{esc(model)}</b>: disqualified for {esc(task)} "
                                f"({counts})</li>")
                elif agg.get("blocked_cases") and not agg.get("disqualification_unknown"):
                    rows.append(f"<li><b>{esc(model)}</b>: {esc(task)}: {counts}, within the "
                                "disqualify tolerance: not disqualified</li>")
                for mid, m in (agg.get("metrics") or {}).items():
                    if m.get("blocker"):
                        spec = self.specs[task].get(mid, {})
                        rows.append(f"<li><b>{esc(model)}</b>: {esc(task)} / "
                                    f"{esc(spec.get('name', mid))} = "
                                    f"{fmt(m.get('value'), unit(spec), edges(spec))} "
                                    "(threshold "
                                    f"{esc(spec.get('threshold', ''))})</li>")
        if not rows:
            return ""
        return ('<div class="panel" id="blockers"><h3>Blockers fired</h3><ul>'
                + "".join(rows) + "</ul></div>")

    def _delta(self, model: str, task: str, metric: str) -> str:
        check = self.checks.get((model, task, metric))
        if check is None:
            return ""
        delta, status = check.get("delta"), str(check.get("status") or "")
        pct = check.get("percent") is True
        # An unchanged metric shows its delta alone; any other verdict is written beside it.
        text = (change(delta, pct) if isinstance(delta, (int, float)) else NOT_SCORED) + (
            f" {status}" if status and status != "unchanged" else "")
        tip = f"baseline {figure(check.get('old'), pct)} → {figure(check.get('new'), pct)}"
        css = re.sub(r"[^a-z]+", "-", status.lower())
        return f'<small class="d d-{css}" title="{esc(tip)}">Δ {esc(text)}</small>'

    def _cell(self, text: str, rating: str | None, extra: str = "") -> str:
        css = f' class="cell r-{rating}" title="{rating}"' if rating else ' class="cell"'
        return f"<td{css}>{esc(text + MARKS.get(rating or '', ''))}{extra}</td>"

    def _scorecard(self) -> str:
        n = len(self.models)
        out = ['<h2 id="scorecard">Scorecard</h2><table id="scorecard-table"><thead><tr>'
               '<th>Metric</th>' + "".join(f'<th class="model">{esc(m)}</th>' for m in self.models)
               + "<th>Threshold</th></tr></thead><tbody>"]
        for task in self.tasks:
            out.append(f'<tr class="section"><th colspan="{n + 2}">{esc(task)}</th></tr>')
            for mid, spec in self.metric_rows(task):
                cells = []
                for model in self.models:
                    agg = self.cards[model]["tasks"].get(task) or {}
                    m = (agg.get("metrics") or {}).get(mid)
                    if m is None:
                        cells.append(self._cell(NOT_SCORED, None))
                        continue
                    rating = "blocker" if m.get("blocker") else rating_of(m.get("rating"))
                    # As the terminal: ? a figure that holds a family's score for an
                    # off-scale judge reply; E one missing cases the judge could not score,
                    # or the task's cases whose test errored or that have no output.
                    lost = m.get("judge_errors") or agg.get("errored_cases") or agg.get(
                        "no_output_cases")
                    shown = (fmt(m.get("value"), unit(spec), edges(spec))
                             + ("?" if m.get("flagged") else "") + ("E" if lost else ""))
                    cells.append(self._cell(shown, rating,
                                            _ci(m.get("interval"), unit(spec))
                                            + self._delta(model, task, mid)))
                rule = '<span class="rule" title="blocker rule">[!] </span>' if spec.get(
                    "blocker") else ""
                out.append(f'<tr class="metric" data-task="{esc(task)}" data-metric="{esc(mid)}">'
                           f'<th title="{esc(spec.get("description", ""))}">{rule}'
                           f'{esc(spec.get("name", mid))}</th>{"".join(cells)}'
                           f'<td class="thr">{esc(spec.get("threshold", ""))}</td></tr>')
            out.append(self._row(f"{task} score", "score", [
                self._task_cell(model, task) for model in self.models], "0.0 – 1.0"))
        out.extend(self._benchmark_rows())
        out.extend(self._runs_rows())
        out.append(f'<tr class="section"><th colspan="{n + 2}">final</th></tr>')
        for key, label, note in (("final_score_a", "Final Score (with benchmarks)", "Option A"),
                                 ("final_score_b", "Final Score (without benchmarks)",
                                  "Option B")):
            out.append(self._row(label, "score", [self._cell(
                fmt(self.cards[m].get(key)) + _judge_gap(self.cards[m], key)
                + renormalised_note(self.cards[m], self.cards[m].get(key)), None,
                _ci(self.cards[m].get(key.replace("score", "interval"))))
                for m in self.models], note + " [95% interval]"))
        # The scorecard's own words; the engine is loaded once a report is rendered.
        from ..engine.report import cost_text, rank_label

        cost = [self.cards[m].get("cost_per_1000_calls") for m in self.models]
        out.append(self._row("Cost per 1000 calls", "final", [self._cell(
            cost_text(c) if isinstance(c, (int, float)) else NOT_SCORED, None) for c in cost],
            "$"))
        basis = (self.report.get("run") or {}).get("rank_basis", "")
        # As the terminal's row: by cost unless a ranked model's cost is unknown.
        ranked = [m for m in self.models
                  if self.cards[m].get("cost_adjusted_rank") is not None]
        by_cost = all(isinstance(self.cards[m].get("cost_per_1000_calls"), (int, float))
                      for m in ranked)
        out.append(self._row("Cost-Adjusted Rank", "final", [self._cell(
            self._rank(m), None) for m in self.models],
            rank_label(str(basis), by_cost, ranked=bool(ranked))))
        out.append(self._row("Any Blocker Triggered?", "final", [
            self._blocker_cell(m) for m in self.models], "Yes / No"))
        out.append("</tbody></table>")
        out.extend(f'<p class="meta">{esc(line)}</p>' for line in self._off_scale_lines())
        return "\n".join(out)

    def _off_scale_lines(self) -> list[str]:
        """The terminal's note on each ``?``: the metrics whose figure holds scores a family
        kept from off-scale judge replies, and how many."""
        lines = []
        for model in self.models:
            for task, agg in self.cards[model]["tasks"].items():
                metrics = agg.get("metrics") or {}
                flagged = {mid: int(m["flagged"]) for mid, m in metrics.items()
                           if isinstance(m, Mapping) and m.get("flagged")}
                if flagged:
                    lines.append(f"? {model}: {task}: off-scale judge replies scored by the "
                                 "family's own rule in " + ", ".join(
                                     f"{mid} ×{n}" for mid, n in sorted(flagged.items())))
        return lines

    def _blocker_cell(self, model: str) -> str:
        """The terminal's cell: whether a blocker fired (``any_blocker``), and whether one
        disqualified the model for a task, which the report's tasks say."""
        # The terminal's words; the engine is loaded once a report is rendered.
        from ..engine.report import blocker_cell
        from ..engine.scorecard import known_any

        card = self.cards[model]
        # A report written before the model's own field: worked out from its tasks.
        disqualified = card["disqualified"] if "disqualified" in card else known_any(
            (bool(a.get("disqualified")), bool(a.get("disqualification_unknown")))
            for a in (card.get("tasks") or {}).values())
        text, rating = blocker_cell(card.get("any_blocker"), disqualified)
        # The page marks an undecided figure with its text, without a colour of its own.
        if rating == "undecided":
            return self._cell(f"{text} !?", None)
        return self._cell(text, rating)

    def _rank(self, model: str) -> str:
        card = self.cards[model]
        rank = card.get("cost_adjusted_rank")
        if rank is None:
            # What the model would be ranked on is unknown (the report's notes say why).
            return NOT_SCORED
        # The ranks it ties with, in order, as the terminal lists them.
        ties = sorted(self.cards[t].get("cost_adjusted_rank") or 0
                      for t in card.get("rank_ties") or [] if t in self.cards)
        return str(rank) + (f" (tie {', '.join(map(str, ties))})" if ties else "")

    def _runs_rows(self) -> list[str]:
        runs = {m: self.cards[m].get("runs") for m in self.models}
        if not any(isinstance(r, Mapping) for r in runs.values()):
            return []
        out = [f'<tr class="section"><th colspan="{len(self.models) + 2}">repeated runs (per '
               "case, mean over cases)</th></tr>"]
        out.append(self._row("k", "bench", [self._cell(
            str(r["k"]) if isinstance(r, Mapping) and isinstance(r.get("k"), int)
            else NOT_SCORED, None) for r in runs.values()], "fewest known runs of a case"))
        for key, label, note in (("pass_rate", "Pass Rate", "passing runs / runs"),
                                 ("pass_hat_k", "pass^k", "k runs all pass"),
                                 ("pass_at_k", "pass@k", "some of k runs passes")):
            out.append(self._row(label, "bench", [self._cell(
                fmt(r.get(key)) if isinstance(r, Mapping) else NOT_SCORED, None)
                for r in runs.values()], note))
        # A model no case of which has two known runs has no figures (cases 0): "—", as the
        # terminal shows it, not "0/0".
        counted = {m: r if isinstance(r, Mapping) and r.get("cases") else None
                   for m, r in runs.items()}
        out.append(self._row("Flaky Cases", "bench", [self._cell(
            f"{len(r.get('flaky') or [])}/{r.get('cases')}" if r is not None
            else NOT_SCORED, "acceptable" if r is not None and r.get("flaky") else None,
            "".join(f'<span class="ci">{esc(c)}</span>' for c in r.get("flaky") or [])
            if r is not None else "") for r in counted.values()], "runs disagree"))
        return out

    @staticmethod
    def _row(label: str, css: str, cells: list[str], threshold: str) -> str:
        return (f'<tr class="{css}"><th>{esc(label)}</th>{"".join(cells)}'
                f'<td class="thr">{esc(threshold)}</td></tr>')

    def _task_cell(self, model: str, task: str) -> str:
        agg = self.cards[model]["tasks"].get(task)
        if not agg:
            return self._cell("n/a", None)
        # The terminal's words; the engine is loaded once a report is rendered.
        from ..engine.report import missing_cases

        text = fmt(agg.get("score"))
        if agg.get("invalid_cases"):
            text += f" ({agg['invalid_cases']}/{agg.get('cases')} invalid)"
        text += missing_cases(agg.get("cases"), int(agg.get("judge_error_cases") or 0),
                              int(agg.get("errored_cases") or 0),
                              int(agg.get("no_output_cases") or 0))
        if agg.get("unscored_cases"):
            text += f" ({agg['unscored_cases']}/{agg.get('cases')} not scored)"
        if agg.get("disqualified"):
            text += " disqualified"
        elif agg.get("disqualification_unknown"):
            text += " disqualification unknown !?"
        return self._cell(text, "blocker" if agg.get("disqualified") else None,
                          _ci(agg.get("interval")) + self._delta(model, task, "score"))

    def _benchmark_rows(self) -> list[str]:
        ids: list[str] = []
        for m in self.models:
            ids.extend(b for b in self.cards[m].get("benchmarks") or {} if b not in ids)
        if not ids:
            return []
        # The benchmark definitions live with the scoring code; they load only when a page
        # with benchmarks is rendered, never at plugin start-up.
        from ..engine.tasks.benchmark_specs import BENCHMARK_SPECS

        out = [f'<tr class="section"><th colspan="{len(self.models) + 2}">standard benchmarks '
               "(0 or 1)</th></tr>"]
        for bid in ids:
            spec = BENCHMARK_SPECS.get(bid)
            cells = []
            for m in self.models:
                b = (self.cards[m].get("benchmarks") or {}).get(bid) or {}
                flag = "E" if b.get("judge_errors") else ""
                if not isinstance(b.get("value"), (int, float)):
                    cells.append(self._cell(NOT_SCORED + flag, None))
                    continue
                passed = bool(b.get("passed"))
                text = f"{int(passed)} ({fmt(b['value'], unit(spec), edges(spec))}){flag}"
                cells.append(self._cell(text, "good" if passed else "fail",
                                        self._delta(m, "benchmarks", bid)))
            out.append(self._row(spec.name if spec else bid, "bench", cells,
                                 spec.threshold if spec else ""))
        out.append(self._row("Benchmark Score", "score", [
            self._cell(fmt(self.cards[m].get("benchmark_score"))
                       + _judge_gap(self.cards[m], "benchmark_score"), None)
            for m in self.models], ">= 0.80 recommended"))
        return out

    def _charts(self) -> str:
        out = ['<h2 id="charts">Charts</h2>', "<h3>Scores</h3><div class=\"charts\">"]
        for task in self.tasks:
            values: list[tuple[str, Any, str | None]] = [
                (m, (self.cards[m]["tasks"].get(task) or {}).get("score"), None)
                for m in self.models]
            out.append(_chart(f"{task} score", values, 1.0, None))
        out.append(_chart("Final Score (with benchmarks)", [
            (m, self.cards[m].get("final_score_a"), None) for m in self.models], 1.0, None))
        out.append("</div>")
        for task in self.tasks:
            figures = []
            for mid, spec in self.metric_rows(task):
                values = []
                for m in self.models:
                    agg = ((self.cards[m]["tasks"].get(task) or {}).get("metrics") or {}).get(
                        mid) or {}
                    rating = "blocker" if agg.get("blocker") else rating_of(agg.get("rating"))
                    values.append((m, agg.get("value"), rating))
                numbers = [v for _, v, _ in values if isinstance(v, (int, float))]
                if not numbers:
                    continue
                bands = spec.get("bands") if isinstance(spec.get("bands"), Mapping) else None
                top = scale_top(str(spec.get("scale", "")), numbers, bands)
                title = str(spec.get("name", mid)) + (
                    " (lower is better)" if bands and bands.get("higher_is_better") is False
                    else "")
                figures.append(_chart(title, values, top, bands and bands.get("good"),
                                      unit(spec), edges(spec)))
            if figures:
                out.append(f'<h3>{esc(task)}</h3><div class="charts">{"".join(figures)}</div>')
        return "\n".join(out)


def _judge_gap(card: Mapping[str, Any], key: str) -> str:
    """``E`` beside a figure the judge's errors (or a test's) leave unknown: the Benchmark
    Score when a criterion has them, a final score when a task (or, for A, the benchmarks)
    it weighs does."""
    gaps = set(card.get("incomplete_tasks") or [])
    if key == "benchmark_score":
        gaps &= {"benchmarks"}
    elif key == "final_score_b":
        gaps -= {"benchmarks"}
    return "E" if card.get(key) is None and gaps else ""


def _chart(title: str, values: list[tuple[str, Any, str | None]], top: float,
           mark: Any, scale: str = "", band_edges: Sequence[float] = ()) -> str:
    """One horizontal bar per model, its length the value over ``top``, its figure as
    the scorecard's (``band_edges``: of the metric's bands); a dashed line at ``mark``
    (the metric's good bound) when it has one."""
    height = BAR_H * len(values) + 6 * (len(values) + 1)
    width = LABEL_W + TRACK_W + VALUE_W
    parts = [f'<figure><figcaption>{esc(title)}</figcaption><svg width="{width}" '
             f'height="{height}" role="img" aria-label="{esc(title)}">']
    for i, (model, value, rating) in enumerate(values):
        y = 6 + i * (BAR_H + 6)
        label = model if len(model) <= 18 else model[:17] + "…"
        parts.append(f'<text x="0" y="{y + 11}"><title>{esc(model)}</title>{esc(label)}'
                     f'</text><rect class="track" x="{LABEL_W}" y="{y}" width="{TRACK_W}" '
                     f'height="{BAR_H}"/>')
        if isinstance(value, (int, float)):
            length = max(0.0, min(1.0, value / top if top else 0.0)) * TRACK_W
            parts.append(f'<rect class="b-{rating or "none"}" x="{LABEL_W}" y="{y}" '
                         f'width="{length:.1f}" height="{BAR_H}"/>')
        parts.append(f'<text x="{LABEL_W + TRACK_W + 4}" y="{y + 11}">'
                     f'{esc(fmt(value, scale, band_edges))}</text>')
    if isinstance(mark, (int, float)) and top and 0 <= mark <= top:
        x = LABEL_W + mark / top * TRACK_W
        parts.append(f'<line class="bar-thr" x1="{x:.1f}" x2="{x:.1f}" y1="2" '
                     f'y2="{height - 2}"/>')
    return "".join(parts) + "</svg></figure>"

"""Rendering the scorecard as a terminal table (the seed's scorecard template)."""

from __future__ import annotations

from collections.abc import Sequence

from .core.metrics import MetricSpec, band_edges, metric_figure
from .scorecard import ModelCard, Scorecard
from .tasks.benchmark_specs import BENCHMARK_METRICS

# Text marks keep ratings readable without colour (CI logs, NO_COLOR). "undecided" marks a
# disqualification the blockers that could not be decided leave open.
MARKS = {"good": "", "acceptable": " ~", "fail": " x", "blocker": " !!", "undecided": " !?",
         None: ""}
COLORS = {"good": "\x1b[32m", "acceptable": "\x1b[33m", "fail": "\x1b[31m",
          "blocker": "\x1b[1;31m", "undecided": "\x1b[1;33m"}
RESET = "\x1b[0m"
NOT_SCORED = "—"
# Beside a figure: cases the judge could not score are missing from it (or, without a figure,
# it is unknown because of them).
JUDGE_ERROR = "E"


def _fmt(value: float | None, spec: MetricSpec | None = None) -> str:
    """A figure with the table's usual digits, or more beside an edge of ``spec``'s bands
    (:func:`metric_figure`): the rating next to it must not contradict it."""
    if value is None:
        return NOT_SCORED
    scale = "" if spec is None else "rate" if spec.percent else spec.scale
    return metric_figure(value, scale, band_edges(spec))


def _interval(interval: tuple[float, float] | None) -> tuple[str, None]:
    """A 95 % interval's cell."""
    return (NOT_SCORED if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]",
            None)


class _Table:
    def __init__(self, models: Sequence[str], color: bool) -> None:
        self.models = list(models)
        self.color = color
        self.rows: list[tuple[str, list[tuple[str, str | None]], str] | str] = []

    def section(self, title: str) -> None:
        self.rows.append(title)

    def row(self, label: str, cells: Sequence[tuple[str, str | None]], threshold: str) -> None:
        self.rows.append((label, list(cells), threshold))

    def _widths(self) -> tuple[int, int, int]:
        label_w = max([len("Metric")] + [len(r[0]) for r in self.rows if isinstance(r, tuple)])
        cell_w = max([len(m) for m in self.models] + [
            len(text) + len(MARKS[rating]) for r in self.rows if isinstance(r, tuple)
            for text, rating in r[1]
        ] + [6])
        thr_w = max([len("Threshold")] + [len(r[2]) for r in self.rows if isinstance(r, tuple)])
        return label_w, cell_w, thr_w

    def _columns(self, picked: Sequence[int]) -> _Table:
        part = _Table([self.models[i] for i in picked], self.color)
        part.rows = [row if isinstance(row, str)
                     else (row[0], [row[1][i] for i in picked], row[2]) for row in self.rows]
        return part

    def render(self, width: int | None = None) -> str:
        """The table; wider than ``width``, it is split into blocks of models that fit (one
        model a block at the least), each with the metric and threshold columns."""
        label_w, cell_w, thr_w = self._widths()
        room = (width or 0) - label_w - 3 - thr_w
        per_block = max(1, room // (cell_w + 3)) if width else len(self.models)
        if per_block >= len(self.models):
            return self._render(label_w, cell_w, thr_w)
        blocks = [list(range(start, min(start + per_block, len(self.models))))
                  for start in range(0, len(self.models), per_block)]
        return "\n\n".join(self._columns(block).render() for block in blocks)

    def _render(self, label_w: int, cell_w: int, thr_w: int) -> str:
        head = "Metric".ljust(label_w) + " | " + " | ".join(
            m.rjust(cell_w) for m in self.models) + " | " + "Threshold"
        line = "-" * (label_w + 3 + (cell_w + 3) * len(self.models) + thr_w)
        out = [head, line]
        for row in self.rows:
            if isinstance(row, str):
                out.append(row)
                continue
            label, cells, threshold = row
            rendered = []
            for text, rating in cells:
                cell = (text + MARKS[rating]).rjust(cell_w)
                if self.color and rating in COLORS:
                    cell = COLORS[rating] + cell + RESET
                rendered.append(cell)
            out.append(label.ljust(label_w) + " | " + " | ".join(rendered) + " | " + threshold)
        return "\n".join(out)


def render_scorecard(
    card: Scorecard, *, color: bool = False, header: Sequence[str] = (),
    title: str | None = "callqa scorecard", order: Sequence[str] = (),
    width: int | None = None,
) -> str:
    """The scorecard as text: metrics × models with thresholds, blockers and final scores.

    ``title`` None leaves the title line out (the pytest summary prints its own). Models are
    in ``order`` (the configured one; the others after, by name); a table wider than
    ``width`` is split into blocks of models.
    """
    models = [m for m in order if m in card.models] + [m for m in card.models
                                                       if m not in order]
    if not models:
        return "callqa scorecard: no evaluation result"
    cards = [card.models[m] for m in models]
    table = _Table(models, color)
    for task in card.task_order:
        name = card.registry.tasks[task].title if task in card.registry.tasks else task
        table.section(f"{name.upper()} TASK METRICS")
        for spec in card.specs(task):
            if not spec.shown or not any(
                    task in c.tasks and spec.id in c.tasks[task].metrics for c in cards):
                continue
            cells: list[tuple[str, str | None]] = []
            for c in cards:
                task_agg = c.tasks.get(task)
                agg = task_agg.metrics.get(spec.id) if task_agg is not None else None
                if task_agg is None or agg is None:
                    cells.append((NOT_SCORED, None))
                    continue
                # "?" marks a value that includes a family's fallback for an off-scale judge
                # reply; "E" one that lacks cases the judge could not score, or the task's
                # cases whose test errored or that have no output.
                lost = task_agg.errored_cases or task_agg.no_output_cases
                flag = ("?" if agg.flagged else "") + (
                    JUDGE_ERROR if agg.judge_errors or lost else "")
                cells.append((_fmt(agg.value, spec) + flag, agg.rating))
            label = ("[!] " if spec.blocker else "") + spec.name
            table.row(label, cells, spec.threshold)
        table.row(f"{name} Score", [_task_cell(c, task) for c in cards], "0.0 – 1.0")
        table.row("  95% interval", [_interval(c.tasks[task].interval if task in c.tasks
                                               else None) for c in cards],
                  "bootstrap over cases")
    if any(c.benchmarks for c in cards):
        table.section("STANDARD BENCHMARKS (0 or 1)")
        for spec in BENCHMARK_METRICS:
            cells = []
            for c in cards:
                b = c.benchmarks.get(spec.id)
                flag = JUDGE_ERROR if b and b["judge_errors"] else ""
                if not b or b["value"] is None:
                    cells.append((NOT_SCORED + flag, None))
                else:
                    mark = "1" if b["passed"] else "0"
                    cells.append((f"{mark} ({_fmt(b['value'], spec)}){flag}",
                                  "good" if b["passed"] else "fail"))
            table.row(spec.name, cells, spec.threshold)
        table.row("Benchmark Score", [(_fmt(c.benchmark_score) + (
            JUDGE_ERROR if "benchmarks" in c.incomplete_tasks else ""), None) for c in cards],
                  ">= 0.80 recommended")
    if any(c.run_stats for c in cards):
        _runs_section(table, cards)
    table.section("FINAL")
    table.row("Final Score (with benchmarks)", [_final_cell(c, c.final_score_a) for c in cards],
              "Option A")
    table.row("  95% interval", [_interval(c.final_interval_a) for c in cards],
              "bootstrap over cases")
    table.row("Final Score (without benchmarks)",
              [_final_cell(c, c.final_score_b) for c in cards], "Option B")
    table.row("  95% interval", [_interval(c.final_interval_b) for c in cards],
              "bootstrap over cases")
    table.row("Cost per 1000 calls",
              [(NOT_SCORED if c.cost_per_1000_calls is None else cost_text(c.cost_per_1000_calls),
                None) for c in cards], "$")
    ranked = [c for c in cards if c.cost_adjusted_rank is not None]
    table.row("Cost-Adjusted Rank", [(_rank_cell(c, card), None) for c in cards],
              rank_label(card.rank_basis,
                         all(c.cost_per_1000_calls is not None for c in ranked),
                         ranked=bool(ranked)))
    table.row("Any Blocker Triggered?",
              [blocker_cell(c.any_blocker, c.disqualified) for c in cards], "Yes / No")
    lines = [*([title] if title else []), *header, "", table.render(width)]
    lines.extend(_footnotes(card, cards))
    return "\n".join(lines)


def cost_text(dollars: float) -> str:
    """A cost in dollars to the cent, or to four places below a cent: $0.004 shown as
    "$0.00" read as free beside a rank that weighed it."""
    return f"${dollars:.2f}" if dollars == 0 or abs(dollars) >= 0.005 else f"${dollars:.4f}"


def rank_label(basis: str, by_cost: bool, *, ranked: bool = True) -> str:
    """What the rank row says it ranks by: cost efficiency, or — when some ranked model's
    cost is unknown — the final score alone (the scorecard ranks so then); without a
    ``ranked`` model, that none is."""
    if not ranked:
        return f"no model ranked, what each would be ranked on ({basis}) being unknown"
    by = "cost efficiency" if by_cost else "final score alone, a cost being unknown"
    return (f"by {by} ({basis}); tie: 95% intervals overlap, "
            "or there is none (under 2 cases, or all alike)")


def _rank_cell(c: ModelCard, card: Scorecard) -> str:
    if c.cost_adjusted_rank is None:
        # Not ranked: the scorecard's notes say why.
        return NOT_SCORED
    ranks = sorted(card.models[m].cost_adjusted_rank or 0 for m in c.rank_ties)
    text = str(c.cost_adjusted_rank)
    return text + (f" (tie {', '.join(map(str, ranks))})" if ranks else "")


def _final_cell(c: ModelCard, value: float | None) -> tuple[str, None]:
    """A final score; without one, E when judge errors are why. (Final score B has no figure
    with judge errors only when one of its own tasks has them: gaps in the benchmarks alone
    leave it known.)"""
    return (_fmt(value) + (JUDGE_ERROR if value is None and c.incomplete_tasks else ""), None)


def blocker_cell(fired: bool | None, disqualified: bool | None) -> tuple[str, str | None]:
    """The "Any Blocker Triggered?" cell of a model and its rating, from whether a blocker
    ``fired`` and whether one ``disqualified`` it (None: unknown). A blocker within the
    disqualify tolerance fired all the same: "Yes (within tolerance)", never "No"; it does
    not move the model down the rank. The terminal and the HTML write it so."""
    if disqualified:
        return ("Yes", "blocker")
    if disqualified is None:
        return ("Yes (disqualification unknown)" if fired else "Unknown", "undecided")
    if fired:
        return ("Yes (within tolerance)", "acceptable")
    return ("Unknown (within tolerance)", None) if fired is None else ("No", "good")


def _runs_section(table: _Table, cards: list[ModelCard]) -> None:
    summaries = [c.runs_summary() for c in cards]

    def cell(key: str) -> list[tuple[str, str | None]]:
        return [(NOT_SCORED if s is None else _fmt(s[key]), None) for s in summaries]

    table.section("REPEATED RUNS (per case, mean over cases)")
    table.row("Runs per case", [(NOT_SCORED if s is None else str(s["runs"]), None)
                                for s in summaries], "--callqa-runs")
    table.row("Pass Rate", cell("pass_rate"), "passing runs / runs")
    table.row("k", [(NOT_SCORED if s is None else str(s["k"]), None) for s in summaries],
              "fewest known runs of a case")
    table.row("pass^k", cell("pass_hat_k"), "k runs all pass")
    table.row("pass@k", cell("pass_at_k"), "some of k runs passes")
    table.row("Flaky Cases", [(NOT_SCORED if s is None else f"{len(s['flaky'])}/{s['cases']}",
                               "acceptable" if s and s["flaky"] else None) for s in summaries],
              "runs disagree")


def missing_cases(cases: object, judge_errors: int, errored: int, no_output: int) -> str:
    """A task score's mark for the cases missing from it — `` E (1/2 judge error; 1 test
    errored; 1 no output)`` — or nothing: the judge errors are of the task's ``cases``, the
    cases whose test errored or that have no output are not among them, and are counted.
    The terminal, the HTML and the markdown mark a task score so."""
    missing = [f"{judge_errors}/{cases} judge error"] if judge_errors else []
    missing += [f"{n} {what}" for n, what in ((errored, "test errored"),
                                              (no_output, "no output")) if n]
    return f" {JUDGE_ERROR} ({'; '.join(missing)})" if missing else ""


def _task_cell(c: ModelCard, task: str) -> tuple[str, str | None]:
    agg = c.tasks.get(task)
    if agg is None:
        return ("n/a", None)
    text = _fmt(agg.score)
    if agg.invalid_cases:
        text += f" ({agg.invalid_cases}/{agg.cases} invalid)"
    text += missing_cases(agg.cases, agg.judge_error_cases, agg.errored_cases,
                          agg.no_output_cases)
    if agg.unscored_cases:
        text += f" ({agg.unscored_cases}/{agg.cases} not scored)"
    if agg.disqualified:
        return (text, "blocker")
    return (text, "undecided" if agg.disqualification_unknown else None)


def _footnotes(card: Scorecard, cards: list[ModelCard]) -> list[str]:
    notes = []
    for c in cards:
        for task, agg in c.tasks.items():
            flagged = {mid: m.flagged for mid, m in agg.metrics.items() if m.flagged}
            if flagged:
                notes.append(
                    f"? {c.model}: {task}: off-scale judge replies scored by the family's own "
                    "rule in " + ", ".join(f"{mid} ×{n}" for mid, n in sorted(flagged.items())))
            errors = {mid: m.judge_errors for mid, m in agg.metrics.items() if m.judge_errors}
            if errors:
                left_out = (f"; {agg.judge_error_cases} case(s) left out of the task score"
                            if agg.judge_error_cases else "")
                notes.append(
                    f"E {c.model}: {task}: judge errors (not scored, not counted against the "
                    f"model) in " + ", ".join(f"{mid} ×{n}" for mid, n in sorted(errors.items()))
                    + left_out)
            if agg.disqualified:
                notes.append(f"[!] {c.model}: disqualified for {task} "
                             f"({agg.blocked_cases} of {agg.cases} cases blocked)")
            elif agg.blocked_cases and not agg.disqualification_unknown:
                notes.append(f"[!] {c.model}: {task}: {agg.blocked_cases} of {agg.cases} "
                             "case(s) blocked, within the disqualify tolerance: not "
                             "disqualified, not ranked after the models without a blocker")
            if agg.disqualification_unknown:
                undecided = (agg.blocker_unknown_cases - agg.errored_cases
                             - agg.no_output_cases)
                why = ([f"{undecided} of {agg.cases} case(s) have a blocker that could not be "
                        f"decided ({', '.join(agg.unknown_blockers)}: a judge error, a "
                        "metric's code error or a metric not estimated, not a model failure)"]
                       if undecided else [])
                if agg.errored_cases:
                    why.append(f"{agg.errored_cases} {'more ' if undecided else ''}case(s) "
                               "whose test errored (blocked or not is unknown: a failure of "
                               "the tool, not of the model)")
                if agg.no_output_cases:
                    more = "more " if undecided or agg.errored_cases else ""
                    why.append(f"{agg.no_output_cases} {more}case(s) without an output "
                               "(blocked or not is unknown: not evaluated, not a pass)")
                notes.append(f"[!?] {c.model}: disqualification for {task} unknown: "
                             f"{'; '.join(why)}, {agg.blocked_cases} blocked")
            if agg.renormalised_cases:
                notes.append(f"{c.model}: {task}: weights renormalised in "
                             f"{agg.renormalised_cases} case(s) for metrics not scored")
        summary = c.runs_summary()
        if summary and summary["flaky"]:
            notes.append(f"~ {c.model}: flaky (runs disagree): {', '.join(summary['flaky'])}")
        if c.missing_tasks:
            notes.append(f"{c.model}: final scores renormalised without task(s): "
                         + ", ".join(c.missing_tasks))
        notes.extend(_judge_gap_notes(c))
    notes.extend(card.notes)
    return ["", *notes] if notes else []


def _judge_gap_notes(c: ModelCard) -> list[str]:
    """The notes on the benchmark criteria the judge could not score and on the figures its
    gaps leave unknown (the Benchmark Score, the final scores)."""
    notes = []
    errors = {bid: b["judge_errors"] for bid, b in c.benchmarks.items() if b["judge_errors"]}
    if errors:
        notes.append(f"E {c.model}: benchmarks: judge errors (not scored, not counted against "
                     "the model) in " + ", ".join(f"{bid} ×{n}" for bid, n in errors.items()))
    causes = ("the judge could not score all of {} (a judge error, not a model failure",
              "a test errored in {} (a failure of the tool, not a model failure",
              "an output is missing in {} (not evaluated: neither a pass nor a failure")
    for gaps, cause in zip(c.gap_causes(c.incomplete_tasks), causes, strict=True):
        if gaps:
            which = ("Benchmark Score and final score A" if gaps == ["benchmarks"]
                     else "final scores")
            notes.append(f"E {c.model}: {which} unknown: {cause.format(', '.join(gaps))}; "
                         "not renormalised around it)")
    return notes

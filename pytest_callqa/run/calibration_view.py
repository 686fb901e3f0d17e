"""The judge calibration of a calibrating run (docs/calibration.md) as the markdown summary
and the HTML report show it: the terminal's verdict, in its words, and a row per labelled
metric with what was left out of its n. Read from the report's ``calibration`` and
``run.calibration``; a report without them shows nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.calibration import calibration_lines, left_out_text
from ..engine.core.defaults import DEFAULT_MIN_KAPPA
from .html_cases import esc

# What begins every line of the terminal's calibration section.
PREFIX = "callqa calibration: "
HEADER = ("metric", "task", "n", "left out", "agreement", "kappa", "weights", "Spearman",
          "bias")
VERDICTS = ("pass", "fail", "incomplete")


@dataclass(frozen=True)
class CalibrationView:
    verdict: str
    """``pass``, ``fail`` or ``incomplete`` (:data:`VERDICTS`): what it made of the run."""
    against: str
    """The judge, the labelled model and the kappa bar, as the terminal's first line."""
    lines: list[str]
    """The terminal's verdict lines (``FAIL — ...``, ``INCOMPLETE — ...``, ``pass — ...``)."""
    rows: list[list[str]]
    """One per labelled metric, the cells of :data:`HEADER`."""


def calibration_view(report: Mapping[str, Any]) -> CalibrationView | None:
    """The calibration of ``report``, or None when the run did not calibrate."""
    table = report.get("calibration")
    run = report.get("run") or {}
    decided = run.get("calibration")
    if not isinstance(table, Mapping) or not isinstance(decided, Mapping):
        return None
    # The terminal's own lines, so that the files say what the terminal said.
    judge = run.get("judge") or {}
    terminal = calibration_lines(
        table, judge=str(judge.get("description") or judge.get("name") or "?"),
        model=str(decided.get("model")),
        min_kappa=float(decided.get("min_kappa", DEFAULT_MIN_KAPPA)),
        unread=decided.get("unread_case_files") or ())
    return CalibrationView(
        verdict=str(decided.get("verdict")),
        against=terminal[0].removeprefix(PREFIX),
        lines=[line.removeprefix(PREFIX) for line in terminal[1:] if line.startswith(PREFIX)],
        rows=[_row(metric, entry) for metric, entry in table.items()])


def _row(metric: str, entry: Mapping[str, Any]) -> list[str]:
    # What the terminal says under its table, on lines of their own: what was left out and
    # why a metric was not compared go into the row's cell in the same words.
    said = [text for text in (left_out_text(entry),) if text]
    if entry.get("not_rated"):
        said.append(f"not compared: {entry['not_rated']}")
    left = sum(int(v) for v in (entry.get("left_out") or {}).values())
    bias = entry.get("bias")
    return [metric, str(entry.get("task", "")), str(entry.get("n", 0)),
            f"{left}: {'; '.join(said)}" if said else str(left),
            _figure(entry.get("agreement")), _figure(entry.get("kappa")),
            str(entry.get("weights", "")), _figure(entry.get("spearman")),
            # Signed: above 0 the judge is more lenient than people, below 0 stricter.
            "—" if not isinstance(bias, (int, float)) else f"{bias:+.3f}"]


def _figure(value: Any) -> str:
    """Agreement, kappa or rho as the terminal's table writes it; ``—`` when undefined."""
    return "—" if not isinstance(value, (int, float)) else f"{value:.2f}"


def calibration_html(report: Mapping[str, Any]) -> str:
    """The HTML report's calibration section (empty without a calibration), every text
    escaped."""
    view = calibration_view(report)
    if view is None:
        return ""
    css = view.verdict if view.verdict in VERDICTS else "none"
    head = "".join(f"<th>{esc(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                   for row in view.rows)
    return "\n".join([
        '<h2 id="calibration">Judge calibration</h2>',
        f'<div class="verdict v-{css}" id="calibration-verdict">Judge calibration: '
        f"{esc(view.verdict.upper())} — {esc(view.against)}</div>",
        "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in view.lines) + "</ul>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"])

"""``python -m pytest_callqa merge a.json b.json … --report OUT.json``: the JSON reports of a
sharded run (``--callqa-shard i/N``, one per CI job) merged into the report and scorecard one
run over the whole suite would have given, optionally gated against a baseline report and
rendered as HTML and markdown.

Exit status: 0 merged, 1 the merged gate failed (``--baseline`` in ``fail`` mode), 2 bad input
(unreadable or mismatched reports, bad options), 4 the merged gate incomplete in ``fail`` mode
(judge errors, test errors or missing outputs kept comparisons from being made, and the
others found no regression), 5 nothing to merge: no report scored an output or left a pair
unevaluated (pytest's "no tests ran").
No pytest here: the merge runs anywhere the package is installed.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .run.deliver import BaselineError, destination, read_baseline, write_atomically
from .run.settings import count, display_path

PROG = "python -m pytest_callqa"


class InputError(Exception):
    """Input the merge cannot use, with the file and what is wrong with it."""


class NothingEvaluated(Exception):
    """Reports that together scored no output and left no pair unevaluated: no job evaluated
    anything (each job's selection left no evaluation test, or the suite has no pair)."""

    # pytest's own status for a run in which no test ran.
    EXIT_STATUS = 5


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="pytest-callqa tools that run "
                                     "without pytest.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    merge = commands.add_parser(
        "merge", help="merge the JSON reports of sharded runs into one report",
        description="Merge the JSON reports of a sharded run (--callqa-shard i/N) into the "
                    "report and scorecard of one run over every shard's cases. Reports from "
                    "different configurations, or holding the same case twice, are refused.")
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT",
                       help="a shard's JSON report (--callqa-report)")
    merge.add_argument("--report", required=True, type=Path, metavar="PATH",
                       help="where to write the merged JSON report")
    merge.add_argument("--html", type=Path, metavar="PATH",
                       help="also write the self-contained HTML report")
    merge.add_argument("--markdown", type=Path, metavar="PATH",
                       help="also write the pull-request summary in markdown")
    merge.add_argument("--baseline", type=Path, metavar="PATH",
                       help="gate the merged report against this earlier JSON report")
    merge.add_argument("--baseline-mode", choices=("fail", "report"), default="fail",
                       help="fail: exit 1 on a regression, 4 when judge errors, test errors "
                       "or missing outputs kept comparisons from being made (default); "
                       "report: only report them")
    merge.add_argument("--regression-tolerance", type=_tolerance, metavar="DROP",
                       help="the drop a 0–1 metric may take before it can regress (default: "
                            "the callqa_regression_tolerance the shards were run with)")
    return parser


def _tolerance(text: str) -> float:
    """A regression tolerance of the command line: a finite number from 0 to below 1, as
    the plugin's option takes it (no drop is beyond an infinite tolerance, none beyond NaN,
    and on a 0-1 scale none beyond 1)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number >= 0")
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a drop below 1 on the 0-1 "
                                         "scale (0.02 is two points)")
    return value


def _load(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist") from None
    except RecursionError:
        raise InputError(f"{what} {path} cannot be read as JSON: it is nested deeper than "
                         "Python reads") from None
    except (OSError, ValueError) as exc:
        # Not UTF-8, not JSON, or a number of over 4,300 digits.
        raise InputError(f"{what} {path} cannot be read as JSON: {exc}") from None


def _write_all(outputs: Sequence[tuple[Path, str]]) -> None:
    """Every output or, when one cannot be written, none: each goes to a temporary file
    beside it (beside the file a symlink points to) first; they are renamed into place once
    all are written, a file they replace kept aside until every rename has gone through, and
    put back if one fails. A device or FIFO, which a rename would replace, is written to in
    place, last."""
    for path, _ in outputs:
        if not path.name or path.is_dir():
            raise InputError(f"cannot write {path}: it is a directory")
    places = [(path, *destination(path), text) for path, text in outputs]
    staged: list[tuple[Path, Path]] = []
    kept: list[tuple[Path, Path]] = []
    placed: list[Path] = []
    try:
        for path, target, direct, text in places:
            if direct:
                continue
            temporary = target.with_name(f".{target.name}.callqa-merge")
            try:
                write_atomically(temporary, text)
            except OSError as exc:
                raise InputError(f"cannot write {path}: {exc}") from None
            staged.append((temporary, target))
        for temporary, path in staged:
            try:
                if path.exists():
                    aside = path.with_name(f".{path.name}.callqa-merge-old")
                    os.replace(path, aside)
                    kept.append((aside, path))
                os.replace(temporary, path)
            except OSError as exc:
                for done in placed:
                    done.unlink(missing_ok=True)
                for aside, original in kept:
                    os.replace(aside, original)
                kept.clear()
                raise InputError(f"cannot write {path}: {exc}") from None
            placed.append(path)
        for path, _, direct, text in places:
            try:
                if direct:
                    write_atomically(path, text)
            except OSError as exc:
                raise InputError(f"cannot write {path}: {exc}") from None
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        for aside, _ in kept:
            aside.unlink(missing_ok=True)


def _rendered(report: dict[str, Any], args: argparse.Namespace,
              ) -> tuple[list[tuple[Path, str]], str]:
    """The files to write and the text to print, all made before anything is written."""
    # The merge loads the engine (the scorecard and the task families): not needed for --help.
    from .run.merge import merged_scorecard_text

    gate = _gate(report, args) if args.baseline is not None else None
    if gate is not None:
        report["gate"] = gate
    outputs = [(args.report, json.dumps(report, indent=2, ensure_ascii=False,
                                        allow_nan=False) + "\n")]
    if args.html is not None:
        # The HTML renderer loads only when an HTML report is asked for.
        from .run.html import render_html

        outputs.append((args.html, render_html(report, gate)))
    if args.markdown is not None:
        # The markdown renderer loads only when a summary is asked for.
        from .run.markdown import render_markdown

        outputs.append((args.markdown, render_markdown(report, gate)))
    color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    # As a run prints it: fitted to a terminal or a width the user set; a log (CI) keeps the
    # table whole.
    sized = sys.stdout.isatty() or "COLUMNS" in os.environ
    shown = merged_scorecard_text(
        report, width=shutil.get_terminal_size().columns if sized else None, color=color)
    if gate is not None:
        # The gate's summary lines, read only when the merge had a baseline to gate against.
        from .run.gate_text import gate_lines

        shown += "\n" + "\n".join(gate_lines(gate))
    return outputs, shown


def _gate(report: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    # The gate (numpy's bootstrap) loads only for a merge given a baseline.
    from .run.gate import compare_reports

    try:
        baseline = read_baseline(args.baseline)
    except BaselineError as exc:
        raise InputError(str(exc)) from None
    options: dict[str, Any] = {"baseline_name": str(args.baseline)}
    # The tolerance the shards were run with (they agree on it, or the merge refused them),
    # so the merged verdict is the one a single run would have given.
    settings = report["run"].get("settings")
    recorded = settings.get("regression_tolerance") if isinstance(settings, dict) else None
    if args.regression_tolerance is not None:
        options["tolerance"] = args.regression_tolerance
    elif recorded is not None:
        # Checked as the option is: a recorded 5 let every drop pass.
        if isinstance(recorded, bool) or not isinstance(recorded, (int, float)) or not (
                0 <= recorded < 1):
            raise InputError(f"the reports' run.settings.regression_tolerance is "
                             f"{recorded!r}, expected a drop from 0 to below 1")
        options["tolerance"] = recorded
    try:
        gate = compare_reports(report, baseline, **options)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    # Recorded as a run records its baseline: relative to where it ran (here, the current
    # directory) when below it, so the report does not carry the machine's layout.
    return {"baseline": display_path(args.baseline, Path.cwd()), "mode": args.baseline_mode,
            **gate}


def merge_command(args: argparse.Namespace) -> int:
    # The merge loads the engine (the scorecard and the task families): not needed for --help.
    from .run.merge import merge_reports

    names = [str(path) for path in args.reports]
    outputs_given = [p for p in (args.report, args.html, args.markdown) if p is not None]
    if len({p.resolve() for p in outputs_given}) < len(outputs_given):
        # The markdown written over the merged report would lose it without a word.
        raise InputError("two of --report, --html and --markdown name one file: give each "
                         "its own path")
    for output in outputs_given:
        # Written over, a shard's report (or the baseline) would be lost to the merge.
        for source in [*args.reports, *([args.baseline] if args.baseline else [])]:
            if output.resolve() == source.resolve():
                raise InputError(f"{output} is both an input of the merge and where it "
                                 "would write: give the output another path")
    reports = [_load(path, "report") for path in args.reports]
    try:
        report = merge_reports(reports, names)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except Exception as exc:
        # Input the checks let through that still breaks the merge: exit 2, never the 1 of a
        # gate that failed.
        raise InputError(f"the reports could not be merged ({type(exc).__name__}: {exc})"
                         ) from None
    if not report["cases"] and not any("case_id" in entry for entry in report["not_evaluated"]):
        # A merged report of nothing reads as a pass, where each job's own run was pytest's
        # "no tests ran".
        raise NothingEvaluated(
            f"no report holds a scored output or a pair left unevaluated: no job evaluated "
            f"anything{_selection_text(report)}; nothing written")
    try:
        outputs, shown = _rendered(report, args)
    except InputError:
        raise
    except Exception as exc:
        # Input the checks let through that still breaks the gate or a renderer: exit 2,
        # never the 1 of a gate that failed, and no file written.
        raise InputError(f"the merged report could not be gated or rendered "
                         f"({type(exc).__name__}: {exc})") from None
    gate = report.get("gate")
    _write_all(outputs)
    print(shown)
    print(f"merged {count(len(names), 'report')} into {args.report}")
    if gate is None or gate["mode"] != "fail":
        return 0
    # An incomplete gate (judge errors, test errors or missing outputs kept comparisons from
    # being made) is no pass, nor the model's failure: 4, as a run whose tool could not do
    # its job exits.
    return {"fail": 1, "incomplete": 4}.get(gate["verdict"], 0)


def _selection_text(report: dict[str, Any]) -> str:
    """`` (selection: -m 'evl')``: the options and node ids every job was asked to run by
    (the shards share them, or the merge refused them)."""
    selection = report["run"].get("selection")
    if not isinstance(selection, dict):
        return ""
    asked = [f"-k {selection['keyword']!r}"] if selection.get("keyword") else []
    asked += [f"-m {selection['markexpr']!r}"] if selection.get("markexpr") else []
    asked += [f"--deselect {d}" for d in selection.get("deselect") or ()]
    asked += [str(a) for a in selection.get("args") or () if "::" in str(a)]
    return f" (selection: {' '.join(asked)})" if asked else ""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # A console that cannot show a character of the scorecard (→, a model's name) shows it
    # escaped rather than ending the command after its files are written.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        return merge_command(args)
    except InputError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except NothingEvaluated as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return NothingEvaluated.EXIT_STATUS
    except Exception as exc:
        # Whatever else went wrong is the tool's failure: 2, never the 1 of a failed gate.
        print(f"{PROG} {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

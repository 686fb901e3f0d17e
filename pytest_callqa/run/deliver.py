"""The end of a run that evaluated something: the report compared with its baseline (the
pre-merge gate), and the files a CI job keeps — the JSON report, the HTML report and the
markdown summary for a pull-request comment."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .settings import Settings, display_path
from .spool import entry_text
from .summary import CASES_MARK, GOLDEN_MARK

if TYPE_CHECKING:
    from .summary import Summary


# The gate's verdict when it could not be run; its "problem" says why.
NOT_RUN = "not run"


class BaselineError(Exception):
    """The baseline report cannot be used (missing, not JSON, not a callqa report)."""


@dataclass
class Delivered:
    """What the end of the run produced: the report (with its gate) and the gate's lines."""

    report: dict[str, Any]
    gate: dict[str, Any] | None = None
    lines: list[str] = field(default_factory=list)
    # A calibrating run's table and verdict (--callqa-calibrate).
    calibration_lines: list[str] = field(default_factory=list)
    calibration_failed: bool = False
    # Judge errors left labels out and no metric failed: not a pass (the run exits as when
    # the tool could not do its job).
    calibration_incomplete: bool = False
    # The report files that could not be written, each with why: the run still ends with its
    # scorecard, and exits non-zero rather than green without them.
    unwritten: dict[Path, str] = field(default_factory=dict)
    # Why the gate could not be run, when it could not: the run exits as on bad input.
    gate_problem: str | None = None

    @property
    def failed(self) -> bool:
        """Whether the gate failed a run in ``fail`` mode."""
        gate = self.gate or {}
        return gate.get("verdict") == "fail" and gate.get("mode") == "fail"

    @property
    def gate_incomplete(self) -> bool:
        """Whether, in ``fail`` mode, the gate could not make comparisons it should have
        (judge errors, test errors) and found no regression in the others: not a pass, and
        not the model's failure — the run exits as when the tool could not do its job."""
        gate = self.gate or {}
        return gate.get("verdict") == "incomplete" and gate.get("mode") == "fail"


def destination(path: Path) -> tuple[Path, bool]:
    """Where text written to ``path`` goes, and whether it is appended there in place: the
    file a symlink points to (the link stays, as a shell's ``>`` leaves it); a device or FIFO
    already there, which a rename would replace; and a descriptor of a process
    (``/dev/stdout``, ``/proc/self/fd/1``), whose file a rename would take from under the
    shell's redirection: the log it wrote, and this process's later output, were lost."""
    try:
        mode = path.stat().st_mode
    except OSError:  # nothing there yet, or a link to nothing: the write says what fails
        mode = stat.S_IFREG
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) or _descriptor_link(path) is not None:
        return path, True
    return Path(os.path.realpath(path)), False


def _own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that ``path`` names (``/dev/stdout`` →
    ``/proc/self/fd/1``: 1), if it names one."""
    link = _descriptor_link(path)
    if link is None:
        return None
    parts = link.parts
    if len(parts) == 4 and parts[1:3] == ("dev", "fd"):
        number = parts[3]
    elif len(parts) == 5 and parts[2] in ("self", str(os.getpid())) and parts[3] == "fd":
        number = parts[4]
    else:  # another process's descriptor, or no descriptor at all (/proc/self/status)
        return None
    return int(number) if number.isdigit() else None


def _descriptor_link(path: Path) -> Path | None:
    """The first path on the way from ``path`` to its file in /proc or /dev/fd, if any."""
    current = Path(os.path.abspath(path))
    for _link in range(40):  # as many links as the kernel follows
        if current.parts[1:2] == ("proc",) or current.parts[1:3] == ("dev", "fd"):
            return current
        if not current.is_symlink():
            return None
        current = Path(os.path.abspath(current.parent / os.readlink(current)))
    return None


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[IO[str]]:
    """A text file to write ``path``'s new content to: a temporary file beside its
    :func:`destination`, renamed over it once complete, or the device or FIFO itself."""
    target, in_place = destination(path)
    if in_place and (descriptor := _own_descriptor(path)) is not None:
        # Through the descriptor itself, after what this process's streams hold: a file the
        # shell opened with '>' has one offset, which a new opening of it would not move, and
        # the terminal's later lines wrote over the report.
        sys.stdout.flush()
        sys.stderr.flush()
        with os.fdopen(os.dup(descriptor), "w", encoding="utf-8") as out:
            yield out
        return
    if in_place:
        # Appended: a file behind a descriptor keeps what was written to it before.
        with target.open("a", encoding="utf-8") as out:
            yield out
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            yield out
        # Replacing atomically: a run killed mid-write must not leave half a file behind.
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomically(path: Path, text: str) -> None:
    with _replacing(path) as out:
        out.write(text)


@contextlib.contextmanager
def _writing(delivered: Delivered, what: str, path: Path) -> Iterator[None]:
    """Notes in ``delivered`` why ``what`` could not be written to ``path`` (a directory
    there, a parent that is a file, no permission), instead of ending the run in a
    traceback before its scorecard."""
    try:
        yield
    except OSError as exc:
        delivered.unwritten[path] = (f"callqa: cannot write the {what} to {path}: "
                                     f"{exc.strerror or exc}")


def read_baseline(path: Path) -> dict[str, Any]:
    """The baseline report, or :class:`BaselineError` naming the file and what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"baseline report {path} does not exist") from None
    except (OSError, ValueError, RecursionError) as exc:
        # Not UTF-8, not JSON, or JSON past Python's limits.
        raise BaselineError(f"baseline report {path} cannot be read: {exc}") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("callqa-report"):
        raise BaselineError(f"baseline report {path} is not a callqa JSON report (no "
                            "'schema': 'callqa-report/1')")
    # Every key the gate reads, checked before the first test rather than after the last.
    from .report_check import check_report

    try:
        check_report(data, f"baseline report {path}")
    except ValueError as exc:
        raise BaselineError(str(exc)) from None
    return data


def write_report(path: Path, data: dict[str, Any], entries: Iterable[str],
                 golden: Iterable[tuple[str, Any]] = ()) -> None:
    """The JSON report at ``path``: its case entries (JSON texts, :func:`entry_text`) and
    golden cases streamed in, one line each (one in memory at a time), where ``data`` has
    their marks; the rest indented."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    head, golden_mark, rest = text.partition(json.dumps(GOLDEN_MARK, ensure_ascii=False))
    if not golden_mark:
        head, rest = "", text
    middle, cases_mark, tail = rest.partition(json.dumps(CASES_MARK, ensure_ascii=False))
    with _replacing(path) as out:
        out.write(head)
        if golden_mark:
            _stream(out, "{}", (f"{json.dumps(key, ensure_ascii=False)}: "
                                f"{json.dumps(value, ensure_ascii=False, allow_nan=False)}"
                                for key, value in golden))
        out.write(middle)
        if cases_mark:
            _stream(out, "[]", entries)
        out.write(tail)


def _stream(out: IO[str], brackets: str, items: Iterable[str]) -> None:
    """``items`` as a JSON array or object (``brackets``), one per line."""
    out.write(brackets[0])
    separator = "\n    "
    for item in items:
        out.write(separator)
        out.write(item)
        separator = ",\n    "
    out.write(f"\n  {brackets[1]}" if separator != "\n    " else brackets[1])


def deliver(summary: Summary, settings: Settings, rootpath: Path) -> Delivered:
    """Build the report, gate it against the baseline, and write the configured files.

    The report's case entries are streamed from the results the tests spooled; only the
    gate, the HTML report and the markdown summary, which read them all, load them at once.
    """
    whole = any(p is not None for p in (settings.baseline, settings.html, settings.markdown))
    data = summary.report_data(with_cases=whole)
    delivered = Delivered(report=data)
    calibrated = data["run"].get("calibration")
    if calibrated is not None:
        # The table's renderer loads only in a calibrating run.
        from ..engine.calibration import calibration_lines

        delivered.calibration_lines = calibration_lines(
            data["calibration"], judge=data["run"]["judge"]["description"],
            model=calibrated["model"], min_kappa=calibrated["min_kappa"],
            unread=calibrated.get("unread_case_files", ()))
        delivered.calibration_failed = calibrated["verdict"] == "fail"
        delivered.calibration_incomplete = calibrated["verdict"] == "incomplete"
    if settings.baseline is not None:
        # The gate (numpy's bootstrap) loads only for a run with a baseline.
        from .gate import compare_reports
        from .gate_text import gate_lines

        try:
            baseline = read_baseline(settings.baseline)
            # The policy's per-metric tolerances come with the metric definitions the report
            # records, as a merge of shards reads them.
            gate = compare_reports(data, baseline, tolerance=settings.regression_tolerance,
                                   baseline_name=display_path(settings.baseline, rootpath))
        except Exception as exc:  # any failure of the gate is the tool's, not the model's
            # The gate could not be run (the baseline changed or went since the run began,
            # a setting out of range, a value the checks let through that still broke it):
            # the run's own files are still written, without it.
            said = str(exc) if isinstance(exc, (BaselineError, ValueError)) else (
                f"the gate could not compare against the baseline "
                f"({type(exc).__name__}: {exc})")
            delivered.gate_problem = f"callqa: {said}"
            # Said in every file too: a report without a gate read as a run never gated.
            gate = {"baseline": display_path(settings.baseline, rootpath),
                    "mode": settings.baseline_mode, "verdict": NOT_RUN, "problem": said}
            data["gate"] = gate
            delivered.gate = gate
        else:
            gate = {"baseline": display_path(settings.baseline, rootpath),
                    "mode": settings.baseline_mode, **gate}
            data["gate"] = gate
            delivered.gate = gate
            delivered.lines = gate_lines(gate)
    if settings.report is not None:
        with _writing(delivered, "JSON report", settings.report):
            if whole:
                cases, data["cases"] = data["cases"], CASES_MARK
                try:
                    write_report(settings.report, data, (entry_text(e) for e in cases))
                finally:
                    data["cases"] = cases
            else:
                card = summary.scorecard()
                write_report(settings.report, data, summary.case_entry_texts(card),
                             summary.golden_case_entries(card))
    if not whole:
        del data["cases"], data["golden_cases"]
    if settings.html is not None:
        # The HTML renderer loads only when an HTML report is asked for.
        from .html import render_html

        with _writing(delivered, "HTML report", settings.html):
            write_atomically(settings.html, render_html(data, delivered.gate))
    if settings.markdown is not None:
        # The markdown renderer loads only when a summary is asked for.
        from .markdown import render_markdown

        with _writing(delivered, "markdown summary", settings.markdown):
            write_atomically(settings.markdown, render_markdown(data, delivered.gate))
    return delivered

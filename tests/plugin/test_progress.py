"""The up-front calls on the terminal (progress.py): rewritten in place on a terminal, a few
lines in a log, and out of the tests' way while a batch runs beside them."""

from __future__ import annotations

from typing import Any

from pytest_callqa.progress import TerminalProgress


class Reporter:
    """What TerminalProgress uses of pytest's terminal reporter, writing to ``lines``:
    ``\\r`` starts a line rewritten in place."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.lines: list[str] = []

    def isatty(self) -> bool:
        return self.tty

    def ensure_newline(self) -> None:
        if self.lines and self.lines[-1].startswith("\r"):
            self.lines.append("")

    def rewrite(self, line: str, erase: bool = False) -> None:
        self.lines.append("\r" + line)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def progress(tty: bool) -> tuple[TerminalProgress, Reporter]:
    reporter = Reporter(tty)
    shown: Any = reporter
    return TerminalProgress(shown, None, 120), reporter


def test_on_a_terminal_detaching_ends_the_line_so_test_results_start_on_their_own() -> None:
    shown, reporter = progress(tty=True)
    shown.start("judging 4 outputs")
    shown.update(4, 4)
    shown.detach()
    assert reporter.lines[-2:] == ["\rcallqa: judging 4 outputs...", ""]
    shown.finish("judged 4 outputs in 0.40 s")
    assert reporter.lines[-2:] == ["\rcallqa: judged 4 outputs in 0.40 s", ""]


def test_in_a_log_detaching_writes_nothing() -> None:
    shown, reporter = progress(tty=False)
    shown.start("judging 4 outputs")
    before = list(reporter.lines)
    shown.detach()
    assert reporter.lines == before == ["callqa: judging 4 outputs..."]

"""The up-front judge and generation calls shown on pytest's terminal while they run."""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest
    from _pytest.terminal import TerminalReporter


class TerminalProgress:
    """The up-front calls on the terminal: one line rewritten in place on a terminal; a
    start line and an end line otherwise (plus one per quarter done, at most every 10 s),
    so a CI log gets a few lines however many calls are made."""

    REFRESH_S = 0.1
    LOG_EVERY_S = 10.0

    def __init__(self, reporter: TerminalReporter, capture: Any, width: int) -> None:
        self.reporter = reporter
        self.capture = capture
        self.width = width
        self.tty = reporter.isatty()
        self.text = ""
        self.shown = 0.0
        self.quarter = 0

    @classmethod
    def of(cls, config: pytest.Config) -> TerminalProgress | None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return None
        return cls(reporter, config.pluginmanager.get_plugin("capturemanager"),
                   config.get_terminal_writer().fullwidth)

    def _write(self, line: str, *, final: bool, first: bool = False) -> None:
        # Capture is suspended between tests, but a result fixture can start a batch too.
        guard = (self.capture.global_and_fixture_disabled() if self.capture is not None
                 else contextlib.nullcontext())
        with guard:
            if first:
                self.reporter.ensure_newline()
            if self.tty:
                self.reporter.rewrite(line, erase=True)
                if final:
                    self.reporter.write_line("")
            else:
                self.reporter.write_line(line)

    def start(self, text: str) -> None:
        self.text = text
        self.shown = time.monotonic()
        self.quarter = 0
        self._write(self._fit(f"callqa: {text}..."), final=False, first=True)

    def _fit(self, line: str) -> str:
        # A line rewritten in place must not wrap, or each rewrite leaves a line behind.
        width = self.width - 1
        return line if len(line) <= width or not self.tty else line[:width - 1] + "…"

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        line = f"callqa: {done}/{total} calls done, {self.text}"
        if self.tty:
            if now - self.shown >= self.REFRESH_S or done == total:
                self.shown = now
                self._write(self._fit(line), final=False)
            return
        quarter = 4 * done // max(total, 1)
        if 0 < quarter < 4 and quarter > self.quarter and now - self.shown >= self.LOG_EVERY_S:
            self.quarter, self.shown = quarter, now
            self._write(line, final=False)

    def detach(self) -> None:
        """The calls go on while the tests run: the line rewritten in place is ended, and no
        count is shown until :meth:`finish` (between tests' results, it would break them)."""
        if self.tty:
            self._write(self._fit(f"callqa: {self.text}..."), final=True)

    def finish(self, text: str) -> None:
        self._write(f"callqa: {text}", final=True)

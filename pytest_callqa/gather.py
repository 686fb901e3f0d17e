"""The controller's side of a run: what tests (and xdist workers) attached to their reports
is gathered here, and the run ends with the scorecard and the JSON report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

    from .session import CallqaSession

# The attribute of a test report that carries a builtins-only payload to the controller.
REPORT_ATTR = "callqa"
# The key of an xdist worker's ``workeroutput`` that carries its call counters.
WORKER_OUTPUT_KEY = "callqa_usage"


class ResultsGatherer:
    """Hooks of the controlling process (or the only one), registered per run by
    :func:`pytest_configure`: they gather what tests attached to their reports and end the
    run with the scorecard and the JSON report."""

    def __init__(self, state: CallqaSession) -> None:
        self.state = state
        self.run_ids: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fires for every report (from xdist workers too): one payload per test id."""
        payload = getattr(report, REPORT_ATTR, None)
        if report.when == "teardown" and isinstance(payload, dict):
            self.state.summary.record(report.nodeid, payload)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Fires on the xdist controller as each worker ends: keeps its call counters for
        the header and the report (a worker that crashed has none)."""
        usage = (getattr(node, "workeroutput", None) or {}).get(WORKER_OUTPUT_KEY)
        if isinstance(usage, dict):
            self.state.usage.worker_usage.append(usage)
        run_id = (getattr(node, "workerinput", None) or {}).get("testrunuid")
        if isinstance(run_id, str):
            self.run_ids.append(run_id)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fires once, after the last test: writes the JSON report when one is configured
        and drops the run's budget ledgers."""
        path = self.state.settings.report
        if path is not None and self.state.summary.has_evaluations:
            self.state.summary.write_report(path)
        self.state.usage.end_budget(self.run_ids)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        """Fires once, at the end of the terminal output: prints the scorecard."""
        if not self.state.summary.has_evaluations:
            return
        terminalreporter.write_sep("=", "callqa scorecard")
        terminalreporter.write_line(self.state.summary.render(color=terminalreporter.hasmarkup))
        if self.state.settings.report is not None:
            terminalreporter.write_line(f"callqa report: {self.state.settings.report}")

"""The controller's side of a run: what tests (and xdist workers) attached to their reports
is gathered here, and the run ends with the scorecard and the JSON report."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pytest

from .run.deliver import Delivered, deliver
from .run.gaps import budget_cut
from .run.junit import suite_properties
from .run.settings import ERROR_PAYLOAD, CallqaUsageError, display_path

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

    from .selection import ShardSelection
    from .session import CallqaSession

# The attribute of a test report that carries a builtins-only payload to the controller.
REPORT_ATTR = "callqa"
# The key of an xdist worker's ``workeroutput`` that carries its catalogue's fingerprint
# and bad files (Catalog.handed_over).
CATALOGUE_OUTPUT_KEY = "callqa_catalogue"
# The key of an xdist worker's ``workeroutput`` that carries its call counters.
WORKER_OUTPUT_KEY = "callqa_usage"
# The attribute of the failed report xdist makes for an evaluation test its worker died
# running: the tool's (or the environment's) failure, shown as an error, not the model's.
CRASHED_ATTR = "callqa_worker_crashed"
# The number pytest appends to each of a test's equal parameter ids ("a-b" twice: "a-b0",
# "a-b1"; after "_" when the id ends with a digit).
_NUMBERED = re.compile(r"_?\d+$")


def hand_over(config: pytest.Config, state: CallqaSession) -> None:
    """On an xdist worker, after its last test: put its call counters and what its
    catalogue tells the report (Catalog.handed_over) in its ``workeroutput``."""
    if not state.is_worker:
        return
    output = config.workeroutput  # type: ignore[attr-defined]
    usage = state.usage.own()
    if usage is not None:
        output[WORKER_OUTPUT_KEY] = usage
    output[CATALOGUE_OUTPUT_KEY] = state.catalog.handed_over()


class ResultsGatherer:
    """Hooks of the controlling process (or the only one), registered per run by
    :func:`pytest_configure`: they gather what tests attached to their reports and end the
    run with the scorecard and the JSON report."""

    def __init__(self, state: CallqaSession,
                 shard_selection: ShardSelection | None = None) -> None:
        self.state = state
        # The run's --callqa-shard split, which tells whether it left the shard no test.
        self.shard_selection = shard_selection
        self.run_ids: list[str] = []
        self.delivered: Delivered | None = None
        # What kept the end of the run from being whole: the gate, the project's hook.
        self.problems: list[str] = []
        self.empty_shard_of: pytest.Session | None = None
        # The ids of the tests that finished, per xdist worker (None: this process), and
        # under xdist how many tests, and which workers, collected: a run told to stop at a
        # failure of its last test stopped nothing early. Ids, not reports: a test rerun (a
        # reruns plugin) finishes once per attempt, and under --dist each once per worker.
        self.finished: dict[str | None, set[str]] = {}
        self.collected: int | None = None
        self.workers: set[str] = set()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fires for every report (from xdist workers too): one payload per test id. A
        worker that runs tests is past its up-front batch: the preload need not wait. An
        evaluation has reported: the controller may read the golden cases ahead."""
        self.state.preload_now()
        if report.when == "teardown":
            self.finished.setdefault(getattr(report, "worker_id", None), set()).add(
                report.nodeid)
        payload = getattr(report, REPORT_ATTR, None)
        if report.when == "teardown" and isinstance(payload, dict):
            self.state.summary.record(report.nodeid, payload)
            self.state.read_cases_ahead()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Fires on the xdist controller as each worker has collected (the same tests)."""
        self.collected = len(ids)
        self.workers.add(node.gateway.id)

    @pytest.hookimpl(optionalhook=True, trylast=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport) -> None:
        """Fires on the xdist controller when a worker died running a test (a segfault, the
        out-of-memory killer, ``os._exit``, a timeout plugin's kill), before its failed
        report, which carries no payload: the test's pair was not evaluated, by the tool's
        or the environment's failure, not the model's. Last, so a plugin that runs the test
        again (its report then no longer failed) goes first."""
        if not report.failed:
            return
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "?")
        payload = self._crashed_pair(crashitem, f"worker {worker} crashed while running "
                                                "the test")
        if payload is not None:
            setattr(report, CRASHED_ATTR, True)
            self.state.summary.record(crashitem, payload)

    def _crashed_pair(self, nodeid: str, reason: str) -> dict[str, Any] | None:
        """The not-evaluated payload of the (model, case) pair whose test ``nodeid`` is,
        told by its parameter id ``<model>-<case id>`` (other parameters may be joined to it
        with ``-``) against the configured models and the golden cases; None when the test
        has no pair, or the id could be more than one."""
        # The parameters start at the first "[" after the file's path: a test's and a
        # class's names hold none, while a case id or a model name may hold "::".
        name = nodeid.partition("::")[2]
        start = name.find("[")
        if start < 0 or not name.endswith("]"):
            return None
        parts = name[start + 1:-1].split("-")
        try:
            cases = {ref.id: ref for ref in self.state.catalog.files().cases}
        except CallqaUsageError:
            return None  # the workers reported why the cases cannot be read
        models = self._models_in_ids()
        shared = _shared_ids(models, cases)
        # A test whose only parameters are its pair: its whole id is "<model>-<case id>",
        # even when a shorter case id is a part of it ("...-refund" within "...-refund-b").
        whole = "-".join(parts)
        exact = {(model, whole.removeprefix(f"{shown}-")) for model, shown in models
                 if whole.startswith(f"{shown}-") and whole.removeprefix(f"{shown}-") in cases}
        pairs = exact if len(exact) == 1 and _NUMBERED.sub("", whole) not in shared else set()
        if not pairs:
            for first in range(len(parts)):
                for last in range(first + 1, len(parts) + 1):
                    text = "-".join(parts[first:last])
                    if _NUMBERED.sub("", text) in shared:
                        # Two pairs whose ids read the same ("gpt" with "4-x", "gpt-4" with
                        # "x"): pytest numbered them, and the number tells no pair.
                        return None
                    for model, shown in models:
                        case_id = text.removeprefix(f"{shown}-")
                        if case_id != text and case_id in cases:
                            pairs.add((model, case_id))
        if len(pairs) != 1:
            return None
        model, case_id = pairs.pop()
        return {ERROR_PAYLOAD: {"model": model, "case_id": case_id,
                                "task": cases[case_id].task, "reason": reason}}

    def _models_in_ids(self) -> list[tuple[str, str]]:
        """Each configured model with its name as a test id shows it: pytest escapes what is
        not ASCII (``\\xe9``) unless its ini option to keep ids as they are is set, so a
        name is looked for both ways."""
        # pytest's own escaping (its private ``ascii_escaped``) does this to a text.
        return [(model, shown) for model in self.state.summary.configured_models()
                for shown in dict.fromkeys((model, model.encode("unicode_escape").decode()))]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Fires on the xdist controller as each worker ends: keeps its call counters for
        the header and the report (a worker that crashed has none)."""
        output = getattr(node, "workeroutput", None) or {}
        usage = output.get(WORKER_OUTPUT_KEY)
        if isinstance(usage, dict):
            self.state.usage.worker_usage.append(usage)
        self.state.catalog.take(output.get(CATALOGUE_OUTPUT_KEY))
        run_id = (getattr(node, "workerinput", None) or {}).get("testrunuid")
        if isinstance(run_id, str):
            self.run_ids.append(run_id)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Fires once, after the last test (before the JUnit file is written, hence
        tryfirst): gates the run against its baseline, writes the report files and the JUnit
        suite properties, and drops what its processes shared only while it lasted (budget
        ledgers, the exchange of a cache that keeps no reply)."""
        state = self.state
        if session.exitstatus != pytest.ExitCode.INTERRUPTED:
            # Ctrl-C does not wait for the imports (their thread is a daemon's).
            state.finish_preload()
        if self.shard_selection is not None and self.shard_selection.split_emptied:
            # Every selected test went to the other shards: this CI job has nothing to fail
            # (the merge of the shards' reports says whether anything was evaluated at all).
            # A selection that left no test to split is pytest's "no tests ran", as it is
            # unsharded. Set at the very end: syrupy's sessionfinish ORs pytest's own status
            # back in.
            self.empty_shard_of = session
        state.summary.stopped_early = (_stopped_early(session) if self._partial(session)
                                       else None)
        if self._delivers(session):
            # The selection left no test: a gate over no result would write its pass into
            # the report of a run that ran nothing.
            ungated = (state.settings.baseline
                       if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
                       and self.empty_shard_of is None else None)
            settings = (state.settings if ungated is None
                        else dataclasses.replace(state.settings, baseline=None))
            self.delivered = deliver(state.summary, settings, session.config.rootpath)
            if ungated is not None:
                self.delivered.lines.append(
                    f"callqa gate: not run against "
                    f"{display_path(ungated, session.config.rootpath)}: no test was selected")
            cut = budget_cut(self.delivered.report)
            self.problems = [p for p in (self.delivered.gate_problem,
                                         state.summary.hook_problem,
                                         None if cut is None else f"callqa: {cut}")
                             if p is not None]
            if self.delivered.failed or self.delivered.calibration_failed:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if ((self.delivered.unwritten or self.problems or self.delivered.gate_incomplete
                 or self.delivered.calibration_incomplete)
                    and session.exitstatus == pytest.ExitCode.OK):
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            # pytest's JUnit plugin is needed only here, at the end of a run that evaluated
            # something.
            from _pytest.junitxml import xml_key

            xml = session.config.stash.get(xml_key, None)
            if xml is not None:
                for name, value in suite_properties(self.delivered.report,
                                                    self.delivered.gate):
                    xml.add_global_property(name, value)
        state.usage.end_run(self.run_ids)

    def _partial(self, session: pytest.Session) -> bool:
        """Whether some collected test did not finish: in this process, or under xdist in
        any worker (``--dist each``: every worker runs every test) or in none (any other
        distribution: each test runs in one)."""
        expected = self.collected if self.collected is not None else len(session.items)
        if self.workers and getattr(session.config.option, "dist", "no") == "each":
            return any(len(self.finished.get(worker, ())) < expected
                       for worker in self.workers)
        return len(set().union(*self.finished.values())) < expected

    def _delivers(self, session: pytest.Session) -> bool:
        """Whether the run ends with a scorecard and its files: it evaluated something (or
        is a shard), or its selection left no test and it was told to write report files
        (empty ones, recording that selection as an empty shard's do: the last run's files
        left in place would read as this run's). ``--setup-only`` (and ``--setup-plan``)
        ran their fixtures — an evaluation test's fixtures score its output — but no test:
        like ``--collect-only``, it writes no report, which would stand for a run of the
        suite (a baseline gated against, a report file the last real run wrote
        overwritten)."""
        option = session.config.option
        if getattr(option, "setuponly", False) or getattr(option, "collectonly", False):
            return False
        settings = self.state.settings
        return self.state.summary.delivers or (
            session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and any(p is not None for p in (settings.report, settings.html, settings.markdown)))

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Fires once, last: the spooled results are dropped, and the "no tests ran" (exit
        5) of a shard the split gave no test becomes a pass."""
        self.state.summary.close()
        session = self.empty_shard_of
        if session is not None and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> Any:
        """Fires once, at the end of the terminal output; outermost (tryfirst), so what it
        prints after the other summaries — failures, the short test summary — comes last,
        right above pytest's closing line: the scorecard and the gate's verdict."""
        result = yield
        for problem in self.problems:
            terminalreporter.write_line(problem, red=True)
        if self.delivered is None:
            if self.state.summary.delivers and getattr(terminalreporter.config.option,
                                                       "setuponly", False):
                terminalreporter.write_line("callqa: no scorecard and no report: --setup-only "
                                            "ran the tests' fixtures, not the tests")
            return result
        terminalreporter.write_sep("=", "callqa scorecard")
        # Fitted to a terminal's width; a log (CI) keeps the table whole, whatever width the
        # process believes it has.
        width = (terminalreporter.config.get_terminal_writer().fullwidth
                 if terminalreporter.isatty() else None)
        terminalreporter.write_line(self.state.summary.render(
            color=terminalreporter.hasmarkup, width=width))
        if self.delivered is not None:
            for line in self.delivered.lines:
                terminalreporter.write_line(line)
            if self.delivered.calibration_lines:
                terminalreporter.write_sep("=", "callqa calibration")
            for line in self.delivered.calibration_lines:
                terminalreporter.write_line(line, red="FAIL —" in line
                                            or "INCOMPLETE —" in line)
        for what, path in (("report", self.state.settings.report),
                           ("HTML report", self.state.settings.html),
                           ("markdown summary", self.state.settings.markdown)):
            if path is not None and self.delivered is not None:
                unwritten = self.delivered.unwritten.get(path)
                terminalreporter.write_line(unwritten or f"callqa {what}: {path}",
                                            red=unwritten is not None)
        return result


def _shared_ids(models: list[tuple[str, str]], case_ids: Iterable[str]) -> set[str]:
    """The parameter ids ``<model>-<case id>`` (model names as :meth:`_models_in_ids` gives
    them) that two pairs share."""
    seen: set[str] = set()
    shared: set[str] = set()
    for _model, shown in models:
        for case_id in case_ids:
            text = f"{shown}-{case_id}"
            (shared if text in seen else seen).add(text)
    return shared


# What a test's three reports have alike: its id (a string, or pytest 9's parsed ``NodeId``
# with it), location and keywords.
_SAME_PER_TEST = ("_id", "nodeid", "location", "keywords")
# Strings that repeat across every test of a run (or of a module).
_REPEATED = ("when", "outcome", "testrun_uid", "worker_id", "$report_type")


class SharedReportValues:
    """Equal values of an evaluation test's reports, kept once.

    pytest's terminal reporter keeps every report of the run, three per test. Those the
    xdist controller receives are decoded one by one, so each carries its own copy of the
    test's id, location and keywords and of the run's id: about 4 KB a test that a
    100,000-test run holds to its end. After every other plugin has seen a report, the
    test's second and third reports take the first one's id, location and keywords (the
    first report of each worker's current test is remembered, as its reports arrive in
    turn), and strings that repeat across tests are interned. Values are unchanged (all
    are equal, and immutable but the keywords, which nothing changes once reported); only
    copies go.
    """

    def __init__(self) -> None:
        self._first: dict[object, pytest.TestReport] = {}

    def share(self, report: pytest.TestReport, marker: str) -> None:
        if marker not in report.keywords:
            return  # not an evaluation test's: left as pytest made it
        values = report.__dict__
        for name in _REPEATED:
            if isinstance(values.get(name), str):
                values[name] = sys.intern(values[name])
        source = values.get("worker_id")
        first = self._first.get(source)
        if first is not None and first.nodeid == report.nodeid:
            for name in _SAME_PER_TEST:
                kept = first.__dict__.get(name)
                if name in values and kept is not None and kept == values[name]:
                    values[name] = kept
            return
        path, line, domain = report.location
        report.location = (sys.intern(path), line, domain)
        # The module's name, its directory's, the marker's: the same in many tests.
        report.keywords = {sys.intern(k): v for k, v in report.keywords.items()}
        self._first[source] = report


def _stopped_early(session: pytest.Session) -> str:
    """Why a run that ended before its last test did — pytest's ``-x``/``--maxfail`` (the
    xdist controller's own record of it under xdist), crashed xdist workers, or an
    interruption."""
    dsession = session.config.pluginmanager.getplugin("dsession")
    reason = (session.shouldfail or session.shouldstop or getattr(dsession, "shouldstop", False)
              # xdist's own record of a stop after crashed workers ("worker gw1 crashed and
              # worker restarting disabled"), which sets neither.
              or getattr(dsession, "_summary_report", None))
    if reason:
        return str(reason) if isinstance(reason, str) else "stopped"
    if session.exitstatus == pytest.ExitCode.INTERRUPTED:
        return "interrupted"
    # Some test did not finish for a reason no one recorded: still a part of the suite.
    return "stopped before its last test"

"""How a failed evaluation test is told apart: a failure an assertion helper already explained,
or an error of the tool, not of the model — a verdict the judge could not give, a generation
call or an outputs file that failed — what the run keeps of a pair such an error left
unevaluated, and how the JUnit file records such an error; and the run's keys blanked out of
test reports and pytest's logs."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from .engine.core.urls import knows_secrets, redact_known
from .gather import CRASHED_ATTR
from .outputs import OutputsError
from .run.resolver import Interrupted, interruption
from .run.settings import ERROR_PAYLOAD, CallqaCallError

if TYPE_CHECKING:
    from .run.catalog import CaseRef

T = TypeVar("T")


# Set on the ``pytest.fail`` exception of a test the tool stopped (a generation or judge
# call that failed, an outputs file that cannot be used), and on whatever interrupted the
# tool's work on the test's pair (pytest-timeout's ``Failed``). Raised in a fixture that is
# a setup error anyway; raised by a later run of a repeated test, in the call phase, the mark
# is what tells it apart from the model failing. (A subclass would do too, but pytest's
# summary line would then print its dotted name where it prints "Failed:".)
TOOL_FAILURE = "callqa_tool_failure"
# Set, beside TOOL_FAILURE, on what interrupted the tool's work (pytest-timeout's ``Failed``):
# a test over repeated runs starts none of its other runs after it, as its time is up.
INTERRUPTION = "callqa_interruption"
# The attribute of a call report whose test the tool stopped (crosses xdist too: a report's
# attributes reach the controller as they are).
TOOL_ERROR_ATTR = "callqa_tool_error"


def redact_report(report: pytest.TestReport) -> None:
    """Blank out of ``report`` every key and URL credential this process's endpoints were
    given: a frame's local variables (``pytest -l``, ``--tb=long``) or a test's captured
    output could show one, and the report goes on to the terminal, the JUnit file and, under
    xdist, the controller. Nothing to do in a run that was given none."""
    if not knows_secrets():
        return
    if report.longrepr is not None:
        text = str(report.longrepr)
        redacted = redact_known(text)
        if redacted != text:
            report.longrepr = redacted
    report.sections = [(name, redact_known(content)) for name, content in report.sections]


class LogRedaction(logging.Filter):
    """A plugin that blanks every key and URL credential this process's endpoints were given
    out of the log records pytest shows: its live log (``log_cli``), ``--log-file`` and the
    captured logs (a test's, ``caplog``'s). The HTTP library's debug trace quotes a reply's
    headers, and a server that echoes the request's ``Authorization`` header puts the key or
    the URL's Basic token there. A filter on pytest's handlers, not on a logger: a logger's
    filter never sees the records its children pass up."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not knows_secrets():
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True  # a broken log call: the handler reports it, as it would have
        redacted = redact_known(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            # What the handlers' formatters write of the exception, worked out first.
            record.exc_text = redact_known(_FORMATTER.formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redact_known(record.stack_info)
        return True

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Fires once per process (each xdist worker too), after pytest's logging plugin is
        registered, which is at the end of pytest_configure: the filter goes on each of its
        handlers before any call is sent."""
        logs = session.config.pluginmanager.get_plugin("logging-plugin")
        for name in ("log_cli_handler", "log_file_handler", "caplog_handler",
                     "report_handler"):
            handler = getattr(logs, name, None)
            if isinstance(handler, logging.Handler):
                handler.addFilter(self)


_FORMATTER = logging.Formatter()


def tool_failure(message: str) -> BaseException:
    """The ``pytest.fail`` exception for ``message``, marked as the tool's."""
    exc = pytest.fail.Exception(msg=message, pytrace=False)
    setattr(exc, TOOL_FAILURE, True)
    return exc


def failed_in_helper(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether a test failed in one of the assertion helpers (its last frame is theirs)."""
    if excinfo is None or not excinfo.errisinstance(AssertionError):
        return False
    tb = excinfo.tb
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_globals.get("__name__") == "pytest_callqa.assertions"


def tool_failed(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether a test was stopped by the tool (see :func:`is_tool_failure`)."""
    return excinfo is not None and is_tool_failure(excinfo.value)


def is_tool_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the tool's, not the model's: a verdict the judge could not give, a
    custom metric whose code raised, a :func:`tool_failure`, or an interruption of the tool's
    work (:func:`produce_or_fail`)."""
    # The engine's results module not loaded means nothing raised its exception; importing it
    # here would cost every test of every session.
    results = sys.modules.get("pytest_callqa.engine.core.results")
    return getattr(exc, TOOL_FAILURE, False) is True or (
        results is not None and isinstance(exc, results.EvaluationUnavailable))


# A project's hook that skips a pair, or says it is expected to fail, while it is produced.
_PROJECTS_WORD = (pytest.skip.Exception, pytest.xfail.Exception)


def produce_or_fail(
    produce: Callable[..., T], model: str, case: CaseRef, *args: Any,
    keep_error: tuple[pytest.Stash, pytest.StashKey[dict[str, Any]]] | None = None,
) -> T:
    """``produce(model, case, *args)``. A failed judge or generation call, or an outputs file
    that cannot be used, raises a :func:`tool_failure` with its (redacted) message alone: no
    traceback helps. Work interrupted by an exception that is no error (pytest-timeout's
    ``Failed``, raised wherever the test's time ran out) is the tool's failure too: it is
    raised as it came, marked as the tool's. With ``keep_error`` (a test's stash and its
    payload key), any error or interruption first leaves the payload that keeps the pair in
    the run's list of what was not evaluated (the report, the scorecard's notes): without it
    the pair would vanish, and its task be renormalised away without a word."""
    try:
        return produce(model, case, *args)
    except (KeyboardInterrupt, SystemExit):
        raise  # the run stops (Ctrl-C is the run's to handle)
    except _PROJECTS_WORD:
        raise
    except BaseException as exc:
        if isinstance(exc, Interrupted) and isinstance(exc.original, _PROJECTS_WORD):
            raise exc.original from None  # every test of the pair is skipped (or xfails)
        interrupted = not isinstance(exc, Exception)
        of_the_tool = isinstance(exc, (CallqaCallError, OutputsError))
        if interrupted:
            reason = interruption(model, case.id, exc)
        else:
            # Any other exception's text may quote anything (a server's reply, a header):
            # the test's error shows it; the report names only its kind.
            reason = str(exc) if of_the_tool else (
                f"{type(exc).__name__} raised (its message is in the test's error)")
        if keep_error is not None:
            stash, key = keep_error
            stash[key] = errored(model, case, reason)
        if interrupted:
            setattr(exc, TOOL_FAILURE, True)
            setattr(exc, INTERRUPTION, True)
        if not of_the_tool:
            raise
    raise tool_failure(reason)


def shown_as_error(report: pytest.TestReport) -> bool:
    """Whether a failed report is shown and counted as an error, not as a failure of the
    model: a test the tool stopped in its call phase, or an evaluation test whose xdist
    worker died (the environment's failure, not the model's: gather.py lists its pair as
    not evaluated)."""
    return report.failed and (getattr(report, CRASHED_ATTR, False) is True or (
        report.when == "call" and getattr(report, TOOL_ERROR_ATTR, False) is True))


def mark_tool_error(report: pytest.TestReport, call: pytest.CallInfo[None]) -> bool:
    """Whether the tool stopped this phase of a test (:func:`tool_failed`). Its report is
    then the tool's error: marked as such in the call phase (:data:`TOOL_ERROR_ATTR`), and,
    in a test marked ``xfail``, not the expected failure pytest's skipping plugin made of
    it (the plugin's report hook wraps that plugin's, so it comes after): the model was not
    shown to fail, and an xfail would pass the run (exit 0) with the tool down."""
    if not tool_failed(call.excinfo):
        return False
    if hasattr(report, "wasxfail"):
        report.outcome = "failed"
        del report.wasxfail
    if call.when == "call":
        setattr(report, TOOL_ERROR_ATTR, True)
    return True


def keep_setup_error(stash: pytest.Stash, key: pytest.StashKey[dict[str, Any]], model: Any,
                     case: Any, call: pytest.CallInfo[None]) -> None:
    """The payload of an evaluation test that errored in its setup before its pair was
    produced (a project's fixture it uses raised first): the pair is listed as not
    evaluated, as one whose production failed is, instead of vanishing from the run (and a
    model whose every test errored so, from the scorecard)."""
    if key in stash or not isinstance(model, str) or case is None:
        return
    kind = call.excinfo.typename if call.excinfo is not None else "an error"
    stash[key] = errored(model, case, f"{kind} raised in the test's setup (its message is "
                                      "in the test's error)")


def errored(model: str, case: CaseRef, reason: str) -> dict[str, Any]:
    """The payload of a test whose pair an error left without a result."""
    return {ERROR_PAYLOAD: {"model": model, "case_id": case.id, "task": case.task,
                            "reason": reason}}


class JUnitToolErrors:
    """The JUnit file's side of a test the tool stopped in its call phase: an ``<error>``, as
    the terminal counts it, not a ``<failure>`` a CI dashboard would count against the model.

    pytest's JUnit plugin records every failed call report as a failure, whatever the
    terminal made of it. Registered in the process that writes the file (the only one, or
    the xdist controller, which gets the workers' reports with their attributes), this
    wraps that plugin's handling of each report and turns the failure it has just recorded
    for such a test into an error, in the element and in the suite's counts. The report
    itself is left as it is: the terminal, ``-x`` and the plugin's own counting read it.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, object,
                                                                               object]:
        result = yield
        if report.when == "call" and report.failed and getattr(report, TOOL_ERROR_ATTR, False):
            # pytest's JUnit plugin, loaded with pytest, is reached only for such a report.
            from _pytest.junitxml import xml_key

            xml = self.config.stash.get(xml_key, None)
            if xml is not None:
                reporter = xml.node_reporter(report)
                failure = next((node for node in reversed(reporter.nodes)
                                if node.tag == "failure"), None)
                if failure is not None:
                    failure.tag = "error"
                    xml.stats["failure"] -= 1
                    xml.stats["error"] += 1
        return result

"""How a failed evaluation test is told apart: a failure an assertion helper already explained,
or an error of the tool, not of the model — a verdict the judge could not give, a generation
call or an outputs file that failed — what the run keeps of a pair such an error left
unevaluated, and how the JUnit file records such an error."""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from .outputs import OutputsError
from .run.settings import ERROR_PAYLOAD, CallqaCallError

if TYPE_CHECKING:
    from .run.catalog import CaseRef

T = TypeVar("T")


# Set on the ``pytest.fail`` exception of a test the tool stopped (a generation or judge
# call that failed, an outputs file that cannot be used). Raised in a fixture that is a setup
# error anyway; raised by a later run of a repeated test, in the call phase, the mark is what
# tells it apart from the model failing. (A subclass would do too, but pytest's summary line
# would then print its dotted name where it prints "Failed:".)
TOOL_FAILURE = "callqa_tool_failure"
# The attribute of a call report whose test the tool stopped (crosses xdist too: a report's
# attributes reach the controller as they are).
TOOL_ERROR_ATTR = "callqa_tool_error"


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
    custom metric whose code raised, or a :func:`tool_failure`."""
    # The engine's results module not loaded means nothing raised its exception; importing it
    # here would cost every test of every session.
    results = sys.modules.get("pytest_callqa.engine.core.results")
    return getattr(exc, TOOL_FAILURE, False) is True or (
        results is not None and isinstance(exc, results.EvaluationUnavailable))


def produce_or_fail(
    produce: Callable[..., T], model: str, case: CaseRef, *args: Any,
    keep_error: tuple[pytest.Stash, pytest.StashKey[dict[str, Any]]] | None = None,
) -> T:
    """``produce(model, case, *args)``. A failed judge or generation call, or an outputs file
    that cannot be used, raises a :func:`tool_failure` with its (redacted) message alone: no
    traceback helps. With ``keep_error`` (a test's stash and its payload key), any error
    first leaves the payload that keeps the pair in the run's list of what was not
    evaluated (the report, the scorecard's notes): without it the pair would vanish, and
    its task be renormalised away without a word."""
    try:
        return produce(model, case, *args)
    except Exception as exc:
        of_the_tool = isinstance(exc, (CallqaCallError, OutputsError))
        # Any other exception's text may quote anything (a server's reply, a header): the
        # test's error shows it; the report names only its kind.
        reason = str(exc) if of_the_tool else (f"{type(exc).__name__} raised (its message is "
                                               "in the test's error)")
        if keep_error is not None:
            stash, key = keep_error
            stash[key] = errored(model, case, reason)
        if not of_the_tool:
            raise
    raise tool_failure(reason)


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

"""How a failed evaluation test is told apart: a failure an assertion helper already explained,
or an error of the tool, not of the model — a verdict the judge could not give, a generation
call or an outputs file that failed — and what the run keeps of a pair such an error left
unevaluated."""

from __future__ import annotations

import sys
from collections.abc import Callable
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

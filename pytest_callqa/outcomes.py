"""How a failed evaluation test is told apart: a failure an assertion helper already explained,
or a verdict the judge could not give (an error of the tool, not of the model)."""

from __future__ import annotations

import sys

import pytest


def failed_in_helper(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    """Whether a test failed in one of the assertion helpers (its last frame is theirs)."""
    if excinfo is None or not excinfo.errisinstance(AssertionError):
        return False
    tb = excinfo.tb
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_globals.get("__name__") == "pytest_callqa.assertions"


def judge_unavailable(excinfo: pytest.ExceptionInfo[BaseException] | None) -> bool:
    # The engine's results module not loaded means nothing raised its exception; importing it
    # here would cost every test of every session.
    results = sys.modules.get("pytest_callqa.engine.core.results")
    return (results is not None and excinfo is not None
            and excinfo.errisinstance(results.JudgeUnavailable))

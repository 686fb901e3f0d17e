"""What a run keeps in memory does not grow with its results: a pair's output and result are
dropped after its last test, and the results tests attach to their reports are spooled."""

from __future__ import annotations

import pytest

from .conftest import MiniProject

SUITE = """
from pytest_callqa.plugin import PAYLOAD_KEY, SESSION_KEY

SEEN = {}


def test_first(callqa_result, callqa_model, callqa_case):
    SEEN[(callqa_model, callqa_case.id)] = callqa_result.score


def test_second(callqa_result, callqa_model, callqa_case):
    # The pair's first test must not have dropped what its second one needs.
    assert callqa_result.score == SEEN[(callqa_model, callqa_case.id)]


def test_zz_nothing_is_held_after_the_last_tests(request):
    state = request.config.stash[SESSION_KEY]
    assert len(SEEN) == 8
    assert state.resolver._results == {} and state.resolver._outputs == {}
    assert not any(PAYLOAD_KEY in item.stash for item in request.session.items)
    # Every scored test's result went to the spool, not to the summary's memory.
    assert len(state.summary._spooled) == 16
    assert all("result" not in p for p in state.summary.collected.values())
"""


def test_results_are_dropped_after_the_last_test_of_their_pair_and_still_reported(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest("-p", "no:randomly", "--callqa-report=report.json")
    result.assert_outcomes(passed=17)
    report = project.report()
    assert sorted((c["model"], c["case_id"]) for c in report["cases"]) == sorted(
        (m, cid) for m in ("alpha", "beta") for cid in project.cases)
    assert all(c["output"] is not None for c in report["cases"])

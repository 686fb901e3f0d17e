"""What a run keeps in memory does not grow with its results: a pair's output and result are
dropped after its last test, and the results tests attach to their reports are spooled."""

from __future__ import annotations

import pytest

from pytest_callqa.run import catalog as catalog_module

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
    assert len(state.summary.spool.tests()) == 16
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


CHANGED_SUITE = """
import json
from pathlib import Path

from pytest_callqa.plugin import SESSION_KEY


def test_a_the_catalogue_holds_references_only(request):
    refs = request.config.stash[SESSION_KEY].catalog.files().cases
    assert sorted(r.id for r in refs) == %r
    assert {type(r).__name__ for r in refs} == {"CaseRef"}
    # The run's case files change under it: qa-refund's file no longer holds a case.
    Path(next(r.path for r in refs if r.id == "qa-refund")).write_text(json.dumps([]))


def test_b_each_case(callqa_case):
    assert callqa_case.transcript
"""


def test_a_case_is_read_when_its_test_runs_and_a_changed_file_fails_only_its_tests(
    project: MiniProject, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A catalogue over the size whose bodies are kept (pytester runs in this process).
    monkeypatch.setattr(catalog_module, "KEPT_CASES", 0)
    project.write_tests(CHANGED_SUITE % sorted(project.cases))
    result = pytester.runpytest("-p", "no:randomly")
    # An error of the run's inputs, not a failure of any model; the other cases still run.
    result.assert_outcomes(passed=len(project.cases), errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_b_each_case[[]qa-refund[]]*",
        "callqa: the golden case file changed during the run: invalid golden case file "
        "*qa-refund.json:",
        "  - (file) contains no case"])
    assert "During handling of the above exception" not in result.stdout.str()


# Checks, in the controller at the end of the run, what its terminal reporter kept.
KEPT_REPORTS = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    reports = {}
    for kept in terminalreporter.stats.values():
        for report in kept:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                reports.setdefault(report.nodeid, []).append(report)
    shared, apart = 0, 0
    for nodeid, three in reports.items():
        assert len(three) == 3, nodeid
        assert len({r.nodeid for r in three}) == 1 and three[0].keywords == three[2].keywords
        if "eval" in three[0].keywords:
            assert len({id(r.nodeid) for r in three}) == 1
            assert len({id(r.keywords) for r in three}) == 1
            assert len({id(r.location) for r in three}) == 1
            # pytest 9 keeps the id parsed too: one object for the three.
            assert len({id(r.__dict__.get("_id")) for r in three}) == 1
            shared += 1
        else:
            assert len({id(r.keywords) for r in three}) == 3
            apart += 1
    terminalreporter.write_line(f"kept reports: {shared} shared, {apart} apart")
"""


def test_the_controller_keeps_one_copy_of_an_evaluation_tests_report_values(
        project: MiniProject) -> None:
    # Under xdist every report is decoded on its own: three copies of each value per test,
    # about 3 KB a test that pytest's terminal reporter keeps to the end of the run.
    project.write_tests("def test_scored(callqa_result):\n    assert callqa_result\n\n\n"
                        "def test_plain():\n    assert True\n")
    project.pytester.makeconftest(KEPT_REPORTS)
    result = project.pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    result.stdout.fnmatch_lines(["kept reports: 8 shared, 1 apart"])


KEPT_MEMO_SUITE = """
from collections import Counter

from pytest_callqa.engine.tasks.base import BaseTask

VALIDATED = Counter()
_case_models = BaseTask.case_models


def counted(self, case):
    VALIDATED[case.id] += 1
    return _case_models(self, case)


BaseTask.case_models = counted


def test_pair(callqa_result):
    assert callqa_result.score is not None or callqa_result.not_scored


def test_zz_each_case_was_read_once_for_both_models(request):
    from pytest_callqa.plugin import SESSION_KEY

    cases = request.config.stash[SESSION_KEY].catalog.select()
    assert VALIDATED == {case.id: 1 for case in cases}
"""


def test_the_engine_keeps_what_it_worked_out_about_a_case_from_one_test_to_the_next(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Each (model, case) pair is evaluated when its test asks; the engine's memo is kept
    # between them, so the case's truth and config are validated once for both models.
    project.write_tests(KEPT_MEMO_SUITE)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:xdist")
    result.assert_outcomes(passed=9)

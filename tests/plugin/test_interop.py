"""The plugin beside pytest's other ways of running part of a suite, and beside other
plugins: an xdist worker that dies, tests deselected by something else than ``-k`` (--sw,
``-m``, another plugin's hook), ``--dist each`` stopped by ``-x``, ``--setup-only``, and
a project's conftest with the plugin switched off."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from .conftest import PYPROJECT, MiniProject
from .test_scorecard import SUITE

EXAMPLE_CONFTEST = Path(__file__).parents[2] / "example_project" / "conftest.py"

# beta's qa-refund dies with its worker; a conftest hook notes which reports it saw marked
# as a crash of the tool's.
CRASHING_SUITE = """
import os

def test_scored(callqa_result):
    if callqa_result.model == "beta" and callqa_result.case_id == "qa-refund":
        os._exit(1)

def test_unit():
    assert True
"""
NOTES_CRASH_REPORTS = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if getattr(report, "callqa_worker_crashed", False):
        with open("crashed.txt", "a", encoding="utf-8") as notes:
            notes.write(report.nodeid + "\\n")
"""


def test_a_worker_that_dies_leaves_its_pair_not_evaluated_not_failed_by_the_model(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before, the test was a plain failure, the scorecard said 7 outputs scored and nothing
    # of the eighth, and not_evaluated was empty: as if the model had failed the case.
    project.write_tests(CRASHING_SUITE)
    pytester.makeconftest(NOTES_CRASH_REPORTS)
    result = pytester.runpytest("-n", "2", "--callqa-report=report.json")
    result.stdout.fnmatch_lines(["*crashed while running*test_scored?beta-qa-refund*",
                                 "results: 7 outputs scored (2 models, 4 cases)",
                                 "test errors, not evaluated: beta: qa-refund"])
    [entry] = project.report()["not_evaluated"]
    assert entry["kind"] == "test_error"
    assert (entry["model"], entry["case_id"], entry["task"]) == ("beta", "qa-refund", "qa")
    assert entry["reason"].startswith("worker gw") and "crashed" in entry["reason"]
    crashed = (project.root / "crashed.txt").read_text(encoding="utf-8").split()
    assert crashed == ["test_eval.py::test_scored[beta-qa-refund]"]


def test_a_worker_that_dies_in_a_test_without_a_pair_is_left_as_xdist_reports_it(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE + "\ndef test_dies():\n    import os\n    os._exit(1)\n")
    pytester.makeconftest(NOTES_CRASH_REPORTS)
    result = pytester.runpytest("-n", "2", "--callqa-report=report.json")
    assert "crashed while running 'test_eval.py::test_dies'" in result.stdout.str()
    assert project.report()["not_evaluated"] == []
    assert not (project.root / "crashed.txt").exists()


def test_a_crashed_tests_pair_is_read_from_its_id_beside_other_parameters() -> None:
    from pytest_callqa.gather import ResultsGatherer

    cases = [SimpleNamespace(id=case_id, task="qa") for case_id in ("qa-refund", "refund")]
    state = SimpleNamespace(
        summary=SimpleNamespace(configured_models=lambda: ["alpha", "beta"]),
        catalog=SimpleNamespace(files=lambda: SimpleNamespace(cases=cases)))
    gatherer = ResultsGatherer(state)  # type: ignore[arg-type]

    def pair(nodeid: str) -> tuple[str, str] | None:
        payload = gatherer._crashed_pair(nodeid, "crashed")
        return None if payload is None else (payload["error"]["model"],
                                             payload["error"]["case_id"])

    assert pair("t.py::test[beta-qa-refund]") == ("beta", "qa-refund")
    assert pair("t.py::test[beta-qa-refund-1]") == ("beta", "qa-refund")
    assert pair("t.py::TestX::test[x-y-alpha-refund]") == ("alpha", "refund")
    assert pair("t.py::test_unit") is None
    assert pair("t.py::test[gamma-qa-refund]") is None
    # "alpha-qa-refund" joined to "beta-refund": two pairs, neither told apart.
    assert pair("t.py::test[alpha-qa-refund-beta-refund]") is None


DESELECTS_BETA = """
def pytest_collection_modifyitems(config, items):
    beta = [item for item in items if "[beta-" in item.nodeid]
    if beta:
        items[:] = [item for item in items if item not in beta]
        config.hook.pytest_deselected(items=beta)
"""
DESELECTED_LINE = ("selection: 5 evaluation tests deselected: the scorecard holds only the "
                   "results of the selected tests")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_evaluation_tests_another_plugin_deselects_make_a_partial_scorecard(
    project: MiniProject, pytester: pytest.Pytester, workers: list[str]
) -> None:
    # Before, the scorecard of alpha alone looked whole: no selection line, and the report's
    # run.selection was that of the whole suite.
    project.write_tests(SUITE)
    pytester.makeconftest(DESELECTS_BETA)
    result = pytester.runpytest("--callqa-report=report.json", *workers)
    result.stdout.fnmatch_lines([DESELECTED_LINE])
    assert project.report()["run"]["selection"]["deselected_eval_tests"] == 5


def test_a_mark_expression_narrower_than_eval_makes_a_partial_scorecard(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_tests(SUITE.replace('@pytest.mark.callqa(task="qa")',
                                      '@pytest.mark.callqa(task="qa")\n@pytest.mark.slow'))
    (project.root / "pyproject.toml").write_text(
        PYPROJECT + 'markers = ["slow: a slow test"]\n', encoding="utf-8")
    narrowed = pytester.runpytest("-m", "eval and not slow", "--callqa-report=narrowed.json")
    narrowed.stdout.fnmatch_lines(["selection: 2 evaluation tests deselected: the scorecard "
                                   "holds only the results of the selected tests"])
    assert project.report("narrowed.json")["run"]["selection"]["deselected_eval_tests"] == 2
    # -m eval deselects only tests that evaluate nothing: the run is whole, and its report
    # reads as before.
    whole = pytester.runpytest("-m", "eval", "--callqa-report=whole.json")
    assert "selection:" not in whole.stdout.str()
    assert "deselected_eval_tests" not in project.report("whole.json")["run"]["selection"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_shards_own_split_is_no_narrowing_of_the_run(
    project: MiniProject, pytester: pytest.Pytester, workers: list[str]
) -> None:
    project.write_tests(SUITE)
    result = pytester.runpytest("--callqa-shard=1/2", "--callqa-report=shard.json", *workers)
    assert "selection:" not in result.stdout.str()
    report = project.report("shard.json")
    # 6 of the 8 pairs (3 of the 4 cases): the other shard's tests were deselected.
    assert len(report["cases"]) == 6
    assert "deselected_eval_tests" not in report["run"]["selection"]


def test_shards_rerun_with_lf_merge_when_only_one_found_failures_on_record(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: the merge refused them, "run.selection.last_failed differs", though both
    # jobs ran the same command: the job with no failure on record ran its whole shard.
    project.with_pytest_cache()
    project.write_tests(SUITE)
    shards = ("1/2", "2/2")
    # Each CI job has a cache of its own.
    first = {shard: pytester.runpytest(f"--callqa-shard={shard}", "-o",
                                       f"cache_dir=.cache-{shard[0]}")
             for shard in shards}
    # beta's qa-refund fails both its tests, and that pair is in one shard only.
    assert sorted(r.parseoutcomes().get("failed", 0) for r in first.values()) == [0, 2]
    for shard in shards:
        pytester.runpytest(f"--callqa-shard={shard}", "-o", f"cache_dir=.cache-{shard[0]}",
                           "--lf", f"--callqa-report=shard-{shard[0]}.json")
    selections = [project.report(f"shard-{shard[0]}.json")["run"]["selection"]
                  for shard in shards]
    assert [s["lf"] for s in selections] == [True, True]
    assert sorted(s["last_failed"] for s in selections) == [False, True]
    merged = pytester.run(sys.executable, "-m", "pytest_callqa", "merge", "shard-1.json",
                          "shard-2.json", "--report", "merged.json")
    assert merged.ret == 0, merged.stderr.str()
    merged.stdout.fnmatch_lines(["selection: --lf*: the scorecard holds only the results of "
                                 "the selected tests"])
    merged_report = project.report("merged.json")
    assert merged_report["run"]["selection"]["last_failed"] is True
    # The whole shard of the job with no failure on record, beside the other's rerun pair.
    assert sorted(len(project.report(f"shard-{shard[0]}.json")["cases"])
                  for shard in shards) == [1, 2]
    assert len(merged_report["cases"]) == 3


def test_a_stepwise_resume_makes_a_partial_scorecard(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: 7 passed, 99 deselected, and a scorecard with no word of the deselection.
    project.with_pytest_cache()
    project.write_tests(SUITE)
    first = pytester.runpytest("--sw")
    first.assert_outcomes(passed=5, failed=1)
    resumed = pytester.runpytest("--sw", "--callqa-report=report.json")
    resumed.stdout.fnmatch_lines(["selection: 5 evaluation tests deselected: the scorecard "
                                  "holds only the results of the selected tests"])
    assert project.report()["run"]["selection"]["deselected_eval_tests"] == 5


def test_dist_each_stopped_by_x_says_its_scorecard_is_partial(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before, each worker's finished tests were added up: two workers that each ran more
    # than half of the suite before -x stopped them made a run that looked whole.
    project.write_tests(SUITE)
    result = pytester.runpytest("-x", "--dist", "each", "-n", "2",
                                "--callqa-report=report.json")
    result.stdout.fnmatch_lines(["run stopped early (*): the scorecard holds only the "
                                 "results of the tests that ran before it stopped"])
    assert project.report()["run"]["stopped_early"]
    whole = pytester.runpytest("--dist", "each", "-n", "2", "--callqa-report=whole.json")
    assert "run stopped early" not in whole.stdout.str()
    assert project.report("whole.json")["run"]["stopped_early"] is None


@pytest.mark.parametrize("option", ["--setup-only", "--setup-plan"])
def test_a_run_of_fixtures_alone_writes_no_report_and_no_scorecard(
    project: MiniProject, pytester: pytest.Pytester, option: str
) -> None:
    # Before, --setup-only printed a scorecard of the outputs its fixtures scored and
    # wrote the report (overwriting the last real run's) though no test had run.
    project.write_tests(SUITE)
    result = pytester.runpytest(option, "--callqa-report=report.json")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert "callqa scorecard" not in out
    assert not (project.root / "report.json").exists()
    said = "callqa: no scorecard and no report: --setup-only ran the tests' fixtures"
    # --setup-plan runs no fixture either: nothing was evaluated, nothing to say.
    assert (said in out) == (option == "--setup-only")


def test_the_example_conftest_loads_with_the_plugin_switched_off(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before: INTERNALERROR, unknown hook 'pytest_callqa_register_metrics', exit 3.
    pytester.makeconftest(EXAMPLE_CONFTEST.read_text(encoding="utf-8"))
    project.write_tests("def test_unit():\n    assert True\n", name="test_unit")
    off = pytester.runpytest("-p", "no:callqa", "-W", "ignore::pytest.PytestConfigWarning")
    off.assert_outcomes(passed=1)
    # With the plugin, the hook still registers the example's metric.
    on = pytester.runpytest("--callqa-metrics")
    on.stdout.fnmatch_lines(["*summary_has_no_contact_details*"])



def test_a_test_whose_worker_dies_is_counted_as_an_error_not_a_failure(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before, the terminal showed and counted it as FAILED (1 failed, 8 passed): a failure
    # of the model, which the worker's death is not.
    import xml.etree.ElementTree as ET  # only this test reads the JUnit file

    project.write_tests(CRASHING_SUITE)
    result = pytester.runpytest("-n", "2", "--junitxml=junit.xml")
    result.assert_outcomes(passed=8, errors=1)
    result.stdout.fnmatch_lines(["ERROR test_eval.py::test_scored?beta-qa-refund?*"])
    suite = ET.parse(project.root / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures")) == ("1", "0")

"""What the tool's failures become beside other pytest plugins: work a per-test time limit
interrupts (pytest-timeout raises pytest's ``Failed`` wherever the test is), a tool failure
in a test marked ``xfail``, a failed test run again (pytest-rerunfailures), and
``--setup-plan``. None of those plugins is needed: each condition is made with plain pytest
(a hook that raises ``Failed`` as the time limit would, a rerun plugin written the way
pytest-rerunfailures is)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from .conftest import LLMProject, MiniProject

TIMEOUT = "Timeout (>1.0s) from pytest-timeout."

# beta's qa-refund takes longer to generate than a test may take: the time limit stops it
# there, each time it is asked for (pytest-timeout's signal method raises pytest's Failed in
# the middle of whatever the test was doing).
TIMES_OUT_GENERATING = f"""
import pytest

def pytest_callqa_generate(model, case, config):
    if (model, case.id) == ("beta", "qa-refund"):
        pytest.fail({TIMEOUT!r})
    return None  # the recorded output
"""
TWO_TESTS_A_PAIR = """
def test_scored(callqa_result):
    pass

def test_scored_again(callqa_result):
    pass
"""


@pytest.mark.parametrize(("workers", "errors"), [([], 3), (["-n", "2"], 2)],
                         ids=["one-process", "xdist"])
def test_a_pair_whose_generation_a_time_limit_interrupts_is_listed_not_evaluated(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str],
        errors: int) -> None:
    # Before, in one process, the interruption left the batch of outputs half done and
    # stored nothing for its pair: every later test started the batch again and was stopped
    # again (14 errors of 16 tests, 2 outputs scored). Under xdist the pair's two tests
    # errored and the pair was gone: 7 outputs scored, not_evaluated empty, no header line.
    pytester.makeconftest(TIMES_OUT_GENERATING)
    project.write_tests(TWO_TESTS_A_PAIR)
    result = pytester.runpytest("--callqa-report=report.json", *workers)
    # (In one process the first test, whose batch reached beta's qa-refund, errors too; its
    # pair is scored by its other test.)
    result.assert_outcomes(passed=16 - errors, errors=errors)
    result.stdout.fnmatch_lines(["results: 7 outputs scored (2 models, 4 cases)",
                                 "test errors, not evaluated: beta: qa-refund"])
    [entry] = project.report()["not_evaluated"]
    assert (entry["kind"], entry["model"], entry["case_id"]) == ("test_error", "beta",
                                                                 "qa-refund")
    assert entry["reason"] == ("callqa: the evaluation of model 'beta' on case 'qa-refund' "
                               f"was interrupted (Failed: {TIMEOUT})")


SKIPS_GENERATING = """
import pytest

def pytest_callqa_generate(model, case, config):
    if (model, case.id) == ("beta", "qa-refund"):
        pytest.skip("no key for beta's endpoint")
    return None
"""


def test_a_pair_a_generate_hook_skips_is_skipped_in_every_test_of_it(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # Kept as it was: the skip a hook raises is the project's word, not an interruption of
    # the tool (a test of the pair after the first is skipped from what the pair kept).
    pytester.makeconftest(SKIPS_GENERATING)
    project.write_tests(TWO_TESTS_A_PAIR)
    result = pytester.runpytest("--callqa-report=report.json", "-n", "1", "-rs")
    result.assert_outcomes(passed=14, skipped=2)
    assert result.stdout.str().count("no key for beta's endpoint") == 2
    assert project.report()["not_evaluated"] == []


# Every run of the LLM judge is scored on its own; scoring run 2 is where the time runs out.
TIMES_OUT_SCORING_RUN_2 = f"""
import pytest
from pytest_callqa import Bands, MetricSpec

def pytest_callqa_register_metrics(registry, config):
    spec = MetricSpec(id="scored_in_time", task="qa", name="Scored In Time",
                      description="1, unless the time runs out.", scale="0/1",
                      threshold="= 1", bands=Bands(good=1.0))

    def compute(case, output, result):
        if result.run == 1:
            pytest.fail({TIMEOUT!r})
        return 1.0

    registry.register_metric(spec, compute)
"""
RUNS_SUITE = """
import pytest

@pytest.mark.callqa(task="qa")
def test_valid(callqa_result):
    assert callqa_result.valid

@pytest.mark.callqa(task="qa")
def test_valid_again(callqa_result):
    assert callqa_result.valid
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_run_whose_scoring_a_time_limit_interrupts_is_an_error_not_a_failure(
        llm: LLMProject, pytester: pytest.Pytester, workers: list[str]) -> None:
    # Before: both tests FAILED — the model's failure — and their runs record was lost.
    pytester.makeconftest(TIMES_OUT_SCORING_RUN_2)
    llm.ini('callqa_models = ["alpha"]\ncallqa_benchmarks = false\n')
    llm.project.write_tests(RUNS_SUITE)
    result = pytester.runpytest("--callqa-runs", "2", "-rE", *workers)
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert f"Failed: {TIMEOUT}" in out  # the test that was interrupted says what did it
    if not workers:
        # The pair's other test, in the same process, reports the interruption kept for
        # the run rather than start the scoring again.
        assert ("callqa: the evaluation of model 'alpha' on case 'qa-refund' was "
                f"interrupted (Failed: {TIMEOUT})") in out
    result.stdout.fnmatch_lines(["no run of 2 has a known outcome (run 1 unknown*"])


XFAIL_SUITE = """
import pytest
from pytest_callqa import assert_metric, assert_qa_score

@pytest.mark.xfail(reason="known weak")
@pytest.mark.callqa(task="qa")
def test_custom(callqa_result):
    assert_metric(callqa_result, "raises", min=1)

@pytest.mark.xfail(reason="known weak")
@pytest.mark.callqa(task="qa")
def test_qa(callqa_result):
    assert_qa_score(callqa_result, min_score=0.9)

@pytest.mark.xfail(reason="known weak")
@pytest.mark.callqa(task="entity")
def test_output(callqa_output):
    pass
"""
# A custom metric whose code raises (an error of the evaluation, in the test's call), and a
# generated output that cannot be used (an error of its setup).
BROKEN_TOOLS = """
from pytest_callqa import Bands, MetricSpec

def pytest_callqa_register_metrics(registry, config):
    spec = MetricSpec(id="raises", task="qa", name="Raises", description="Raises.",
                      scale="0/1", threshold="= 1", bands=Bands(good=1.0))

    def compute(case, output, result):
        raise RuntimeError("the metric's code is broken")

    registry.register_metric(spec, compute)

def pytest_callqa_generate(model, case, config):
    if (model, case.id) == ("alpha", "entity-transfer"):
        return {"not", "json"}
    return None
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_tool_failure_in_an_xfail_test_is_an_error_not_an_expected_failure(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str]) -> None:
    # Before: 4 xfailed (the two custom-metric errors, the unusable output and beta's QA
    # bar), exit 0.
    pytester.makeconftest(BROKEN_TOOLS)
    project.write_tests(XFAIL_SUITE)
    result = pytester.runpytest("--junitxml=junit.xml", "-rxXE", *workers)
    # beta failing the QA bar is the model's failure the marker expects; alpha passes it.
    result.assert_outcomes(errors=3, xfailed=1, xpassed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random([
        "ERROR test_eval.py::test_custom?alpha-qa-refund? - *",
        "ERROR test_eval.py::test_custom?beta-qa-refund? - *",
        "ERROR test_eval.py::test_output?alpha-entity-transfer? - Failed: the output *",
        "XFAIL test_eval.py::test_qa?beta-qa-refund? - known weak"])
    suite = ET.parse(project.root / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures")) == ("3", "0")


# Runs a failed test again, up to three attempts in all, the way pytest-rerunfailures does:
# inside its pytest_runtest_protocol, each attempt's failures logged as "rerun" but the last.
RERUN_PLUGIN = """
from _pytest.runner import runtestprotocol

ATTEMPTS = 3

def pytest_runtest_protocol(item, nextitem):
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(1, ATTEMPTS + 1):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        again = attempt < ATTEMPTS and any(report.failed for report in reports)
        for report in reports:
            if again and report.failed:
                report.outcome = "rerun"
            item.ihook.pytest_runtest_logreport(report=report)
        if not again:
            break
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True

def pytest_report_teststatus(report):
    if report.outcome == "rerun":
        return "rerun", "R", "RERUN"
"""
QA_BAR = """
import pytest
from pytest_callqa import assert_qa_score

@pytest.mark.callqa(task="qa")
def test_qa(callqa_result):
    assert_qa_score(callqa_result, min_score=0.9)
"""


@pytest.mark.parametrize("runs", ["1", "2"])
def test_each_attempt_of_a_rerun_test_carries_its_properties_once(
        project: MiniProject, pytester: pytest.Pytester, runs: str) -> None:
    # Before: the three <testcase> of beta's attempts carried each property 1, 2 and 3 times.
    pytester.makeconftest(RERUN_PLUGIN)
    project.write_tests(QA_BAR)
    result = pytester.runpytest("--junitxml=junit.xml", "--callqa-runs", runs)
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "rerun": 2}
    attempts = [case for case in ET.parse(project.root / "junit.xml").iter("testcase")
                if case.get("name") == "test_qa[beta-qa-refund]"]
    assert len(attempts) == 3
    for attempt in attempts:
        names = Counter(prop.get("name") for prop in attempt.iter("property"))
        assert names["callqa.score"] == 1
        assert max(names.values()) == 1, names
        assert names["callqa_runs"] == (1 if runs == "2" else 0)


COUNTS_GENERATIONS = """
def pytest_callqa_generate(model, case, config):
    with open("generated.txt", "a", encoding="utf-8") as notes:
        notes.write(f"{model}-{case.id}\\n")
    return None  # the recorded output
"""
FAILS_FOR_BETA = """
import pytest

@pytest.mark.callqa(task="qa")
def test_first(callqa_result):
    assert callqa_result.model != "beta"

@pytest.mark.callqa(task="qa")
def test_second(callqa_result):
    pass
"""


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_a_rerun_test_keeps_its_pair_until_its_last_attempt(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str]) -> None:
    # Before: each attempt's teardown released the pair, so after two attempts of
    # test_first[beta] its two users were spent and the pair was forgotten, then produced
    # and scored again for the third attempt.
    pytester.makeconftest(RERUN_PLUGIN + COUNTS_GENERATIONS)
    project.write_tests(FAILS_FOR_BETA)
    result = pytester.runpytest(*workers)
    assert result.parseoutcomes() == {"passed": 3, "failed": 1, "rerun": 2}
    generated = (project.root / "generated.txt").read_text(encoding="utf-8").split()
    assert Counter(generated) == {"alpha-qa-refund": 1, "beta-qa-refund": 1}


def test_setup_plan_sends_no_judge_request(llm: LLMProject,
                                           pytester: pytest.Pytester) -> None:
    # Before: the whole up-front judge batch went out, though no fixture runs.
    llm.project.write_tests(RUNS_SUITE)
    result = pytester.runpytest("--setup-plan")
    assert result.ret == pytest.ExitCode.OK
    assert llm.server.requests == 0
